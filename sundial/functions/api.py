"""The API Lambda: the HTTP API v1 (docs/api.md) behind API Gateway REST proxy events."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError

from sundial.contract.bounds import NAME_FILTER_LIMIT, NAME_KEY_CHARS
from sundial.contract.jobs import (
    JOB_ID_EXAMPLE,
    JOB_ID_PATTERN,
    HealthView,
    JobCreate,
    JobList,
    JobUpdate,
    JobView,
    PreviewRequest,
    PreviewResponse,
    RunList,
)
from sundial.contract.vocabulary import Health, JobStatus, Priority
from sundial.functions import (
    api_backfill,
    api_bulk,
    api_errors,
    api_limits,
    api_occurrences,
    api_stats,
    clients,
)
from sundial.functions import api_openapi as doc
from sundial.functions.api_conditions import IfMatchHeader, conditional, job_answer
from sundial.functions.traces import TraceHeader, traced_service
from sundial.shared import constants as c
from sundial.shared.engine.patience import error_code, throttled
from sundial.shared.errors import InvalidInput, SundialError

TITLE, VERSION = "Sundial", "1.0.0"
DESCRIPTION = (
    "A serverless job scheduler: one-off, rate and cron jobs in any time zone, retries, run history. "
    "Every answer that carries one job carries its `ETag`, which changes take as `If-Match`. Every "
    "error answer is RFC 9457 problem details (`application/problem+json`) with `message` and `field`; "
    "docs/api.md is the prose form of this document."
)
B, N, C = HTTPStatus.BAD_REQUEST, HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT
STALE = HTTPStatus.PRECONDITION_FAILED
LARGE, NOT_JSON = HTTPStatus.REQUEST_ENTITY_TOO_LARGE, HTTPStatus.UNSUPPORTED_MEDIA_TYPE
OK = HTTPStatus.OK
# What a throttled answer asks a caller to wait: DynamoDB's partitions refill their tokens each second.
THROTTLED_RETRY_AFTER_SECONDS = 1

logger = Logger(service=c.METRICS_SERVICE)
tracer = Tracer(service=c.METRICS_SERVICE)
app = doc.Resolver(enable_validation=True)
app.enable_swagger(path="/docs", title=TITLE, version=VERSION, description=DESCRIPTION, tags=doc.TAGS)
app.include_router(api_stats.router)
app.include_router(api_bulk.router)
app.include_router(api_backfill.router)
app.include_router(api_limits.router)
app.include_router(api_occurrences.router)

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=128,
        description="The same key with the same body within 24 hours answers the first job (200); "
        "with another body, 409.",
    ),
]
Limit = Annotated[int, Query(ge=1, le=100, description="At most this many items in the page.")]
NextToken = Annotated[
    str | None,
    Query(max_length=4096, description="The previous page's next_token, to read the next page."),
]
JobId = doc.JobId


_service = clients.job_service


@app.post(
    "/jobs",
    summary="Create a job",
    description="Stores a one-off (`run_at`, default now) or recurring (`schedule`) job. A job due "
    "before the next scheduler tick is dispatched at once. Target header values not on the "
    "allow-list are stored encrypted and answered as `***`.",
    tags=["jobs"],
    operation_id="create_job",
    responses=doc.created(JobView, doc.JOB, B, C, LARGE, NOT_JSON),
)
def create_job(
    spec: Annotated[JobCreate, Body(openapi_examples=doc.CREATE_EXAMPLES)],
    key: IdempotencyKey = None,
    traceparent: TraceHeader = None,
) -> Response[JobView]:
    _require_object()
    view, created = traced_service(traceparent).create(spec, key)
    if created:
        return job_answer(view, HTTPStatus.CREATED, {"Location": _location(view.id)})
    return job_answer(view)


def _location(job_id: str) -> str:
    """The job's URL path as the client sees it: behind a deployed stage that path starts with it."""
    stage_path = app.current_event.request_context.path or app.current_event.path
    return f"{stage_path.rstrip('/')}/{job_id}"


