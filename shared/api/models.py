"""Request and response bodies of the HTTP API v1 (docs/api.md). The OpenAPI document comes from these."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from shared.clock import format_rfc3339
from shared.constants import Priority
from shared.lifecycle import waiting_triggers
from shared.models import DEFAULT_BACKOFF, BackoffSeconds, Job, JobStatus, OverlapPolicy, Run, RunSummary
from shared.schedules import MisfirePolicy
from shared.targets.models import Target, masked

# A job id is a ULID in its canonical form: 26 Crockford base-32 characters, the first at most 7
# (a ULID is 128 bits). Anything else names no job.
JOB_ID_PATTERN = r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$"
JOB_ID_EXAMPLE = "01JD8ZQ3V6X4M7N2P5R8T1W9YB"

Name = Annotated[str, Field(max_length=200)]
ScheduleText = Annotated[str, Field(min_length=1, max_length=256)]
ZoneName = Annotated[str, Field(min_length=1, max_length=64)]
MaxRetries = Annotated[int, Field(ge=0, le=20)]
Backoff = Annotated[list[BackoffSeconds], Field(min_length=1, max_length=20)]
TimeoutSeconds = Annotated[int, Field(ge=1, le=900)]


class JobCreate(BaseModel):
    """POST /jobs."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    run_at: AwareDatetime | None = None
    schedule: ScheduleText | None = None
    timezone: ZoneName = "UTC"
    target: Target
    payload: Any = None
    priority: Priority = Priority.MEDIUM
    max_retries: MaxRetries = 5
    backoff: Backoff = Field(default_factory=lambda: list(DEFAULT_BACKOFF))
    timeout_seconds: TimeoutSeconds = 300
    misfire_policy: MisfirePolicy = MisfirePolicy.RUN_ONCE
    overlap_policy: OverlapPolicy = OverlapPolicy.SKIP
    start_at: AwareDatetime | None = None
    end_at: AwareDatetime | None = None


class JobUpdate(BaseModel):
    """PATCH /jobs/{id}: only the fields sent change."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    schedule: ScheduleText | None = None
    timezone: ZoneName | None = None
    run_at: AwareDatetime | None = None
    payload: Any = None
    priority: Priority | None = None
    max_retries: MaxRetries | None = None
    backoff: Backoff | None = None
    timeout_seconds: TimeoutSeconds | None = None
    misfire_policy: MisfirePolicy | None = None
    overlap_policy: OverlapPolicy | None = None
    start_at: AwareDatetime | None = None
    end_at: AwareDatetime | None = None


class PreviewRequest(BaseModel):
    """POST /schedules/preview."""

    model_config = ConfigDict(extra="forbid")

    schedule: ScheduleText
    timezone: ZoneName = "UTC"
    count: Annotated[int, Field(ge=1, le=100)] = 10
    after: AwareDatetime | None = None


class PreviewResponse(BaseModel):
    next_runs: list[str]


class LastRun(BaseModel):
    scheduled_at: str
    status: str
    started_at: str | None
    finished_at: str | None
    error: str | None

    @classmethod
    def of(cls, run: RunSummary) -> LastRun:
        return cls(
            scheduled_at=format_rfc3339(run.scheduled_at),
            status=run.status.value,
            started_at=_time(run.started_at),
            finished_at=_time(run.finished_at),
            error=run.error,
        )


EffectSubject = Literal["trigger", "retry", "deferred_run"]
EffectFate = Literal["runs_now", "waits", "kept", "moved", "held", "dropped"]


class Effect(BaseModel):
    """What a call did to something that was waiting (docs/api.md, "What an answer says")."""

    subject: EffectSubject = Field(
        description="`trigger`: a triggered run not yet started; `retry`: a retry waiting for its "
        "backoff; `deferred_run`: the occurrence a triggered run put off (the schedule resumes there)."
    )
    fate: EffectFate
    count: int = Field(default=1, description="How many: more than 1 only for triggers.")
    at: str | None = Field(default=None, description="The instant it now waits for, when it has one.")
    message: str


class JobView(BaseModel):
    """The job object of docs/api.md, plus the policy and window fields a client sent."""

    id: str
    name: str | None
    status: JobStatus
    schedule: str | None
    timezone: str
    run_at: str | None
    next_run_at: str | None
    priority: Priority
    target: Target
    payload: Any
    max_retries: int
    backoff: list[int]
    timeout_seconds: int
    attempt: int
    paused: bool
    misfire_policy: MisfirePolicy
    overlap_policy: OverlapPolicy
    start_at: str | None
    end_at: str | None
    last_run: LastRun | None
    created_at: str
    updated_at: str
    triggers_waiting: int = Field(
        default=0, description="Acknowledged triggers whose runs have not started; each runs in turn."
    )
    effects: list[Effect] = Field(
        default_factory=list,
        description="What the call that answered did to a waiting trigger, retry or deferred run; "
        "empty on reads.",
    )

    @classmethod
    def of(cls, job: Job, payload: Any, effects: list[Effect] | None = None) -> JobView:
        return cls(
            id=job.id,
            name=job.name,
            status=job.status,
            schedule=job.schedule,
            timezone=job.timezone,
            run_at=_time(job.run_at),
            next_run_at=_time(_next_run_at(job)),
            priority=job.priority,
            target=masked(job.target),
            payload=payload,
            max_retries=job.retry.max_retries,
            backoff=list(job.retry.backoff),
            timeout_seconds=job.retry.timeout_seconds,
            attempt=job.attempt,
            paused=job.paused,
            misfire_policy=job.misfire_policy,
            overlap_policy=job.overlap_policy,
            start_at=_time(job.start_at),
            end_at=_time(job.end_at),
            last_run=LastRun.of(job.last_run) if job.last_run else None,
            created_at=format_rfc3339(job.created_at),
            updated_at=format_rfc3339(job.updated_at),
            triggers_waiting=waiting_triggers(job),
            effects=effects or [],
        )


class JobList(BaseModel):
    jobs: list[JobView]
    next_token: str | None


class RunView(BaseModel):
    scheduled_at: str
    attempt: int
    status: str
    started_at: str | None
    finished_at: str | None
    error: str | None
    worker: str | None

    @classmethod
    def of(cls, run: Run) -> RunView:
        return cls(
            scheduled_at=format_rfc3339(run.scheduled_at),
            attempt=run.attempt,
            status=run.status.value,
            started_at=_time(run.started_at),
            finished_at=_time(run.finished_at),
            error=run.error,
            worker=run.worker,
        )


class RunList(BaseModel):
    runs: list[RunView]
    next_token: str | None


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


class HealthView(BaseModel):
    status: Literal["ok"]


def _next_run_at(job: Job) -> int | None:
    waiting = job.status in (JobStatus.PENDING, JobStatus.FAILED, JobStatus.QUEUED)
    return job.due_at if waiting and not job.paused else None


def _time(epoch_ms: int | None) -> str | None:
    return format_rfc3339(epoch_ms) if epoch_ms is not None else None
