"""GET /jobs/{id}/occurrences (docs/api.md, "Occurrences"): a route of the api Lambda."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from sundial.contract.occurrences import DEFAULT_OCCURRENCES_PAGE, MAX_OCCURRENCES_PAGE, OccurrenceList
from sundial.functions import api_openapi as doc
from sundial.functions import clients
from sundial.shared.clock import SystemClock
from sundial.shared.service.occurrences import OccurrenceReader

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves its __init__ unannotated
B, N = HTTPStatus.BAD_REQUEST, HTTPStatus.NOT_FOUND

From = Annotated[
    str | None,
    Query(alias="from", max_length=64, description="RFC 3339 with an offset; default: `to` less a day."),
]
To = Annotated[str | None, Query(max_length=64, description="RFC 3339 with an offset; default: now.")]
Limit = Annotated[
    int, Query(ge=1, le=MAX_OCCURRENCES_PAGE, description="At most this many occurrences in the page.")
]
NextToken = Annotated[
    str | None,
    Query(max_length=256, description="The previous page's next_token, to read the next page."),
]
EXAMPLE = {
    "occurrences": [
        {
            "scheduled_at": "2026-12-01T08:00:00Z",
            "start_at": "2026-12-01T08:00:00Z",
            "state": "ran",
            "reason": None,
            "attempts": 1,
            "last_status": "succeeded",
            "backfilled": False,
            "extra": False,
        },
        {
            "scheduled_at": "2026-12-01T08:01:00Z",
            "start_at": "2026-12-01T08:01:00Z",
            "state": "skipped",
            "reason": "paused",
            "attempts": 0,
            "last_status": None,
            "backfilled": False,
            "extra": False,
        },
    ],
    "next_token": None,
}


@router.get(
    "/jobs/<job_id>/occurrences",
    summary="Every instant of a job's schedule, and what became of it",
    description="Each instant of the schedule in [from, to) (default: the 24 hours before now), oldest "
    "first, once: `ran`, `running`, `waiting`, or `skipped` with its `reason` (`paused`, `overlap`, "
    "`misfire`, `calendar`, `cancelled`, `not_owed`); a triggered run is one more row with `extra`. "
    "As far back as run history is kept.",
    tags=["runs"],
    operation_id="list_job_occurrences",
    responses=doc.answers(HTTPStatus.OK, OccurrenceList, "A page of occurrences.", EXAMPLE, B, N),
)
def list_job_occurrences(
    job_id: doc.JobId,
    from_: From = None,
    to: To = None,
    limit: Limit = DEFAULT_OCCURRENCES_PAGE,
    next_token: NextToken = None,
) -> OccurrenceList:
    config = clients.settings()
    reader = OccurrenceReader(clients.store(), SystemClock(), config.history)
    return reader.page(job_id, from_, to, limit, next_token)
