"""Request and response bodies of the HTTP API about jobs, runs and schedules (docs/api.md). The
OpenAPI document comes from these; the service builds the answers (sundial/shared/service/views.py)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
)
from pydantic_core import PydanticCustomError

from sundial.contract.bounds import (
    DEFAULT_BACKOFF,
    LONGEST_TIMEOUT_SECONDS,
    MAX_EARLY_WAIT_SECONDS,
    MAX_FAILURE_STREAK,
    MAX_WINDOW_SECONDS,
    RANGE_TEXT,
    SETTLE_HEADROOM_SECONDS,
    WORKER_FUNCTION_TIMEOUT_SECONDS,
    in_range,
)
from sundial.contract.calendar import Calendar
from sundial.contract.limits import LimitKey
from sundial.contract.targets import AlertRoute, Target
from sundial.contract.vocabulary import Health, JobStatus, MisfirePolicy, OverlapPolicy, Priority

# A job id is a ULID in its canonical form: 26 Crockford base-32 characters, the first at most 7
# (a ULID is 128 bits). Anything else names no job.
JOB_ID_PATTERN = r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$"
JOB_ID_EXAMPLE = "01JD8ZQ3V6X4M7N2P5R8T1W9YB"

# RFC 3339 with an offset; pydantic alone would also take a number, or digits in a string, as Unix time.
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_INSTANT_FORM = "must be an RFC 3339 timestamp string with a timezone offset, such as 2026-12-01T09:00:00Z"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _instant_text(value: Any) -> Any:
    # A datetime comes from Python code building a request (the client); JSON never holds one.
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise PydanticCustomError("instant_form", _INSTANT_FORM)
    return value


def _instant_in_range(value: datetime) -> datetime:
    # An aware datetime (AwareDatetime), as epoch milliseconds.
    if not in_range(round(value.timestamp() * 1000)):
        raise PydanticCustomError("instant_range", f"must lie between {RANGE_TEXT}")
    return value


def _no_control_characters(value: str) -> str:
    if _CONTROL.search(value):
        raise PydanticCustomError("control_character", "must not contain control characters")
    return value


Instant = Annotated[
    AwareDatetime,
    BeforeValidator(_instant_text),
    AfterValidator(_instant_in_range),
    Field(description=f"An RFC 3339 string with an offset, between {RANGE_TEXT}."),
]
Name = Annotated[
    str,
    Field(max_length=200, description="A label, not unique; no control characters."),
    AfterValidator(_no_control_characters),
]
ScheduleText = Annotated[str, Field(min_length=1, max_length=256)]
ZoneName = Annotated[str, Field(min_length=1, max_length=64)]
# Strict: a JSON boolean or string is not an integer.
MaxRetries = Annotated[StrictInt, Field(ge=0, le=20)]
Backoff = Annotated[list[Annotated[StrictInt, Field(ge=0, le=86_400)]], Field(min_length=1, max_length=20)]


def _honourable_timeout(value: int) -> int:
    if value > LONGEST_TIMEOUT_SECONDS:
        raise PydanticCustomError(
            "timeout_too_long",
            f"must be at most {LONGEST_TIMEOUT_SECONDS}: an attempt runs inside one worker invocation of"
            f" {WORKER_FUNCTION_TIMEOUT_SECONDS} s, which may wait {MAX_EARLY_WAIT_SECONDS} s for the"
            f" job's instant and keeps {SETTLE_HEADROOM_SECONDS} s to record the outcome",
        )
    return value


WindowSeconds = Annotated[
    StrictInt,
    Field(
        ge=0,
        le=MAX_WINDOW_SECONDS,
        description="Each occurrence starts at an instant inside [scheduled, scheduled + window), fixed by "
        "the job id and the scheduled instant (and before the schedule's next instant); 0 starts on it.",
    ),
]
TimeoutSeconds = Annotated[
    StrictInt,
    # The maximum is checked by the validator, whose message says why; the schema still states it.
    Field(ge=1, json_schema_extra={"maximum": LONGEST_TIMEOUT_SECONDS}),
    AfterValidator(_honourable_timeout),
]


FailureStreak = Annotated[StrictInt, Field(ge=1, le=MAX_FAILURE_STREAK)]
ON_DEAD_TEXT = (
    "The job's alert route: an http, sqs or sns target that receives `{job_id, name, scheduled_at, "
    "attempts, error, consecutive_failures, trace_id}` when an occurrence dies, signed as deliveries are."
)
STREAK_TEXT = (
    "Recurring jobs with `on_dead`: the route hears only of the death that makes this many dead "
    "occurrences in a row, once a streak (a success starts it again)."
)


MISSED_ALERT_TEXT = (
    "Recurring jobs with `on_dead`: the route also hears of instants missed for a reason nobody chose "
    "(`misfire`, `overlap`), one notice per stretch passed over, with `kind: missed`."
)


CALENDAR_TEXT = (
    "Recurring jobs: the dates, in `timezone`, on which the schedule does not run (`exclude_dates`, and "
    "the public holidays of `holidays`); an occurrence on one is skipped."
)


LIMIT_KEY_TEXT = (
    "The limit key the job shares a limit with (PUT /limits/{key}); its attempts start only as the key's "
    "limit allows. A key with no limit is unlimited."
)


class JobCreate(BaseModel):
    """POST /jobs."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    run_at: Instant | None = None
    schedule: ScheduleText | None = None
    timezone: ZoneName = "UTC"
    calendar: Calendar | None = Field(default=None, description=CALENDAR_TEXT)
    target: Target
    on_dead: AlertRoute | None = Field(default=None, description=ON_DEAD_TEXT)
    on_failure_streak: FailureStreak | None = Field(default=None, description=STREAK_TEXT)
    alert_on_missed: StrictBool = Field(default=False, description=MISSED_ALERT_TEXT)
    payload: Any = None
    priority: Priority = Priority.MEDIUM
    max_retries: MaxRetries = 5
    backoff: Backoff = Field(default_factory=lambda: list(DEFAULT_BACKOFF))
    timeout_seconds: TimeoutSeconds = 300
    misfire_policy: MisfirePolicy = MisfirePolicy.RUN_ONCE
    overlap_policy: OverlapPolicy = OverlapPolicy.SKIP
    start_at: Instant | None = None
    end_at: Instant | None = None
    window_seconds: WindowSeconds = 0
    limit_key: LimitKey | None = Field(default=None, description=LIMIT_KEY_TEXT)


