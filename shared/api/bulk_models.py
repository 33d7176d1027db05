"""The bodies of POST /jobs/batch, POST /jobs/actions and GET /jobs/actions/{id} (docs/api.md)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from shared import constants as c
from shared.api.models import JOB_ID_PATTERN, ErrorBody, JobView
from shared.api.requests import NAME_FILTER_LIMIT
from shared.clock import format_rfc3339
from shared.models import BulkAction, Health, JobStatus, Operation, OperationState, Refusal

BATCH_LIMIT = 100
IDS_LIMIT = 1000
IDEMPOTENCY_KEY_MEMBER = "idempotency_key"


class JobBatch(BaseModel):
    """POST /jobs/batch. Each item is checked on its own, so one bad item refuses only itself."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[Any] = Field(
        min_length=1,
        max_length=BATCH_LIMIT,
        description="Up to 100 job bodies as POST /jobs takes them, each with an optional "
        "`idempotency_key` member (1-128 characters) that works as that route's Idempotency-Key header.",
    )


class BatchItem(BaseModel):
    index: int = Field(description="The item's position in `jobs`, from 0.")
    status: int = Field(
        description="201 created; 200 created earlier by the same idempotency key and body; 429 not "
        "made because the table was throttling writes (send the item again, with its key, after a "
        "pause); any other 4xx refused, with `error` naming the field as `jobs[index].field`."
    )
    job: JobView | None = None
    error: ErrorBody | None = None


class BatchAnswer(BaseModel):
    results: list[BatchItem] = Field(description="One result per item, in the order sent.")
    created: int
    existing: int = Field(description="Items whose idempotency key answered a job created earlier.")
    refused: int


class ActionFilter(BaseModel):
    """The filters of GET /jobs that an index decides (a name substring is not among them)."""

    model_config = ConfigDict(extra="forbid")

    status: JobStatus | None = None
    priority: c.Priority | None = None
    health: Health | None = None
    name_prefix: str | None = Field(default=None, min_length=c.NAME_KEY_CHARS, max_length=NAME_FILTER_LIMIT)


class ActionRequest(BaseModel):
    """POST /jobs/actions: one action on every job a filter matches, or on the jobs listed."""

    model_config = ConfigDict(extra="forbid")

    action: BulkAction
    filter: ActionFilter | None = Field(
        default=None, description="Every job that matches when the operation reaches it; `{}` is all jobs."
    )
    ids: list[Annotated[str, Field(pattern=JOB_ID_PATTERN)]] | None = Field(
        default=None, min_length=1, max_length=IDS_LIMIT, description="Up to 1,000 job ids."
    )


class OperationView(BaseModel):
    id: str
    action: BulkAction
    filter: dict[str, str] | None
    ids: int | None = Field(description="How many ids the request listed; null for a filter.")
    state: OperationState
    done: int = Field(description="Jobs acted on, or already as the action leaves them.")
    refused: int = Field(description="Jobs whose state refused the action (as its single call would).")
    left: int | None = Field(description="Jobs not yet reached: 0 once done; null before the first slice.")
    left_is_estimate: bool = Field(description="True when `left` counts from an estimated total.")
    refusals: list[Refusal] = Field(description="Why jobs were refused: the first 100 of them.")
    who: str | None = Field(description="The caller's IAM principal, where the stage has one.")
    created_at: str
    updated_at: str
    finished_at: str | None

    @classmethod
    def of(cls, operation: Operation) -> OperationView:
        left: int | None = None
        if operation.state is OperationState.DONE:
            left = 0
        elif operation.matched is not None:
            left = max(0, operation.matched - operation.done - operation.refused)
        return cls(
            id=operation.id,
            action=operation.action,
            filter=operation.filter,
            ids=len(operation.ids) if operation.ids is not None else None,
            state=operation.state,
            done=operation.done,
            refused=operation.refused,
            left=left,
            left_is_estimate=operation.matched_is_estimate and left != 0,
            refusals=operation.refusals,
            who=operation.who,
            created_at=format_rfc3339(operation.created_at),
            updated_at=format_rfc3339(operation.updated_at),
            finished_at=format_rfc3339(operation.finished_at) if operation.finished_at else None,
        )
