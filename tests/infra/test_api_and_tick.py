"""The REST API (IAM on every method, throttled, logged, validated) and the scheduler's tick."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.api import JSON_BODY_METHODS, ROUTES
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


def test_every_method_requires_iam_authorisation(synthesised: Synthesised) -> None:
    for route, properties in _methods(synthesised).items():
        assert properties["AuthorizationType"] == "AWS_IAM", route


def test_every_method_proxies_to_the_api_function(synthesised: Synthesised) -> None:
    (api_id,) = (
        k
        for k, f in synthesised.of_type("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == "functions.api.handler"
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
        if f["Properties"]["Handler"] == "functions.scheduler.handler"
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
