"""`sundial:api=http`: the same routes on an HTTP API, IAM authorised, proxied with payload format
1.0, throttled and logged; the dashboard reads its metrics; the default stays the REST API."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.api import ROUTES
from infra.http_api import DEFAULT_STAGE
from sundial.client.signing import execute_api_region
from tests.infra.conftest import Synthesised
from tests.infra.policies import REGION, Resolver
from tests.infra.test_checks import ACKNOWLEDGED

pytestmark = pytest.mark.infra

ROUTE_KEYS = {f"{method} {path}" for path, methods in ROUTES.items() for method in methods}


def _one(stack: Synthesised, resource_type: str) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = stack.of_type(resource_type).items()
    return logical_id, resource


def _api_function(stack: Synthesised) -> str:
    (found,) = (
        k
        for k, f in stack.of_type("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == "sundial.functions.api.handler"
    )
    return found


def test_the_default_is_the_rest_api_and_http_replaces_it(
    synthesised: Synthesised, http_api: Synthesised
) -> None:
    assert synthesised.of_type("AWS::ApiGateway::RestApi")
    assert not synthesised.of_type("AWS::ApiGatewayV2::Api")
    assert not [r for r in http_api.resources.values() if r["Type"].startswith("AWS::ApiGateway::")]
    _, api = _one(http_api, "AWS::ApiGatewayV2::Api")
    assert api["Properties"]["ProtocolType"] == "HTTP"
    assert api["Properties"]["Name"] == http_api.stack_name


def test_every_route_of_api_md_and_no_other_requires_iam(http_api: Synthesised) -> None:
    routes = [r["Properties"] for r in http_api.of_type("AWS::ApiGatewayV2::Route").values()]
    keys = [route["RouteKey"] for route in routes]
    # Declared routes only: no `$default` catch-all, so an unknown path never reaches the function.
    assert sorted(keys) == sorted(ROUTE_KEYS)
    for route in routes:
        assert route["AuthorizationType"] == "AWS_IAM", route["RouteKey"]


def test_every_route_proxies_to_the_api_function_with_the_rest_event(http_api: Synthesised) -> None:
    integration_id, integration = _one(http_api, "AWS::ApiGatewayV2::Integration")
    properties = integration["Properties"]
    assert properties["IntegrationType"] == "AWS_PROXY"
    # 1.0: the REST proxy event the function's resolver reads (tests/functions/test_http_api_events.py).
    assert properties["PayloadFormatVersion"] == "1.0"
    assert properties["IntegrationUri"] == {"Fn::GetAtt": [_api_function(http_api), "Arn"]}
    for route in http_api.of_type("AWS::ApiGatewayV2::Route").values():
        assert route["Properties"]["Target"] == {"Fn::Join": ["", ["integrations/", {"Ref": integration_id}]]}


def test_the_default_stage_is_throttled_by_the_api_settings(
    http_api: Synthesised, http_configured: Synthesised
) -> None:
    api_id, _ = _one(http_api, "AWS::ApiGatewayV2::Api")
    _, stage = _one(http_api, "AWS::ApiGatewayV2::Stage")
    properties = stage["Properties"]
    assert (properties["StageName"], properties["AutoDeploy"], properties["ApiId"]) == (
        DEFAULT_STAGE,
        True,
        {"Ref": api_id},
    )
    assert properties["DefaultRouteSettings"] == {"ThrottlingRateLimit": 100, "ThrottlingBurstLimit": 200}
    _, configured = _one(http_configured, "AWS::ApiGatewayV2::Stage")
    assert configured["Properties"]["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": 40,
        "ThrottlingBurstLimit": 60,
    }


def test_access_logs_are_json_with_the_rest_fields_to_a_group_kept_as_the_rest_one(
    synthesised: Synthesised, http_api: Synthesised
) -> None:
    _, stage = _one(http_api, "AWS::ApiGatewayV2::Stage")
    access = stage["Properties"]["AccessLogSettings"]
    group_id, _ = access["DestinationArn"]["Fn::GetAtt"]
    group = http_api.resources[group_id]
    (rest_stage,) = synthesised.of_type("AWS::ApiGateway::Stage").values()
    rest_access = rest_stage["Properties"]["AccessLogSetting"]
    rest_group = synthesised.resources[rest_access["DestinationArn"]["Fn::Join"][1][-1]["Ref"]]
    assert group["Properties"] == rest_group["Properties"]
    assert group["Properties"]["RetentionInDays"] > 0
    kept = ("DeletionPolicy", "UpdateReplacePolicy")
    assert {k: group[k] for k in kept} == {k: rest_group[k] for k in kept}

    fields = json.loads(access["Format"])
    rest_fields = json.loads(rest_access["Format"])
    # An HTTP API has no resource path; its route key stands in.
    assert set(rest_fields) - {"resourcePath"} < set(fields)
    assert fields["routeKey"] == "$context.routeKey"
    assert {name: fields[name] for name in rest_fields if name in fields} == {
        name: value for name, value in rest_fields.items() if name != "resourcePath"
    }


def test_the_api_url_is_the_default_stage_s_root_which_the_client_signs(http_api: Synthesised) -> None:
    url = Resolver(http_api.resources, {}).resolve(http_api.template.to_json()["Outputs"]["ApiUrl"]["Value"])
    api_id, _ = _one(http_api, "AWS::ApiGatewayV2::Api")
    # No stage in the path: the client joins "/jobs" to it (after its trailing slash is taken off).
    assert url == f"https://{api_id.lower()}.execute-api.{REGION}.amazonaws.com/"
    assert execute_api_region(url) == REGION


def test_api_gateway_may_invoke_the_function_from_this_api_alone(http_api: Synthesised) -> None:
    api_id, _ = _one(http_api, "AWS::ApiGatewayV2::Api")
    (permission,) = (
        p["Properties"]
        for p in http_api.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "apigateway.amazonaws.com"
    )
    assert permission["FunctionName"] == {"Fn::GetAtt": [_api_function(http_api), "Arn"]}
    source = Resolver(http_api.resources, {}).resolve(permission["SourceArn"])
    assert source == f"arn:aws:execute-api:{REGION}:123456789012:{api_id.lower()}/*/*/*"


def test_the_dashboard_graphs_the_http_api_s_own_metrics(http_api: Synthesised) -> None:
    api_id, _ = _one(http_api, "AWS::ApiGatewayV2::Api")
    (dashboard,) = http_api.of_type("AWS::CloudWatch::Dashboard").values()
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = json.loads("".join(part if isinstance(part, str) else f"<{part.get('Ref')}>" for part in parts))
    (graph,) = (w for w in body["widgets"] if w["properties"].get("title") == "API requests")
    metrics = graph["properties"]["metrics"]
    assert [metric[:2] for metric in metrics] == [
        ["AWS/ApiGateway", "4xx"],
        ["AWS/ApiGateway", "5xx"],
        ["AWS/ApiGateway", "Count"],
    ]
    for metric in metrics:
        dimensions = dict(zip(metric[2:-1:2], metric[3:-1:2], strict=True))
        assert dimensions == {"ApiId": f"<{api_id}>", "Stage": DEFAULT_STAGE}
        assert metric[-1]["stat"] == "Sum"


def test_the_alarms_are_those_of_the_rest_stage(synthesised: Synthesised, http_api: Synthesised) -> None:
    def described(stack: Synthesised) -> set[str]:
        return {a["Properties"]["AlarmDescription"] for a in stack.of_type("AWS::CloudWatch::Alarm").values()}

    assert described(http_api) == described(synthesised)


def test_aws_solutions_checks_pass_with_nothing_acknowledged_for_the_http_api(http_api: Synthesised) -> None:
    report = http_api.outdir / "validation-report.json"
    if report.exists():
        for plugin in json.loads(report.read_text())["pluginReports"]:
            assert plugin["conclusion"] == "success", plugin["violations"]
    for resource in http_api.resources.values():
        rules = resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
        if resource["Type"].startswith("AWS::ApiGatewayV2::"):
            assert rules == [], resource["Type"]
        assert {rule["id"].split("[")[0] for rule in rules} <= ACKNOWLEDGED
