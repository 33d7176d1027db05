"""The API Lambda: the HTTP API v1 (docs/api.md) behind API Gateway REST proxy events."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions import api_errors, api_stats, clients
from shared import constants as c
from shared.api.models import JobCreate, JobList, JobUpdate, JobView, PreviewRequest, PreviewResponse, RunList
from shared.api.service import JobService
from shared.clock import SystemClock
from shared.errors import InvalidInput, SundialError
from shared.models import JobStatus

TITLE, VERSION = "Sundial", "1.0.0"
B, N, C = HTTPStatus.BAD_REQUEST, HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT

logger = Logger(service=c.METRICS_SERVICE)
tracer = Tracer(service=c.METRICS_SERVICE)
app = APIGatewayRestResolver(enable_validation=True)
app.enable_swagger(path="/docs", title=TITLE, version=VERSION)
app.include_router(api_stats.router)

IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", min_length=1, max_length=128)]
Limit = Annotated[int, Query(ge=1, le=100)]
NextToken = Annotated[str | None, Query(max_length=4096)]


@clients.lazy
def _service() -> JobService:
    config = clients.settings()
    return JobService(clients.store(), clients.dispatcher(), SystemClock(), config.allow_private_targets)


@app.post("/jobs", responses=api_errors.documented(B, C, HTTPStatus.REQUEST_ENTITY_TOO_LARGE))
def create_job(spec: Annotated[JobCreate, Body()], key: IdempotencyKey = None) -> Response[JobView]:
    _require_object()
    view, created = _service().create(spec, key)
    status, headers = (201, {"Location": _location(view.id)}) if created else (200, {})
    return Response(status, content_types.APPLICATION_JSON, view, headers)


def _location(job_id: str) -> str:
    """The job's URL path as the client sees it: behind a deployed stage that path starts with it."""
    stage_path = app.current_event.request_context.path or app.current_event.path
    return f"{stage_path.rstrip('/')}/{job_id}"


@app.get("/jobs", responses=api_errors.documented(B))
def list_jobs(
    status: Annotated[JobStatus | None, Query()] = None,
    priority: Annotated[c.Priority | None, Query()] = None,
    limit: Limit = 50,
    next_token: NextToken = None,
) -> JobList:
    return _service().list(status, priority, limit, next_token)


@app.get("/jobs/<job_id>", responses=api_errors.documented(N))
def get_job(job_id: str) -> JobView:
    return _service().get(job_id)


@app.patch("/jobs/<job_id>", responses=api_errors.documented(B, N, C, HTTPStatus.REQUEST_ENTITY_TOO_LARGE))
def update_job(job_id: str, patch: Annotated[JobUpdate, Body()]) -> JobView:
    _require_object()
    return _service().update(job_id, patch)


@app.delete("/jobs/<job_id>", responses=api_errors.documented(N))
def cancel_job(job_id: str) -> JobView:
    return _service().cancel(job_id)


@app.post("/jobs/<job_id>/pause", responses=api_errors.documented(N, C))
def pause_job(job_id: str) -> JobView:
    return _service().pause(job_id)


@app.post("/jobs/<job_id>/resume", responses=api_errors.documented(N, C))
def resume_job(job_id: str) -> JobView:
    return _service().resume(job_id)


@app.post("/jobs/<job_id>/trigger", responses=api_errors.documented(N, C))
def trigger_job(job_id: str) -> JobView:
    return _service().trigger(job_id)


@app.post("/jobs/<job_id>/retry", responses=api_errors.documented(N, C))
def retry_job(job_id: str) -> JobView:
    return _service().retry(job_id)


@app.get("/jobs/<job_id>/runs", responses=api_errors.documented(B, N))
def job_runs(job_id: str, limit: Limit = 50, next_token: NextToken = None) -> RunList:
    return _service().runs(job_id, limit, next_token)


@app.post("/schedules/preview", responses=api_errors.documented(B))
def preview(request: Annotated[PreviewRequest, Body()]) -> PreviewResponse:
    _require_object()
    return _service().preview(request)


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/openapi.json", include_in_schema=False)
def openapi() -> Response[str]:
    document = app.get_openapi_json_schema(title=TITLE, version=VERSION)
    return Response(200, content_types.APPLICATION_JSON, document)


def domain_error(exc: SundialError) -> Response[Any]:
    return api_errors.for_domain(exc)


def invalid_request(exc: RequestValidationError) -> Response[Any]:
    return api_errors.for_validation(exc.errors(), _json_body())


@app.not_found
def not_found(_: NotFoundError) -> Response[Any]:
    path, method = app.current_event.path, app.current_event.http_method.upper()
    # Powertools knows no 405: a path served for other methods is told which ones.
    routes = [*app._static_routes, *app._dynamic_routes]
    allowed = sorted({route.method for route in routes if route.rule.match(path)})
    if allowed:
        answer = api_errors.error(
            HTTPStatus.METHOD_NOT_ALLOWED, f"{method} {path} is not allowed; use {', '.join(allowed)}"
        )
        answer.headers["Allow"] = ", ".join(allowed)
        return answer
    return api_errors.error(HTTPStatus.NOT_FOUND, f"no route for {method} {path}")


def unexpected(exc: Exception) -> Response[Any]:
    logger.exception("unexpected error")
    return api_errors.error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error; it has been logged")


# Called rather than used as decorators: Powertools leaves exception_handler's result untyped.
app.exception_handler(SundialError)(domain_error)
app.exception_handler(RequestValidationError)(invalid_request)
app.exception_handler(Exception)(unexpected)
app.exception_handler(RequestUnsupportedContentType)(api_errors.unsupported)


def _require_object() -> None:
    # Powertools unwraps a one-element JSON array before validating it as the model: refuse it here.
    if not isinstance(app.current_event.json_body, dict):
        raise InvalidInput("the request body must be a JSON object", field="body")


def _json_body() -> Any:
    try:
        return app.current_event.json_body
    except Exception:
        return None


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refusal = api_errors.refuse_unreadable(APIGatewayProxyEvent(event))
    return refusal if refusal is not None else app.resolve(event, context)