@app.get(
    "/jobs",
    summary="List jobs",
    description="Newest first, optionally filtered by status, priority, health, name prefix and name; "
    "the filters combine. A page holds fewer than `limit` jobs only when nothing more matches (or when "
    "a `name` search read its bound: see docs/api.md); the listing ends when `next_token` is null. "
    "`total` counts the matches, exactly or as an estimate marked by `total_is_estimate`.",
    tags=["jobs"],
    operation_id="list_jobs",
    responses=doc.answers(
        OK,
        JobList,
        "A page of jobs.",
        {"jobs": [doc.JOB], "next_token": None, "total": 1, "total_is_estimate": False},
        B,
    ),
)
def list_jobs(
    status: Annotated[JobStatus | None, Query(description="Only jobs in this status.")] = None,
    priority: Annotated[Priority | None, Query(description="Only jobs of this priority.")] = None,
    limit: Limit = 50,
    next_token: NextToken = None,
    name: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=NAME_FILTER_LIMIT,
            description="Only jobs whose name contains this text, in any case.",
            examples=["report"],
        ),
    ] = None,
    health: Annotated[
        Health | None,
        Query(description="failing: the last attempt failed or the last occurrence died; dead: it died."),
    ] = None,
    name_prefix: Annotated[
        str | None,
        Query(
            min_length=NAME_KEY_CHARS,
            max_length=NAME_FILTER_LIMIT,
            description="Only jobs whose name starts with this text, in any case.",
            examples=["report-"],
        ),
    ] = None,
) -> JobList:
    return _service().list(status, priority, limit, next_token, name, health, name_prefix)


@app.get(
    "/jobs/<job_id>",
    summary="Get a job",
    description="The job as it now is: its current occurrence's status, next run and last run.",
    tags=["jobs"],
    operation_id="get_job",
    responses=doc.job_answers("The job.", doc.JOB, B, N),
)
def get_job(job_id: JobId) -> Response[JobView]:
    return job_answer(_service().get(job_id))


@app.patch(
    "/jobs/<job_id>",
    summary="Change a job",
    description="Changes only the fields sent, from the next occurrence on. It never runs an "
    "occurrence again, never brings back a finished or cancelled job and never resets attempts; "
    "the target cannot be changed (create a new job).",
    tags=["jobs"],
    operation_id="update_job",
    responses=doc.job_answers("The job as it now is.", doc.JOB, B, N, C, STALE, LARGE, NOT_JSON),
)
def update_job(
    job_id: JobId,
    patch: Annotated[JobUpdate, Body(openapi_examples=doc.UPDATE_EXAMPLES)],
    traceparent: TraceHeader = None,
    if_match: IfMatchHeader = None,
) -> Response[JobView]:
    _require_object()
    return job_answer(conditional(traced_service(traceparent), if_match).update(job_id, patch))


@app.delete(
    "/jobs/<job_id>",
    summary="Cancel a job",
    description="No further attempt or occurrence starts; a running attempt finishes and the job is "
    "then `cancelled`. Cancelling a cancelled job answers it as it is.",
    tags=["jobs"],
    operation_id="cancel_job",
    responses=doc.job_answers("The job as it now is.", doc.JOB | {"status": "cancelled"}, B, N, C, STALE),
)
def cancel_job(job_id: JobId, if_match: IfMatchHeader = None) -> Response[JobView]:
    return job_answer(conditional(_service(), if_match).cancel(job_id))


@app.post(
    "/jobs/<job_id>/pause",
    summary="Pause a recurring job",
    description="No new occurrence starts while paused; a running attempt finishes; a scheduled "
    "retry is held. 409 for a one-off or cancelled job.",
    tags=["jobs"],
    operation_id="pause_job",
    responses=doc.job_answers(
        "The job as it now is.", doc.JOB | {"paused": True, "next_run_at": None}, B, N, C, STALE
    ),
)
def pause_job(job_id: JobId, if_match: IfMatchHeader = None) -> Response[JobView]:
    return job_answer(conditional(_service(), if_match).pause(job_id))


