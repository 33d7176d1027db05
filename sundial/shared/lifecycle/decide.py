"""Where a job goes after each event: pure functions of the job as read and `now`.

The store applies a Placement with one conditional write (its row in the table says which); when
that write finds the job changed by a user action, the caller decides again from the job as it now is.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from sundial.contract.vocabulary import JobStatus, MisfirePolicy, OverlapPolicy, SkipReason
from sundial.shared import constants as c
from sundial.shared.backoff import retry_delay_seconds
from sundial.shared.lifecycle.job_schedule import job_schedule
from sundial.shared.lifecycle.skips import Skip, passed_over
from sundial.shared.models import Job
from sundial.shared.schedules import following_occurrence, start_instant

SECOND_MS = 1000
GRACE_MS = c.MISFIRE_GRACE_SECONDS * SECOND_MS


@dataclass(frozen=True)
class Placement:
    """A job's next state. `due_at` None keeps it out of the due index (terminal, paused).

    `alert` marks the end of an occurrence as DEAD: the write that applies it records an owed alert.
    `skipped` are the stretches of the series it passes over without running them: the write that
    applies it records them (shared.lifecycle.skips).
    """

    status: JobStatus
    scheduled_at: int | None
    due_at: int | None
    attempt: int
    clear_deferred: bool = False
    alert: bool = False
    defer_to: int | None = None  # an extra run now; the schedule resumes here after it
    retried_after: int | None = None  # set by a retry; None keeps the job's (a new occurrence: 0)
    extra: bool = False  # the occurrence placed is a triggered extra run
    triggers: int | None = None  # the triggers left waiting; None keeps the job's
    backfill: tuple[int, ...] | None = None  # the backfilled instants left waiting; None keeps the job's
    skipped: tuple[Skip, ...] = ()
    backfilled: bool = False  # the extra run placed is a backfilled instant, not a triggered run

    def dispatches_now(self, now_ms: int) -> bool:
        """True when the due time falls before a job would wait ahead: the writer dispatches it
        itself (every due time before the next tick's horizon, and no tick claims the rest)."""
        return (
            self.status in (JobStatus.PENDING, JobStatus.FAILED)
            and self.due_at is not None
            and self.due_at <= now_ms + c.WRITER_DISPATCH_SECONDS * SECOND_MS
        )

    def waits_ahead(self, now_ms: int) -> bool:
        """True when the due time is far enough that the tick sends the message without a claim: the
        job waits with its token and an implied lease (see shared.engine.scheduler)."""
        return (
            self.status in (JobStatus.PENDING, JobStatus.FAILED)
            and self.due_at is not None
            and self.due_at > now_ms + c.WRITER_DISPATCH_SECONDS * SECOND_MS
        )


# --- an attempt ends -----------------------------------------------------------------------------


def after_success(job: Job, now_ms: int, started_ms: int) -> Placement:
    """The next occurrence, SUCCEEDED for a one-off, CANCELLED when a cancel was asked meanwhile."""
    return _move_on(job, now_ms, started_ms, JobStatus.SUCCEEDED)


def after_failure(
    job: Job, now_ms: int, started_ms: int, rng: random.Random | None = None, not_before: int = 0
) -> Placement:
    """A retry after the backoff (never before `not_before`) while attempts remain; else the
    occurrence ends DEAD. A cancel asked meanwhile ends it CANCELLED; a pause holds the retry."""
    if job.cancel_requested or is_dead(job):
        return _move_on(job, now_ms, started_ms, JobStatus.DEAD)
    if job.triggers:  # a trigger asked while it ran: the retry is that run, now (and even if paused)
        due = max(now_ms, not_before)
        return Placement(JobStatus.FAILED, job.scheduled_at, due, job.attempt, triggers=job.triggers - 1)
    backoff = retry_delay_seconds(job.retry.backoff, _retry_attempt(job), rng)
    due = max(now_ms + round(backoff * SECOND_MS), not_before)
    return Placement(JobStatus.FAILED, job.scheduled_at, _unless_paused(job, due), job.attempt)


def after_lost(job: Job, now_ms: int) -> Placement:
    """A running attempt whose worker vanished: retried at once (the attempt was counted at its fence)."""
    started = job.started_at or now_ms
    if job.cancel_requested or is_dead(job):
        return _move_on(job, now_ms, started, JobStatus.DEAD)
    if job.triggers:
        return Placement(JobStatus.FAILED, job.scheduled_at, now_ms, job.attempt, triggers=job.triggers - 1)
    return Placement(JobStatus.FAILED, job.scheduled_at, _unless_paused(job, now_ms), job.attempt)


def is_dead(job: Job) -> bool:
    """True when the attempts of the current occurrence are used up."""
    return _retry_attempt(job) > job.retry.max_retries


def _retry_attempt(job: Job) -> int:
    """The attempt's number as the retry policy counts it: from the latest retry."""
    return job.attempt - job.retried_after


def _move_on(job: Job, now_ms: int, started_ms: int, outcome: JobStatus) -> Placement:
    """The end of an occurrence; the first trigger waiting behind it starts its extra run now."""
    placement = _end(job, now_ms, started_ms, outcome)
    if placement.status is JobStatus.CANCELLED:
        return placement
    if not job.triggers:
        return _next_backfill(job, now_ms, placement)
    resume_at = placement.scheduled_at if placement.status is JobStatus.PENDING else None
    extra = extra_instant(job, now_ms, resume_at)
    return Placement(
        JobStatus.PENDING,
        extra,
        now_ms,
        0,
        resume_at is None,
        placement.alert,
        defer_to=resume_at,
        extra=True,
        triggers=job.triggers - 1,
        skipped=placement.skipped,
    )


def _end(job: Job, now_ms: int, started_ms: int, outcome: JobStatus) -> Placement:
    alert = outcome is JobStatus.DEAD and not job.cancel_requested
    if job.cancel_requested:
        return cancelled(job)
    if job.deferred_at is not None:
        # A triggered extra run is over: the schedule resumes where it was.
        due = _unless_paused(job, start_of(job, job.deferred_at))
        return Placement(JobStatus.PENDING, job.deferred_at, due, 0, clear_deferred=True, alert=alert)
    following = next_occurrence(job, started_ms, now_ms)
    skipped = _passed_over_after(job, started_ms, following)
    if following is None:
        return Placement(outcome, job.scheduled_at, None, job.attempt, alert=alert, skipped=skipped)
    due = _unless_paused(job, start_of(job, following))
    return Placement(JobStatus.PENDING, following, due, 0, alert=alert, skipped=skipped)


def cancelled(job: Job) -> Placement:
    """CANCELLED where the job's own series stands, the runs waiting dropped. Behind an extra run,
    started or not, that is the occurrence it deferred: left at the extra run's instant, the series
    would read as counted from there, and the instants before it as run."""
    if job.extra_run and job.deferred_at is not None:
        return Placement(JobStatus.CANCELLED, job.deferred_at, None, 0, True, triggers=0, backfill=())
    return Placement(JobStatus.CANCELLED, job.scheduled_at, None, job.attempt, True, triggers=0, backfill=())


def _passed_over_after(job: Job, started_ms: int, following: int | None) -> tuple[Skip, ...]:
    """The instants between an occurrence that ended and the next one: those due before its attempt
    started were missed (it started late); those due while it ran overlapped it."""
    if not job.is_recurring or job.scheduled_at is None:
        return ()
    during = SkipReason.OVERLAP if job.overlap_policy is OverlapPolicy.SKIP else SkipReason.MISFIRE
    return passed_over(job, job.scheduled_at + 1, following, during, started_ms, SkipReason.MISFIRE)


def _next_backfill(job: Job, now_ms: int, placement: Placement) -> Placement:
    """The first backfilled instant waiting starts now (held while paused), and the schedule resumes
    where `placement` puts it. When the schedule has ended, what waits is dropped: nothing would
    resume after it."""
    if not job.backfill:
        return placement
    if placement.status is not JobStatus.PENDING:
        return replace(placement, backfill=())
    first, *rest = job.backfill
    return Placement(
        JobStatus.PENDING,
        first,
        _unless_paused(job, now_ms),
        0,
        alert=placement.alert,
        defer_to=placement.scheduled_at,
        extra=True,
        backfilled=True,
        backfill=tuple(rest),
        skipped=placement.skipped,
    )


def is_backfill_run(job: Job) -> bool:
    """True when the current occurrence is a backfilled one, not a triggered run. Jobs placed before
    backfills could take skipped instants know it by the instant alone: before the job existed."""
    if not job.extra_run:
        return False
    return job.backfill_run or (job.scheduled_at is not None and job.scheduled_at < job.created_at)


def is_triggered_run(job: Job) -> bool:
    """True when the current occurrence is a triggered run: its instant is the moment it was asked,
    which the schedule may hold too, so its history says so (RunSummary.extra)."""
    return job.extra_run and not is_backfill_run(job)


def _unless_paused(job: Job, due_at: int) -> int | None:
    return None if job.paused else due_at


# --- occurrences: misfire and overlap ------------------------------------------------------------


def next_occurrence(job: Job, started_ms: int, now_ms: int) -> int | None:
    """The occurrence after the current one, which started at `started_ms` and ended at `now_ms`.

    Occurrences that fell due while it ran are overlaps: `skip` drops them, `buffer` keeps them
    under the misfire policy. Those already due before it started are misfires (it started late):
    the misfire policy alone decides them. None when the schedule has no more.
    """
    if not job.is_recurring or job.schedule is None or job.scheduled_at is None:
        return None
    policy = MisfirePolicy(job.misfire_policy)
    if policy is MisfirePolicy.RUN_ONCE and start_of(job, job.scheduled_at) < started_ms - GRACE_MS:
        policy = MisfirePolicy.SKIP  # this late run was the one run of what was missed
    if job.overlap_policy is OverlapPolicy.BUFFER:
        return _following(job, now_ms, policy, GRACE_MS)
    before_start = _following(job, started_ms, policy, GRACE_MS)
    if before_start is not None and start_of(job, before_start) <= started_ms:
        return before_start
    return _following(job, now_ms, MisfirePolicy.SKIP, 0)


def catch_up(job: Job, now_ms: int, grace_ms: int = GRACE_MS) -> int | None:
    """The occurrence to run instead of the current one when it is missed (more than `grace_ms` late):
    run_all keeps it, run_once takes the latest one due by now, skip the first one not missed (which
    may lie ahead). None when skip finds the schedule ended. A retry or a triggered run is kept."""
    scheduled = job.scheduled_at
    policy = MisfirePolicy(job.misfire_policy)
    if (
        not job.is_recurring
        or scheduled is None
        or job.attempt
        or job.extra_run
        or job.deferred_at is not None
    ):
        return scheduled
    if start_of(job, scheduled) >= now_ms - grace_ms or policy is MisfirePolicy.RUN_ALL:
        return scheduled
    if policy is MisfirePolicy.SKIP:
        return _following(job, now_ms, MisfirePolicy.SKIP, grace_ms)
    # "Due by now" includes an instant due at this very millisecond: the search stops before its cutoff.
    latest = _following(job, now_ms + 1, MisfirePolicy.RUN_ONCE, 0)
    return latest if latest is not None and start_of(job, latest) <= now_ms else scheduled


def caught_up(job: Job, now_ms: int) -> Placement | None:
    """Where a just-claimed job goes when its occurrence was missed; None to run it as it is."""
    target = catch_up(job, now_ms)
    if target == job.scheduled_at:
        return None
    assert job.scheduled_at is not None
    skipped = passed_over(job, job.scheduled_at, target, SkipReason.MISFIRE)
    if target is None:
        return Placement(JobStatus.SUCCEEDED, job.scheduled_at, None, 0, skipped=skipped)
    return Placement(JobStatus.PENDING, target, max(start_of(job, target), now_ms), 0, skipped=skipped)


def _following(job: Job, now_ms: int, policy: MisfirePolicy, grace_ms: int) -> int | None:
    assert job.schedule is not None and job.scheduled_at is not None
    return following_occurrence(
        job_schedule(job),
        job.scheduled_at,
        now_ms,
        policy,
        job.start_at,
        job.end_at,
        grace_ms,
        lambda instant: start_of(job, instant),
    )


def start_of(job: Job, instant_ms: int) -> int:
    """When the occurrence at `instant_ms` starts: its instant, or later inside the job's spread
    window. Lateness, misfires and the worker's wait are all measured against this."""
    if not job.window_seconds:
        return instant_ms
    schedule = job_schedule(job) if job.is_recurring and job.schedule else None
    return start_instant(job.id, instant_ms, job.window_seconds, schedule)


def extra_instant(job: Job, now_ms: int, resume_at: int | None) -> int:
    """A triggered run's instant, which names its occurrence (and its idempotency key): never one the
    job ran or will run, even when the trigger comes on the very millisecond of one."""
    taken = {job.scheduled_at, resume_at, job.last_run.scheduled_at if job.last_run else None}
    instant = now_ms
    while instant in taken:
        instant += 1
    return instant
