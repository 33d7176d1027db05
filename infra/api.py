"""The REST API: every route of docs/api.md, IAM (SigV4) authorised, throttled, logged, proxied."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Protocol

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.functions import LOG_REMOVAL_POLICY, LOG_RETENTION
from infra.nag import acknowledge
from infra.settings import Settings

STAGE_NAME = "v1"
# docs/api.md's routes. Declaring them (rather than one catch-all proxy) lets the gateway reject
# malformed bodies before an invocation is paid for, and unknown paths never reach the function.
ROUTES: Mapping[str, tuple[str, ...]] = {
    "/jobs": ("GET", "POST"),
    "/jobs/batch": ("POST",),
    "/jobs/actions": ("POST",),
    "/jobs/actions/{id}": ("GET",),
    "/jobs/{id}": ("GET", "PATCH", "DELETE"),
    "/jobs/{id}/pause": ("POST",),
    "/jobs/{id}/resume": ("POST",),
    "/jobs/{id}/trigger": ("POST",),
    "/jobs/{id}/retry": ("POST",),
    "/jobs/{id}/runs": ("GET",),
    "/jobs/{id}/occurrences": ("GET",),
    "/jobs/{id}/backfill": ("POST",),
    "/limits": ("GET",),
    # Greedy: a limit key may hold slashes.
    "/limits/{key+}": ("GET", "PUT", "DELETE"),
    "/schedules/preview": ("POST",),
    "/stats": ("GET",),
    "/health": ("GET",),
    "/openapi.json": ("GET",),
    "/docs": ("GET",),
}
# Methods whose body must be a JSON object. Only its shape is checked here: the function validates
# the fields and says which one is at fault, so the two can never disagree about a field.
JSON_BODY_METHODS = frozenset(
    {
        ("/jobs", "POST"),
        ("/jobs/batch", "POST"),
        ("/jobs/actions", "POST"),
        ("/jobs/{id}", "PATCH"),
        ("/jobs/{id}/backfill", "POST"),
        ("/limits/{key+}", "PUT"),
        ("/schedules/preview", "POST"),
    }
)


PROBLEM_JSON = "application/problem+json"
# The answers API Gateway gives itself, with the status each has unless it is changed (AWS: "Gateway
# response types for API Gateway"). The two defaults stand for any type not named here: their status
# is not known to a template, so their body leaves it out.
GATEWAY_STATUSES: dict[apigw.ResponseType, int | None] = {
    apigw.ResponseType.ACCESS_DENIED: 403,
    apigw.ResponseType.API_CONFIGURATION_ERROR: 500,
    apigw.ResponseType.BAD_REQUEST_PARAMETERS: 400,
    apigw.ResponseType.EXPIRED_TOKEN: 403,
    apigw.ResponseType.INTEGRATION_FAILURE: 504,
    apigw.ResponseType.INTEGRATION_TIMEOUT: 504,
    apigw.ResponseType.INVALID_SIGNATURE: 403,
    apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN: 403,
    apigw.ResponseType.QUOTA_EXCEEDED: 429,
    apigw.ResponseType.REQUEST_TOO_LARGE: 413,
    apigw.ResponseType.RESOURCE_NOT_FOUND: 404,
    apigw.ResponseType.THROTTLED: 429,
    apigw.ResponseType.UNAUTHORIZED: 401,
    apigw.ResponseType.UNSUPPORTED_MEDIA_TYPE: 415,
    apigw.ResponseType.WAF_FILTERED: 403,
    apigw.ResponseType.DEFAULT_4_XX: None,
    apigw.ResponseType.DEFAULT_5_XX: None,
}


class ApiMetrics(Protocol):
    """The gateway's metrics of a stage's API, REST or HTTP, each naming that API alone: what the
    stage's monitoring reads of it."""

    def metric_client_error(self, *, label: str | None = None, statistic: str | None = None) -> cw.Metric: ...

    def metric_server_error(self, *, label: str | None = None, statistic: str | None = None) -> cw.Metric: ...

    def metric_count(self, *, label: str | None = None, statistic: str | None = None) -> cw.Metric: ...


def gateway_problem(status: int | None, message: str | None = None, field: str | None = None) -> str:
    """A mapping template of a problem details body. Without a message of our own it carries
    API Gateway's (`$context.error.messageString` is that message quoted and escaped as JSON)."""
    text = json.dumps(message) if message is not None else "$context.error.messageString"
    members = {
        "type": '"about:blank"',
        "title": json.dumps(HTTPStatus(status).phrase) if status else '"$context.error.responseType"',
        "status": str(status) if status else None,
        "detail": text,
        "message": text,
        "field": json.dumps(field) if field is not None else "null",
    }
    return "{" + ", ".join(f'"{name}": {value}' for name, value in members.items() if value is not None) + "}"


def _construct_id(response_type: apigw.ResponseType) -> str:
    return "Gateway" + "".join(part.title() for part in response_type.response_type.split("_"))


