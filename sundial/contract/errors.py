"""The body of every 4xx and 5xx answer (docs/api.md, "Errors"): an RFC 9457 problem details object
that also carries the `message` and `field` answered before it."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

# The media type of every error answer (RFC 9457, section 3).
PROBLEM_JSON = "application/problem+json"
# RFC 9457, section 4.2.1: the problem is no more than its status; `title` is then the status phrase.
BLANK = "about:blank"


class ErrorBody(BaseModel):
    """Every 4xx and 5xx answer."""

    # Every member is answered: the document lists them all as required in what the API answers, while
    # a body without the problem members (an older API's) still reads.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    type: str = Field(
        default=BLANK,
        description="What kind of problem it is, as a URI: `about:blank`, the problem being no more than "
        "its HTTP status.",
    )
    title: str | None = Field(
        default=None, description="The HTTP status's reason phrase, such as `Precondition Failed`."
    )
    status: int | None = Field(default=None, description="The HTTP status of the answer.")
    detail: str | None = Field(default=None, description="The same text as `message`.")
    message: str = Field(description="What is wrong and, when the client can mend it, what to do instead.")
    field: str | None = Field(
        default=None,
        description="The part of the request at fault, as the client wrote it: a body field "
        "(`schedule`, `target.url`, `backoff[1]`, `body` for the whole body), a query parameter, a "
        "header (`Idempotency-Key`, `If-Match`, `Content-Type`) or a path parameter (`job_id`); null "
        "when no one part is.",
    )

    @model_validator(mode="before")
    @classmethod
    def _problem_members(cls, data: Any) -> Any:
        """`detail` repeats `message`, and `title` names `status`, when a body leaves them out."""
        if not isinstance(data, dict):
            return data
        filled = dict(data)
        if filled.get("detail") is None and filled.get("message") is not None:
            filled["detail"] = filled["message"]
        status = filled.get("status")
        if filled.get("title") is None and isinstance(status, int) and status in _PHRASES:
            filled["title"] = _PHRASES[status]
        return filled

    @classmethod
    def of(cls, status: int, message: str, field: str | None = None) -> ErrorBody:
        """The answer for `status`: `about:blank`, titled with the status's phrase."""
        return cls(status=status, message=message, field=field)


_PHRASES = {status.value: status.phrase for status in HTTPStatus}
