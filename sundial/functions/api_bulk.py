"""POST /jobs/batch, POST /jobs/actions and GET /jobs/actions/{id} (docs/api.md): routes of the api
Lambda for acting on many jobs at once."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from sundial.contract.bulk import ActionRequest, BatchAnswer, JobBatch, OperationView
from sundial.contract.jobs import JOB_ID_EXAMPLE, JOB_ID_PATTERN
from sundial.functions import api_openapi as doc
from sundial.functions import clients
from sundial.functions.traces import TraceHeader, traced_service
from sundial.shared.clock import SystemClock
from sundial.shared.errors import InvalidInput
from sundial.shared.service.batch import create_batch
from sundial.shared.service.operations import Operations

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves its __init__ unannotated
B, N, NOT_JSON = HTTPStatus.BAD_REQUEST, HTTPStatus.NOT_FOUND, HTTPStatus.UNSUPPORTED_MEDIA_TYPE

OperationId = Annotated[
    str,
    Path(
        pattern=JOB_ID_PATTERN,
        description="The operation's id, as POST /jobs/actions answered it: a 26-character ULID.",
        examples=[JOB_ID_EXAMPLE],
    ),
]


@router.post(
    "/jobs/batch",
    summary="Create up to 100 jobs",
    description="Each item is created as POST /jobs creates a job, and answered on its own, in order: "
    "201, 200 for an `idempotency_key` used before with the same body, or a 4xx with the error naming "
    "`jobs[index].field`. A bad item refuses only itself.",
    tags=["jobs"],
    operation_id="create_jobs",
    responses=doc.answers(HTTPStatus.OK, BatchAnswer, "Each item's result.", doc.BATCH_ANSWER, B, NOT_JSON),
)
def create_jobs(
    batch: Annotated[JobBatch, Body(openapi_examples=doc.BATCH_EXAMPLES)], traceparent: TraceHeader = None
) -> BatchAnswer:
    _require_object()
    return create_batch(traced_service(traceparent), batch.jobs)


@router.post(
    "/jobs/actions",
    summary="Act on many jobs",
    description="Starts a bulk operation: one action (pause, resume, cancel, retry, trigger) on every "
    "job a filter matches, or on the ids listed. Each job gets the same change as its single call. "
    "The first 100 are acted on before the answer; the rest in the background (GET /jobs/actions/{id}).",
    tags=["jobs"],
    operation_id="start_action",
    responses=doc.answers(
        HTTPStatus.ACCEPTED, OperationView, "The operation, started.", doc.OPERATION, B, NOT_JSON
    ),
)
def start_action(
    request: Annotated[ActionRequest, Body(openapi_examples=doc.ACTION_EXAMPLES)],
) -> Response[OperationView]:
    _require_object()
    event = APIGatewayProxyEvent(router.current_event.raw_event)
    identity = event.request_context.identity
    view = _operations().start(request, identity.user_arn or identity.caller)
    stage_path = event.request_context.path or event.path
    headers = {"Location": f"{stage_path.rstrip('/')}/{view.id}"}
    return Response(HTTPStatus.ACCEPTED.value, content_types.APPLICATION_JSON, view, headers)


@router.get(
    "/jobs/actions/<operation_id>",
    summary="A bulk operation's progress",
    description="Jobs done, refused (with the first 100 reasons) and left, and whether it is done.",
    tags=["jobs"],
    operation_id="get_action",
    responses=doc.answers(HTTPStatus.OK, OperationView, "The operation.", doc.OPERATION, B, N),
)
def get_action(operation_id: OperationId) -> OperationView:
    return _operations().get(operation_id)


@clients.lazy
def _operations() -> Operations:
    return Operations(clients.store(), clients.job_service(), SystemClock(), threads="bulk-api")


def _require_object() -> None:
    # Powertools unwraps a one-element JSON array before validating it as the model: refuse it here.
    if not isinstance(router.current_event.json_body, dict):
        raise InvalidInput("the request body must be a JSON object", field="body")
