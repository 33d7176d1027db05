"""The HTTP API of `sundial:api=http`: the REST API's routes, IAM (SigV4) authorised, throttled,
logged, proxied with the REST event's shape, at under a third of the REST API's price a request.

What it gives up against the REST API (docs/design.md, "Cost"): the gateway's own refusals (a bad
signature, a throttle, a body over its limit) are its own `{"message": ...}` JSON rather than
problem details; every body reaches the function, which refuses a bad one with the same 400 but
after the invocation is paid; the gateway does not trace with X-Ray; and no WAF web ACL attaches.
"""

from __future__ import annotations

import json

import jsii
from aws_cdk import Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.api import API_DESCRIPTION, ROUTES, ApiMetrics, access_log_group
from infra.settings import Settings

# The stage an HTTP API serves at its root: no stage name in its URL or in the function's paths.
DEFAULT_STAGE = "$default"
# The REST stage's access log fields, where an HTTP API has them. It has no resource path: the route
# key ("GET /jobs/{id}") says the same. Nor has it execution logs: what the gateway and the
# integration said of a failure goes here instead.
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "user": "$context.identity.user",
    "caller": "$context.identity.caller",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "error": "$context.error.message",
    "integrationError": "$context.integrationErrorMessage",
}


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogs:
    def __init__(self, group: logs.ILogGroup) -> None:
        self._destination = apigwv2.LogGroupLogDestination(group)

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw.AccessLogFormat:
        return apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS, separators=(",", ":")))


class HttpJobsApi(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, handler: lambda_.IFunction, settings: Settings
    ) -> None:
        super().__init__(scope, construct_id)
        access_logs = access_log_group(self)
        self.http_api = apigwv2.HttpApi(
            self,
            "Api",
            # After the stack, so that each stage's API is told apart in the console.
            api_name=Stack.of(self).stack_name,
            description=API_DESCRIPTION,
            # The default stage CDK would make takes neither throttling nor access logs.
            create_default_stage=False,
            default_authorizer=authorizers.HttpIamAuthorizer(),
        )
        self.stage = apigwv2.HttpStage(
            self,
            "Stage",
            http_api=self.http_api,
            stage_name=DEFAULT_STAGE,
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(
                rate_limit=settings.api_rate_limit, burst_limit=settings.api_burst_limit
            ),
            access_log_settings=_AccessLogs(access_logs),
        )
        self._add_routes(handler)

    @property
    def url(self) -> str:
        """The base URL the client and the CLI join paths to (it ends in a slash, as the REST one)."""
        return self.stage.url

    @property
    def metrics(self) -> ApiMetrics:
        # The stage's series (ApiId and Stage), as CloudWatch publishes them for an HTTP API.
        return self.stage

    def _add_routes(self, handler: lambda_.IFunction) -> None:
        integration = integrations.HttpLambdaIntegration(
            "Function",
            handler,
            # The REST proxy event's shape, which the function's resolver reads.
            payload_format_version=apigwv2.PayloadFormatVersion.VERSION_1_0,
            # Every route of this API goes to this one function and the API has no catch-all route,
            # so one permission for the API allows what one a route would, in one statement of the
            # function's policy rather than one a route.
            scope_permission_to_route=False,
        )
        # Declared routes only, no `$default` one: an unknown path never reaches the function.
        for path, methods in ROUTES.items():
            self.http_api.add_routes(
                path=path, methods=[apigwv2.HttpMethod(method) for method in methods], integration=integration
            )