@app.post(
    "/jobs/<job_id>/resume",
    summary="Resume a paused job",
    description="Back on schedule; occurrences missed while paused follow `misfire_policy`; a held "
    "retry runs now. 409 for a one-off or cancelled job.",
    tags=["jobs"],
    operation_id="resume_job",
    responses=doc.job_answers("The job as it now is.", doc.JOB, B, N, C, STALE),
)
def resume_job(
    job_id: JobId, traceparent: TraceHeader = None, if_match: IfMatchHeader = None
) -> Response[JobView]:
    return job_answer(conditional(traced_service(traceparent), if_match).resume(job_id))


@app.post(
    "/jobs/<job_id>/trigger",
    summary="Run a job now",
    description="One extra occurrence now; the schedule then goes on where it was. A failed job's "
    "scheduled retry runs now. Every acknowledged trigger runs once unless a later pause or cancel "
    "drops it: behind a running attempt or earlier triggered runs it waits, and starts when they have "
    "ended. `effects` says which. 409 for a cancelled job, or when 10 triggered runs wait already.",
    tags=["jobs"],
    operation_id="trigger_job",
    responses=doc.job_answers("The job as it now is.", doc.JOB | {"status": "queued"}, B, N, C, STALE),
)
def trigger_job(
    job_id: JobId, traceparent: TraceHeader = None, if_match: IfMatchHeader = None
) -> Response[JobView]:
    return job_answer(conditional(traced_service(traceparent), if_match).trigger(job_id))


@app.post(
    "/jobs/<job_id>/retry",
    summary="Revive a dead job",
    description="It runs now, its retry policy counted afresh; attempt numbers go on. 409 unless `dead`.",
    tags=["jobs"],
    operation_id="retry_job",
    responses=doc.job_answers("The job as it now is.", doc.JOB | {"status": "queued"}, B, N, C, STALE),
)
def retry_job(
    job_id: JobId, traceparent: TraceHeader = None, if_match: IfMatchHeader = None
) -> Response[JobView]:
    return job_answer(conditional(traced_service(traceparent), if_match).retry(job_id))


@app.get(
    "/jobs/<job_id>/runs",
    summary="List a job's runs",
    description="The attempt history, newest first: when each attempt was scheduled, started and "
    "finished, its outcome, error and worker.",
    tags=["runs"],
    operation_id="list_job_runs",
    responses=doc.answers(OK, RunList, "A page of runs.", doc.RUNS, B, N),
)
def list_job_runs(job_id: JobId, limit: Limit = 50, next_token: NextToken = None) -> RunList:
    return _service().runs(job_id, limit, next_token)


@app.post(
    "/schedules/preview",
    summary="Preview a schedule",
    description="The next instants (UTC, at most 100) a schedule gives in a time zone, DST included, "
    "less those on the dates a calendar excludes (`explain` lists them); the scheduler uses the same code.",
    tags=["schedules"],
    operation_id="preview_schedule",
    responses=doc.answers(OK, PreviewResponse, "The next runs.", doc.PREVIEW, B, NOT_JSON),
)
def preview_schedule(
    request: Annotated[PreviewRequest, Body(openapi_examples=doc.PREVIEW_EXAMPLES)],
) -> PreviewResponse:
    _require_object()
    return _service().preview(request)


@app.get(
    "/health",
    summary="Health",
    description="200 while the API answers.",
    tags=["service"],
    operation_id="get_health",
    responses=doc.answers(OK, HealthView, "The API answers.", {"status": "ok"}),
)
def get_health() -> HealthView:
    return HealthView(status="ok")


