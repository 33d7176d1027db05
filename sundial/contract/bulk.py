"""The bodies of POST /jobs/batch, POST /jobs/actions and GET /jobs/actions/{id} (docs/api.md)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from sundial.contract.bounds import BATCH_LIMIT, IDS_LIMIT, NAME_FILTER_LIMIT, NAME_KEY_CHARS
from sundial.contract.errors import ErrorBody
from sundial.contract.jobs import JOB_ID_PATTERN, JobView
from sundial.contract.vocabulary import BulkAction, Health, JobStatus, OperationState, Priority


class Refusal(BaseModel):
    job_id: str
    message: str


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
    priority: Priority | None = None
    health: Health | None = None
    name_prefix: str | None = Field(default=None, min_length=NAME_KEY_CHARS, max_length=NAME_FILTER_LIMIT)


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
