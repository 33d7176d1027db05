"""The job and its run history as the domain sees them. Item conversion lives in the store alone."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from sundial.contract.bounds import DEFAULT_BACKOFF
from sundial.contract.bulk import Refusal
from sundial.contract.calendar import Calendar
from sundial.contract.targets import AlertRoute, Target
from sundial.contract.vocabulary import (
    BulkAction,
    Health,
    JobStatus,
    MisfirePolicy,
    OperationState,
    OverlapPolicy,
    Priority,
    RunStatus,
)

# Where the due index holds a job at its run time; QUEUED and RUNNING sit there at their lease expiry.
WAITING = frozenset({JobStatus.PENDING, JobStatus.FAILED})
IN_FLIGHT = frozenset({JobStatus.QUEUED, JobStatus.RUNNING})


BackoffSeconds = Annotated[int, Field(ge=0, le=86_400)]


class RetryPolicy(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_retries: Annotated[int, Field(ge=0, le=20)] = 5
    backoff: Annotated[tuple[BackoffSeconds, ...], Field(min_length=1, max_length=20)] = DEFAULT_BACKOFF
    timeout_seconds: Annotated[int, Field(ge=1, le=900)] = 300


class RunSummary(BaseModel):
    """One finished attempt, as kept on the job (last_run) and in the history items."""

    model_config = ConfigDict(frozen=True)

    scheduled_at: int
    attempt: int
    status: RunStatus
    started_at: int | None = None
    finished_at: int | None = None
    error: str | None = None
    worker: str | None = None
    trace_id: str | None = None  # the W3C trace the attempt's delivery carried (sundial/shared/tracing.py)
    limit_wait_ms: int | None = None  # how long its limit key held the occurrence back before it started
    extra: bool | None = None  # True: a triggered run, not an instant of the schedule


class Job(BaseModel):
    """A job as stored. Instants are UTC epoch milliseconds."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str | None = None
    status: JobStatus
    schedule: str | None = None
    timezone: str = "UTC"
    calendar: Calendar | None = None  # recurring: the local dates its schedule does not run on
    run_at: int | None = None  # one-off: the requested instant
    scheduled_at: int | None = None  # the current occurrence's scheduled instant
    due_at: int | None = None  # when it runs next: the occurrence, or its retry
    priority: Priority = Priority.MEDIUM
    target: Target
    payload: Any = None
    payload_stored_apart: bool = False
    retry: RetryPolicy = RetryPolicy()
    misfire_policy: MisfirePolicy = MisfirePolicy.RUN_ONCE
    overlap_policy: OverlapPolicy = OverlapPolicy.SKIP
    # each occurrence starts inside [instant, instant + window) (shared.schedules.windows)
    window_seconds: int = 0
    start_at: int | None = None
    end_at: int | None = None
    attempt: int = 0  # attempts started for the current occurrence
    # attempts of the current occurrence before its latest retry (POST /retry): the retry policy
    # counts from here, while attempt numbers go on, so each attempt keeps its own history item
    retried_after: int = 0
    paused: bool = False
    cancel_requested: bool = False
    # acknowledged triggers whose extra runs wait behind the current occurrence, each started as
    # soon as the one before it ends (docs/design.md, "What a user action does to what waits")
    triggers: int = 0
    extra_run: bool = False  # the current occurrence is a triggered extra run
    backfill_run: bool = False  # ... and it is a backfilled instant, not a triggered run
    # backfilled instants waiting to run, oldest first, each as soon as the one before it ends
    backfill: tuple[int, ...] = ()
    token: str | None = None
    lease_until: int | None = None
    started_at: int | None = None  # the running attempt's start
    worker: str | None = None  # who runs it
    # The job resumes here after the triggered extra run, or after the retry a new run_at waits behind.
    deferred_at: int | None = None
    last_run: RunSummary | None = None
    idempotency_key: str | None = None
    # the W3C traceparent of the call that last scheduled it: each attempt's delivery carries its trace
    traceparent: str | None = None
    # where a dead occurrence's summary goes, and after how many dead occurrences in a row (None: each)
    on_dead: AlertRoute | None = None
    on_failure_streak: int | None = None
    alert_on_missed: bool = False  # the route also hears of instants missed (misfire, overlap)
    created_at: int
    updated_at: int
    version: int = 0  # bumped by every write: what the API's read-decide-write guards on
    revision: int = 0  # bumped by user actions only: what an attempt's settle guards on
    resent: int = 0  # how often the current queued message was sent again after its lease ran out
    health: Health = Health.OK
    consecutive_failures: int = 0  # occurrences in a row that died; a success resets it
    # the bulk operation whose action last changed it: a slice repeated after a crash knows it acted
    operation: str | None = None
    # the limit key it shares a limit with (docs/api.md, "Limits"); the running attempt's slot, as
    # "<shard>#<key>", when it took one; when its key first held the queued occurrence back; and how
    # long the key held the running attempt back
    limit_key: str | None = None
    limit_slot: str | None = None
    limit_held_since: int | None = None
    limit_wait_ms: int | None = None
    # What the occurrence ledger derives the instants nobody ran from (docs/design.md, "Every instant
    # accounted for"): its latest pause, when a cancel was asked, where its current schedule
    # begins (None: at its creation), and how many instants it missed (misfire or overlap)
    paused_at: int | None = None
    resumed_at: int | None = None  # the end of the latest pause (paused_at its start)
    cancelled_at: int | None = None
    schedule_since: int | None = None
    missed: int = 0

    @property
    def is_recurring(self) -> bool:
        return recurring_schedule(self.schedule)


class Run(RunSummary):
    """A history item: one attempt of one occurrence of one job."""

    job_id: str

    @classmethod
    def of(cls, job_id: str, summary: RunSummary) -> Run:
        return cls(job_id=job_id, **summary.model_dump())


class Operation(BaseModel):
    """A bulk action over the jobs a filter matches, or over a list of ids, run a slice at a time.

    `slice` holds the ids being acted on: written before the first of them is acted on, so a runner
    that crashes mid-slice leaves them for the next, which acts again only on those not yet marked
    with this operation (Job.operation). `cursor` is where the next slice starts: the listing's
    next_token, or the offset into `ids`."""

    id: str
    action: BulkAction
    filter: dict[str, str] | None = None
    ids: list[str] | None = None
    who: str | None = None  # the caller's IAM principal, when the stage has one
    state: OperationState = OperationState.RUNNING
    cursor: str | None = None
    exhausted: bool = False  # every slice has been listed
    slice: list[str] = Field(default_factory=list)
    matched: int | None = None  # as the first slice's listing counted them
    matched_is_estimate: bool = False
    done: int = 0
    refused: int = 0
    refusals: list[Refusal] = Field(default_factory=list)  # the first ones, up to a bound
    created_at: int
    updated_at: int
    finished_at: int | None = None
    version: int = 0


def recurring_schedule(schedule: str | None) -> bool:
    """A schedule that repeats: any but none and a one-off `at(...)`."""
    return schedule is not None and not schedule.strip().startswith("at(")
