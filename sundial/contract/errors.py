"""The body of every 4xx and 5xx answer (docs/api.md, "Errors")."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    """Every 4xx and 5xx answer."""

    message: str = Field(description="What is wrong and, when the client can mend it, what to do instead.")
    field: str | None = Field(
        default=None,
        description="The part of the request at fault, as the client wrote it: a body field "
        "(`schedule`, `target.url`, `backoff[1]`, `body` for the whole body), a query parameter, a "
        "header (`Idempotency-Key`, `Content-Type`) or a path parameter (`job_id`); null when no one "
        "part is.",
    )