API_DESCRIPTION = "Sundial job scheduler API, version 1 (docs/api.md)"


def access_log_group(api: Construct) -> logs.LogGroup:
    """The group the API's stage writes its access logs to, kept as the functions' logs are."""
    return logs.LogGroup(api, "AccessLogs", retention=LOG_RETENTION, removal_policy=LOG_REMOVAL_POLICY)


class JobsApi(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, handler: lambda_.IFunction, settings: Settings
    ) -> None:
        super().__init__(scope, construct_id)
        access_logs = access_log_group(self)
        self.rest_api = apigw.RestApi(
            self,
            "Api",
            # After the stack, so that each stage's API is told apart in the console.
            rest_api_name=Stack.of(self).stack_name,
            description=API_DESCRIPTION,
            endpoint_types=[apigw.EndpointType.REGIONAL],
            # Access and execution logging need the account-level role that lets API Gateway write logs.
            cloud_watch_role=True,
            # The role is the region's API Gateway account setting, which every REST API in the
            # account (another stage's too) logs through: it stays when a stack is deleted, and goes
            # only with the rollback of the create that made it.
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
            default_method_options=apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM),
            deploy_options=apigw.StageOptions(
                stage_name=STAGE_NAME,
                throttling_rate_limit=settings.api_rate_limit,
                throttling_burst_limit=settings.api_burst_limit,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                # Request and response bodies carry job payloads: keep them out of the logs.
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=True,
            ),
        )
        self._add_routes(apigw.LambdaIntegration(handler, allow_test_invoke=False))
        self._add_error_bodies()
        self._own_execution_logs()
        self._acknowledge()

    @property
    def url(self) -> str:
        """The base URL the client and the CLI join paths to: the stage's, ending in a slash."""
        return self.rest_api.url

    @property
    def metrics(self) -> ApiMetrics:
        return self.rest_api

    def _own_execution_logs(self) -> None:
        """The group API Gateway writes the stage's execution logs to, made here with a retention.

        Left to API Gateway it is created on the first error, without retention, outside the stack.
        The stage waits for it, so API Gateway never creates it first.
        """
        api_id = self.rest_api.rest_api_id
        group = logs.LogGroup(
            self,
            "ExecutionLogs",
            log_group_name=f"API-Gateway-Execution-Logs_{api_id}/{STAGE_NAME}",
            retention=LOG_RETENTION,
            removal_policy=LOG_REMOVAL_POLICY,
        )
        self.rest_api.deployment_stage.node.add_dependency(group)

    def _add_routes(self, integration: apigw.LambdaIntegration) -> None:
        validator = self.rest_api.add_request_validator(
            "Validator", validate_request_body=True, validate_request_parameters=True
        )
        json_object = self.rest_api.add_model(
            "JsonObject",
            content_type="application/json",
            schema=apigw.JsonSchema(
                schema=apigw.JsonSchemaVersion.DRAFT4, title="JsonObject", type=apigw.JsonSchemaType.OBJECT
            ),
        )
        for path, methods in ROUTES.items():
            resource = self.rest_api.root.resource_for_path(path)
            for method in methods:
                has_body = (path, method) in JSON_BODY_METHODS
                added = resource.add_method(
                    method,
                    integration,
                    request_validator=validator,
                    request_models={"application/json": json_object} if has_body else None,
                )
                acknowledge(
                    added,
                    "AwsSolutions-COG4",
                    "docs/api.md specifies IAM (SigV4) authorisation for the deployed API: callers are IAM "
                    "principals (services, CI, operators), and every method requires a signed request.",
                )

    def _add_error_bodies(self) -> None:
        # docs/api.md: every 4xx/5xx answer is problem details with `message`, the gateway's own too.
        for response_type, status in GATEWAY_STATUSES.items():
            self.rest_api.add_gateway_response(
                _construct_id(response_type),
                type=response_type,
                response_headers={"Content-Type": f"'{PROBLEM_JSON}'"},
                templates={"application/json": gateway_problem(status)},
            )
        self.rest_api.add_gateway_response(
            "BadBody",
            type=apigw.ResponseType.BAD_REQUEST_BODY,
            response_headers={"Content-Type": f"'{PROBLEM_JSON}'"},
            templates={
                "application/json": gateway_problem(400, "the request body must be a JSON object", "body")
            },
        )

    def _acknowledge(self) -> None:
        acknowledge(
            self.rest_api.deployment_stage,
            "AwsSolutions-APIG3",
            "Every method requires a SigV4-signed request, so unsigned traffic is refused by API "
            "Gateway before it reaches the function, and the stage is throttled. A WAF web ACL adds "
            "no rule that tells signed callers apart; attach one if the API is exposed to untrusted "
            "principals.",
        )
        acknowledge(
            self.rest_api.node.find_child("CloudWatchRole"),
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]",
            "The account-level role API Gateway uses to write access and execution logs; AWS "
            "maintains this policy for exactly that purpose, and the log group names API Gateway "
            "creates are not known in advance.",
        )
