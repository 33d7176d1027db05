"""POST /jobs/{id}/backfill (docs/api.md, "Backfill"): a route of the api Lambda."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from sundial.contract.jobs import BackfillRequest, BackfillView
from sundial.functions import api_openapi as doc
from sundial.functions import clients
from sundial.shared.errors import InvalidInput
from sundial.shared.lifecycle.backfill import MAX_BACKFILL_OCCURRENCES
from sundial.shared.service.views import etag_of

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves its __init__ unannotated
B, N, C = HTTPStatus.BAD_REQUEST, HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT

DRY_RUN = doc.BACKFILL | {"dry_run": True, "job": None}
TAKEN = doc.answers(
    HTTPStatus.ACCEPTED, BackfillView, "What runs, what was skipped or ran before.", doc.BACKFILL, B, N, C
)
TAKEN[HTTPStatus.ACCEPTED.value]["headers"] = {"ETag": doc.ETAG}

JobId = doc.JobId


@router.post(
    "/jobs/<job_id>/backfill",
    summary="Backfill a job's past occurrences",
    description="Runs the occurrences the job's schedule had in [from, to) before the job was created, "
    "one after another (`overlap_policy: buffer`) or only the latest (`skip`), each with its own "
    "scheduled instant and idempotency key. Each instant runs at most once, however often it is asked "
    f"for. At most {MAX_BACKFILL_OCCURRENCES} occurrences per window (400 with the count); 409 for a "
    "one-off, cancelled or finished job. `dry_run` answers the same and changes nothing (200).",
    tags=["jobs"],
    operation_id="backfill_job",
    responses={**doc.answers(HTTPStatus.OK, BackfillView, "A dry run: what would run.", DRY_RUN), **TAKEN},
)
def backfill_job(
    job_id: JobId, request: Annotated[BackfillRequest, Body(openapi_examples=doc.BACKFILL_EXAMPLES)]
) -> Response[dict[str, Any]]:
    if not isinstance(router.current_event.json_body, dict):
        raise InvalidInput("the request body must be a JSON object", field="body")
    view = clients.job_service().backfill(job_id, request)
    status = HTTPStatus.OK if request.dry_run else HTTPStatus.ACCEPTED
    body = view.model_dump(mode="json", by_alias=True)
    # The answer carries the job when it acted on it: its ETag too, as every answer with one job has.
    tag = etag_of(view.job) if view.job is not None else None
    headers = {"ETag": tag} if tag is not None else {}
    return Response(status.value, content_types.APPLICATION_JSON, body, headers)