class JobUpdate(BaseModel):
    """PATCH /jobs/{id}: only the fields sent change."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    schedule: ScheduleText | None = None
    timezone: ZoneName | None = None
    calendar: Calendar | None = Field(default=None, description=f"{CALENDAR_TEXT} null removes it.")
    run_at: Instant | None = None
    on_dead: AlertRoute | None = Field(default=None, description=f"{ON_DEAD_TEXT} null removes it.")
    on_failure_streak: FailureStreak | None = Field(
        default=None, description=f"{STREAK_TEXT} null removes it."
    )
    alert_on_missed: StrictBool | None = Field(default=None, description=MISSED_ALERT_TEXT)
    payload: Any = None
    priority: Priority | None = None
    max_retries: MaxRetries | None = None
    backoff: Backoff | None = None
    timeout_seconds: TimeoutSeconds | None = None
    misfire_policy: MisfirePolicy | None = None
    overlap_policy: OverlapPolicy | None = None
    start_at: Instant | None = None
    end_at: Instant | None = None
    window_seconds: WindowSeconds | None = None
    limit_key: LimitKey | None = Field(default=None, description=f"{LIMIT_KEY_TEXT} null removes it.")


class PreviewRequest(BaseModel):
    """POST /schedules/preview."""

    model_config = ConfigDict(extra="forbid")

    schedule: ScheduleText
    timezone: ZoneName = "UTC"
    count: Annotated[StrictInt, Field(ge=1, le=100)] = 10
    after: Instant | None = None
    window_seconds: WindowSeconds = 0
    job_id: Annotated[str, Field(pattern=JOB_ID_PATTERN)] | None = Field(
        default=None,
        description="With `window_seconds`: the job whose start instants `starts` shows; each job's differ.",
    )
    calendar: Calendar | None = Field(
        default=None, description="A job's calendar: the runs leave out the occurrences it excludes."
    )
    explain: StrictBool = Field(
        default=False, description="Also answer `excluded`: the occurrences the calendar passed over."
    )


class PreviewResponse(BaseModel):
    next_runs: list[str] = Field(description="The scheduled instants, which name the occurrences.")
    starts: list[str] | None = Field(
        default=None,
        description="When each of `next_runs` starts: given a `job_id`, or without a window (the same "
        "instants); null for a window without a job id, since each job's start differs.",
    )
    excluded: list[str] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With `explain` only: the occurrences the calendar excluded among those the runs "
        "passed over (before the last of `next_runs`, or where the runs ended), at most 100.",
    )


class BackfillRequest(BaseModel):
    """POST /jobs/{id}/backfill."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: Instant = Field(alias="from", description="The window's start, included.")
    to: Instant = Field(
        description="The window's end, excluded; may lie in the future: only instants before the job's "
        "creation are backfilled (and, with `include_skipped`, those it skipped up to now)."
    )
    dry_run: bool = Field(default=False, description="Answer what would run, record and run nothing.")
    include_skipped: bool = Field(
        default=False,
        description="Also run the instants of the window that the job skipped while it existed because "
        "it was paused, missed them (`misfire`) or its calendar excluded them: each still runs once.",
    )


