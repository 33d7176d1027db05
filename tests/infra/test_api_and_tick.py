"""The REST API (IAM on every method, throttled, logged, validated) and the scheduler's tick."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.api import JSON_BODY_METHODS, ROUTES, STAGE_NAME
from tests.infra.conftest import Synthesised

pytestmark = pytest.mark.infra


def _paths(synthesised: Synthesised) -> dict[str, str]:
    """Resource logical id -> full path, rebuilt from the parent links."""
    resources = synthesised.of_type("AWS::ApiGateway::Resource")
    paths: dict[str, str] = {}

    def path_of(logical_id: str) -> str:
        if logical_id not in paths:
            properties = resources[logical_id]["Properties"]
            parent = properties["ParentId"]
            prefix = path_of(parent["Ref"]) if "Ref" in parent else ""
            paths[logical_id] = f"{prefix}/{properties['PathPart']}"
        return paths[logical_id]

    for logical_id in resources:
        path_of(logical_id)
    return paths


def _methods(synthesised: Synthesised) -> dict[tuple[str, str], dict[str, Any]]:
    paths = _paths(synthesised)
    methods = {}
    for method in synthesised.of_type("AWS::ApiGateway::Method").values():
        properties = method["Properties"]
        resource = properties["ResourceId"]
        path = paths[resource["Ref"]] if "Ref" in resource else "/"
        methods[(path, properties["HttpMethod"])] = properties
    return methods


def test_the_api_serves_every_route_of_api_md(synthesised: Synthesised) -> None:
    expected = {(path, method) for path, methods in ROUTES.items() for method in methods}
    assert set(_methods(synthesised)) == expected


def test_every_operation_of_the_openapi_document_has_its_route_at_the_gateway() -> None:
    """The gateway passes on only the routes it declares: one missing is a 403 for every caller."""
    from sundial.functions.api import app  # the api's own document, not a copy

    document = json.loads(app.get_openapi_json_schema())
    declared = {
        (re.sub(r"\{[^}]+\}", "{}", path), method) for path, methods in ROUTES.items() for method in methods
    }
    served = {
        (re.sub(r"\{[^}]+\}", "{}", path), method.upper())
        for path, operations in document["paths"].items()
        for method in operations
    }
    assert served - declared == set()


def test_every_method_requires_iam_authorisation(synthesised: Synthesised) -> None:
    for route, properties in _methods(synthesised).items():
        assert properties["AuthorizationType"] == "AWS_IAM", route


def test_every_method_proxies_to_the_api_function(synthesised: Synthesised) -> None:
    (api_id,) = (
        k
        for k, f in synthesised.of_type("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == "sundial.functions.api.handler"
    )
    for route, properties in _methods(synthesised).items():
        integration = properties["Integration"]
        assert integration["Type"] == "AWS_PROXY", route
        assert api_id in str(integration["Uri"]), route


def test_write_bodies_are_validated_as_json_objects(synthesised: Synthesised) -> None:
    (validator_id,) = synthesised.of_type("AWS::ApiGateway::RequestValidator")
    synthesised.template.has_resource_properties(
        "AWS::ApiGateway::RequestValidator", {"ValidateRequestBody": True, "ValidateRequestParameters": True}
    )
    (model,) = synthesised.of_type("AWS::ApiGateway::Model").values()
    assert model["Properties"]["Schema"]["type"] == "object"
    for route, properties in _methods(synthesised).items():
        assert properties["RequestValidatorId"] == {"Ref": validator_id}
        assert ("RequestModels" in properties) is (route in JSON_BODY_METHODS), route


def test_a_rejected_body_answers_in_the_api_error_shape(synthesised: Synthesised) -> None:
    synthesised.template.has_resource_properties(
        "AWS::ApiGateway::GatewayResponse",
        {
            "ResponseType": "BAD_REQUEST_BODY",
            "ResponseTemplates": {"application/json": Match.string_like_regexp('"message".*"field"')},
        },
    )


# What API Gateway substitutes into a gateway response's template (its error message, quoted).
_GATEWAY_VARIABLES = {
    "$context.error.messageString": '"Missing Authentication Token"',
    "$context.error.responseType": "X",
}


def _rendered(template: str) -> dict[str, Any]:
    for variable, value in _GATEWAY_VARIABLES.items():
        template = template.replace(variable, value)
    rendered: dict[str, Any] = json.loads(template)
    return rendered


def test_every_answer_the_gateway_gives_itself_is_problem_details(synthesised: Synthesised) -> None:
    responses = {
        properties["Properties"]["ResponseType"]: properties["Properties"]
        for properties in synthesised.of_type("AWS::ApiGateway::GatewayResponse").values()
    }
    # The ones a SigV4 API without a custom authoriser, API keys or WAF rules can give, and the
    # two defaults that stand for the rest.
    assert {
        "ACCESS_DENIED",
        "MISSING_AUTHENTICATION_TOKEN",
        "INVALID_SIGNATURE",
        "EXPIRED_TOKEN",
        "THROTTLED",
        "QUOTA_EXCEEDED",
        "REQUEST_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "BAD_REQUEST_BODY",
        "BAD_REQUEST_PARAMETERS",
        "INTEGRATION_TIMEOUT",
        "INTEGRATION_FAILURE",
        "DEFAULT_4XX",
        "DEFAULT_5XX",
    } <= set(responses)
    for response_type, properties in responses.items():
        assert properties["ResponseParameters"] == {
            "gatewayresponse.header.Content-Type": "'application/problem+json'"
        }, response_type
        body = _rendered(properties["ResponseTemplates"]["application/json"])
        assert body["type"] == "about:blank", response_type
        assert body["detail"] == body["message"] and body["message"], response_type
        assert body["title"], response_type
        assert ("status" in body) is not response_type.startswith("DEFAULT_"), response_type


def test_the_gateway_s_own_refusal_carries_its_message_and_status(synthesised: Synthesised) -> None:
    (unsigned,) = (
        properties["Properties"]
        for properties in synthesised.of_type("AWS::ApiGateway::GatewayResponse").values()
        if properties["Properties"]["ResponseType"] == "MISSING_AUTHENTICATION_TOKEN"
    )
    body = _rendered(unsigned["ResponseTemplates"]["application/json"])
    assert body == {
        "type": "about:blank",
        "title": "Forbidden",
        "status": 403,
        "detail": "Missing Authentication Token",
        "message": "Missing Authentication Token",
        "field": None,
    }


def test_stage_throttles_logs_and_traces(synthesised: Synthesised) -> None:
    (stage,) = synthesised.of_type("AWS::ApiGateway::Stage").values()
    properties = stage["Properties"]
    (settings,) = properties["MethodSettings"]
    assert settings["ThrottlingRateLimit"] > 0
    assert settings["ThrottlingBurstLimit"] >= settings["ThrottlingRateLimit"]
    assert settings["LoggingLevel"] in {"ERROR", "INFO"}
    assert settings["DataTraceEnabled"] is False
    assert properties["TracingEnabled"] is True
    access = properties["AccessLogSetting"]
    assert "ApiAccessLogs" in str(access["DestinationArn"])
    assert "$context.identity.caller" in access["Format"]
    synthesised.template.resource_count_is("AWS::ApiGateway::Account", 1)


def test_the_tick_runs_the_scheduler_every_minute(synthesised: Synthesised) -> None:
    (scheduler_id,) = (
        k
        for k, f in synthesised.of_type("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == "sundial.functions.scheduler.handler"
    )
    synthesised.template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 minute)",
            "State": "ENABLED",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [scheduler_id, "Arn"]}})],
        },
    )
    synthesised.template.has_resource_properties(
        "AWS::Lambda::Permission",
        {"FunctionName": {"Fn::GetAtt": [scheduler_id, "Arn"]}, "Principal": "events.amazonaws.com"},
    )


def test_execution_logs_go_to_a_group_of_the_stack_with_retention(synthesised: Synthesised) -> None:
    # API Gateway would otherwise create API-Gateway-Execution-Logs_<api>/<stage> itself, unretained.
    (api_id,) = synthesised.of_type("AWS::ApiGateway::RestApi")
    (stage_id,) = synthesised.of_type("AWS::ApiGateway::Stage")
    groups = {
        k: g["Properties"]
        for k, g in synthesised.of_type("AWS::Logs::LogGroup").items()
        if "API-Gateway-Execution-Logs_" in json.dumps(g["Properties"].get("LogGroupName"))
    }
    ((group_id, group),) = groups.items()
    assert group["LogGroupName"] == {
        "Fn::Join": ["", ["API-Gateway-Execution-Logs_", {"Ref": api_id}, f"/{STAGE_NAME}"]]
    }
    assert group["RetentionInDays"] > 0
    # The stage waits for the group, so API Gateway never makes it first.
    assert group_id in synthesised.resources[stage_id].get("DependsOn", [])


def test_the_api_is_named_after_its_stack(synthesised: Synthesised, configured: Synthesised) -> None:
    for stack in (synthesised, configured):
        (api,) = stack.of_type("AWS::ApiGateway::RestApi").values()
        assert api["Properties"]["Name"] == stack.stack_name


def test_a_deploy_without_a_terminal_asks_for_no_approval() -> None:
    # The CLI stops at a broadening change it cannot ask about; make deploy in CI must not stop.
    root = Path(__file__).resolve().parents[2]
    shown = subprocess.run(
        ["make", "-n", "deploy", "CDK_ARGS=-c sundial:stage=ci"],
        cwd=root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (deploy,) = [line for line in shown.splitlines() if "cdk deploy" in line]
    assert "--require-approval never" in deploy