@app.get("/openapi.json", include_in_schema=False)
def openapi() -> Response[str]:
    document = app.get_openapi_json_schema(
        title=TITLE, version=VERSION, description=DESCRIPTION, tags=doc.TAGS
    )
    return Response(200, content_types.APPLICATION_JSON, document)


def domain_error(exc: SundialError) -> Response[Any]:
    return api_errors.for_domain(exc)


def invalid_request(exc: RequestValidationError) -> Response[Any]:
    errors = exc.errors()
    # Powertools reports an answer that fails its route's model as a request error: it is ours.
    if errors and tuple(errors[0].get("loc", ()))[:1] == ("response",):
        return unexpected(exc)
    return api_errors.for_validation(errors, _json_body())


@app.not_found
def not_found(_: NotFoundError) -> Response[Any]:
    path, method = app.current_event.path, app.current_event.http_method.upper()
    routes = [*app._static_routes, *app._dynamic_routes]
    job_id = _unroutable_job_id(path, routes)
    if job_id is not None:
        return api_errors.bad_job_id(job_id)
    # Powertools knows no 405: a path served for other methods is told which ones.
    allowed = sorted({route.method for route in routes if route.rule.match(path)})
    if allowed:
        answer = api_errors.error(
            HTTPStatus.METHOD_NOT_ALLOWED, f"{method} {path} is not allowed; use {', '.join(allowed)}"
        )
        answer.headers["Allow"] = ", ".join(allowed)
        return answer
    return api_errors.error(HTTPStatus.NOT_FOUND, f"no route for {method} {path}")


def _unroutable_job_id(path: str, routes: list[Any]) -> str | None:
    """The job id of a path that a route would take but for its id, such as "/jobs/\\n"."""
    prefix = "/jobs/"
    if not path.startswith(prefix):
        return None
    job_id, slash, rest = path.removeprefix(prefix).partition("/")
    if re.fullmatch(JOB_ID_PATTERN, job_id):
        return None  # a well-formed id on a path no route takes: a 404 or a 405
    probe = f"{prefix}{JOB_ID_EXAMPLE}{slash}{rest}"
    return job_id if any(route.rule.match(probe) for route in routes) else None


def unexpected(exc: Exception) -> Response[Any]:
    logger.exception("unexpected error")
    return api_errors.error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error; it has been logged")


def aws_refused(exc: ClientError) -> Response[Any]:
    """A throttle the SDK's own retries did not ride out is the table's load, not a fault: a 503 that
    says so and when to come back, which the client's retries honour."""
    if not throttled(exc):
        return unexpected(exc)
    logger.warning("throttled past the SDK's retries", extra={"code": error_code(exc)})
    answer = api_errors.error(
        HTTPStatus.SERVICE_UNAVAILABLE,
        f"the table is throttling requests ({error_code(exc)}); send the request again after a pause",
    )
    answer.headers["Retry-After"] = str(THROTTLED_RETRY_AFTER_SECONDS)
    return answer


# Called rather than used as decorators: Powertools leaves exception_handler's result untyped.
app.exception_handler(SundialError)(domain_error)
app.exception_handler(RequestValidationError)(invalid_request)
app.exception_handler(Exception)(unexpected)
app.exception_handler(ClientError)(aws_refused)
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
    event = api_limits.one_segment_key(event)
    proxy_event = APIGatewayProxyEvent(event)
    refusal = api_errors.refuse_unreadable(proxy_event) if _reads_a_body(proxy_event) else None
    return refusal if refusal is not None else app.resolve(event, context)


def _reads_a_body(event: APIGatewayProxyEvent) -> bool:
    """Whether the route this request goes to reads its body; the others never look at one."""
    method = event.http_method.upper()
    routes = [*app._static_routes, *app._dynamic_routes]
    return any(
        route.method == method and route.rule.match(event.path) and route.dependant.body_params
        for route in routes
    )