class LastRun(BaseModel):
    scheduled_at: str
    status: str
    started_at: str | None
    finished_at: str | None
    error: str | None


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
    calendar: Calendar | None = Field(default=None, description="The dates the schedule does not run on.")
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
    on_dead: AlertRoute | None = Field(default=None, description="The alert route, its secrets masked.")
    on_failure_streak: int | None = None
    alert_on_missed: bool = Field(default=False, description=MISSED_ALERT_TEXT)
    window_seconds: int = Field(default=0, description="The spread window; `next_run_at` is inside it.")
    last_run: LastRun | None
    created_at: str
    updated_at: str
    health: Health = Field(
        default=Health.OK,
        description="ok; failing: its last attempt failed and a retry waits; dead: its last occurrence died.",
    )
    consecutive_failures: int = Field(
        default=0, description="Occurrences in a row that died; a success resets it."
    )
    triggers_waiting: int = Field(
        default=0, description="Acknowledged triggers whose runs have not started; each runs in turn."
    )
    missed: int = Field(
        default=0,
        description="Instants of its schedule skipped for a reason nobody chose (`misfire`, `overlap`) "
        "since it was created: GET /jobs/{id}/occurrences lists them.",
    )
    effects: list[Effect] = Field(
        default_factory=list,
        description="What the call that answered did to a waiting trigger, retry or deferred run; "
        "empty on reads.",
    )
    limit_key: str | None = Field(default=None, description="The limit key it shares a limit with.")
    waiting_on_limit_since: str | None = Field(
        default=None,
        description="Its occurrence is due but held back by its limit key, since then; null otherwise.",
    )


class JobList(BaseModel):
    jobs: list[JobView]
    next_token: str | None
    # Optional for a client reading a server from before 1.1, which answers neither; this one always does.
    total: int | None = Field(default=None, description="Jobs that match the filters, as of the first page.")
    total_is_estimate: bool | None = Field(default=None, description="True when `total` is an estimate.")


class BackfillView(BaseModel):
    """What a backfill runs (docs/api.md, "Backfill")."""

    job_id: str
    from_: str = Field(alias="from", serialization_alias="from")
    to: str = Field(description="The window's end as used: `to`, or the job's creation when earlier.")
    instants: list[str] = Field(description="The occurrences that run, oldest first, one after another.")
    skipped: list[str] = Field(
        description="Recorded without a run: `overlap_policy: skip` runs only the latest of the window."
    )
    already: list[str] = Field(description="Backfilled by an earlier request: they run no more.")
    dry_run: bool
    job: JobView | None = Field(description="The job as it now is; null for a dry run.")

    model_config = ConfigDict(populate_by_name=True)


class RunView(BaseModel):
    scheduled_at: str
    attempt: int
    status: str
    started_at: str | None
    finished_at: str | None
    error: str | None
    worker: str | None
    trace_id: str | None = Field(
        default=None,
        description="The W3C trace id this attempt's delivery carried (its `traceparent`); null for "
        "an attempt recorded before traces.",
    )
    limit_wait_ms: int | None = Field(
        default=None, description="How long its limit key held the occurrence back before this attempt."
    )


class RunList(BaseModel):
    runs: list[RunView]
    next_token: str | None


class HealthView(BaseModel):
    status: Literal["ok"]
