"""The API's side of client-side conditions (docs/api.md, "ETag and If-Match"): the If-Match header a
change takes, and the ETag header of every answer that carries one job."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Header

from sundial.contract.jobs import JobView
from sundial.shared.service.conditions import IF_MATCH, if_match
from sundial.shared.service.service import JobService
from sundial.shared.service.views import etag_of

# Bounded like any header the API reads: a list of many tags is no condition a client needs.
IF_MATCH_LIMIT = 1024

IfMatchHeader = Annotated[
    str | None,
    Header(
        alias=IF_MATCH,
        min_length=1,
        max_length=IF_MATCH_LIMIT,
        description="Act only if the job is still as the ETag that an answer carried says: its "
        "revision, which every change a call makes advances. Otherwise 412 and nothing changes. "
        "`*` matches any job; one that is not an entity tag is a 400.",
        examples=['"7"'],
    ),
]


def conditional(service: JobService, header: str | None) -> JobService:
    """The service acting under the request's If-Match, if it sent one. Raises InvalidInput naming
    If-Match for a malformed one."""
    return service.conditional(if_match(header))


def job_answer(
    view: JobView, status: HTTPStatus = HTTPStatus.OK, headers: dict[str, str] | None = None
) -> Response[JobView]:
    """An answer carrying one job, with its ETag."""
    tagged = dict(headers or {})
    tag = etag_of(view)
    if tag is not None:
        tagged["ETag"] = tag
    return Response(status.value, content_types.APPLICATION_JSON, view, tagged)
