"""Where a job goes when its user acts on it (cancel, pause, resume, trigger, retry, a change of
timing): pure functions of the job as read and `now`, as the engine's own events are in decide.py."""

from __future__ import annotations

from sundial.contract.vocabulary import JobStatus, RunStatus, SkipReason
from sundial.shared import constants as c
from sundial.shared.errors import Conflict
from sundial.shared.lifecycle.decide import (
    GRACE_MS,
    Placement,
    cancelled,
    catch_up,
    extra_instant,
    is_backfill_run,
    start_of,
)
from sundial.shared.lifecycle.skips import Skip, passed_over
from sundial.shared.models import Job


def on_cancel(job: Job) -> Placement | None:
    """CANCELLED at once, the waiting triggers with it; None while an attempt runs: the flag ends it
    when the attempt settles (and drops the triggers then)."""
    if job.status is JobStatus.RUNNING:
        return None
    return cancelled(job)


def on_pause(job: Job) -> Placement | None:
    """Out of the due index, and every waiting trigger dropped: a triggered run not yet started
    gives its place back to the occurrence it deferred (a queued message is dropped at its fence).
    None when only the flag changes: a running attempt finishes, a finished job stays so."""
    if unstarted_extra(job) and is_backfill_run(job):
        return Placement(JobStatus.PENDING, job.scheduled_at, None, 0)  # held, as the rest waiting are
    if unstarted_extra(job):
        return _extra_dropped(job)
    if job.status in (JobStatus.PENDING, JobStatus.FAILED):
        return Placement(job.status, job.scheduled_at, None, job.attempt)
    if job.status is JobStatus.QUEUED:
        return Placement(_waiting_status(job), job.scheduled_at, None, job.attempt)
    return None


def _extra_dropped(job: Job) -> Placement:
    """Where a job goes when its triggered run, not yet started, is dropped: back to the occurrence
    it deferred, or, when it ran on a finished job, back to how that job had ended."""
    if job.deferred_at is not None:
        return Placement(JobStatus.PENDING, job.deferred_at, None, 0, clear_deferred=True)
    last = job.last_run
    ended = JobStatus.DEAD if last is not None and last.status is RunStatus.DEAD else JobStatus.SUCCEEDED
    scheduled = last.scheduled_at if last is not None else job.scheduled_at
    return Placement(ended, scheduled, None, last.attempt if last is not None else 0)


def on_resume(job: Job, now_ms: int) -> Placement | None:
    """Back into the due index: a held retry runs now, a missed occurrence as its misfire policy
    says. None when only the flag changes (queued, running or finished)."""
    if job.status is JobStatus.FAILED:
        return Placement(JobStatus.FAILED, job.scheduled_at, now_ms, job.attempt)
    if job.status is not JobStatus.PENDING:
        return None
    target = resume_target(job, now_ms)
    skipped = _passed_over_while_paused(job, target)
    if target is None:
        return Placement(JobStatus.SUCCEEDED, job.scheduled_at, None, 0, skipped=skipped)
    if job.backfill and job.attempt == 0 and not unstarted_extra(job):
        # Backfilled while paused: the first of those runs starts now, and the schedule resumes
        # behind it where its misfire policy puts it, as a backfill on a running schedule does.
        first, *rest = job.backfill
        return Placement(
            JobStatus.PENDING,
            first,
            now_ms,
            0,
            defer_to=target,
            extra=True,
            backfilled=True,
            backfill=tuple(rest),
            skipped=skipped,
        )
    start = max(start_of(job, target), now_ms)
    return Placement(JobStatus.PENDING, target, start, job.attempt, skipped=skipped)


def resume_target(job: Job, now_ms: int) -> int | None:
    """Where a resume now puts a paused job's series: every instant that fell due before now is
    missed, however short the pause (the pause said not to run them on time), and the misfire
    policy decides what of them runs: run_all each, run_once the latest, skip none."""
    return catch_up(job, now_ms, grace_ms=0)


def _passed_over_while_paused(job: Job, target: int | None) -> tuple[Skip, ...]:
    """What a resume passes over: the instants due from the pause on (and those less than the grace
    late when it began) were paused; any missed before it (the job was late already) were missed."""
    if target == job.scheduled_at or job.scheduled_at is None:
        return ()
    late_before = None if job.paused_at is None else job.paused_at - GRACE_MS
    return passed_over(job, job.scheduled_at, target, SkipReason.PAUSED, late_before, SkipReason.MISFIRE)


def on_trigger(job: Job, now_ms: int) -> Placement | None:
    """One extra occurrence now; the schedule resumes after it where it was (`defer_to`). A retry
    waiting for its backoff runs now instead. None when the extra run must wait behind the current
    occurrence (a running attempt, a triggered run not yet started, a retry due already): the store
    counts it in `triggers`, and each starts as soon as the one before it ends (one job never runs
    two attempts at once). Raises Conflict when cancelled or when MAX_WAITING_TRIGGERS wait."""
    if job.status is JobStatus.CANCELLED:
        raise Conflict(f"job '{job.id}' is cancelled; create a new job to run it again")
    if job.cancel_requested:
        # Acknowledged, the cancel holds: the running attempt is the last, so a run waiting behind
        # it would never start.
        raise Conflict(
            f"job '{job.id}' is being cancelled: its running attempt is its last; create a new job "
            "to run it again"
        )
    if waiting_triggers(job) >= c.MAX_WAITING_TRIGGERS:
        raise Conflict(
            f"job '{job.id}' has {c.MAX_WAITING_TRIGGERS} triggered runs waiting already; each runs in "
            "turn: trigger it again once one has started"
        )
    if job.status is JobStatus.RUNNING or unstarted_extra(job):
        return None
    if job.attempt > 0 and job.status in (JobStatus.FAILED, JobStatus.QUEUED):
        if job.due_at is not None and job.due_at <= now_ms:
            return None  # its retry is due already: the extra run follows this occurrence
        return Placement(JobStatus.FAILED, job.scheduled_at, now_ms, job.attempt)
    if job.status in (JobStatus.PENDING, JobStatus.QUEUED):
        resume_at = job.deferred_at or job.scheduled_at
        extra = extra_instant(job, now_ms, resume_at)
        return Placement(JobStatus.PENDING, extra, now_ms, 0, defer_to=resume_at, extra=True)
    extra = extra_instant(job, now_ms, None)
    return Placement(JobStatus.PENDING, extra, now_ms, 0, clear_deferred=True, extra=True)


def unstarted_extra(job: Job) -> bool:
    """True when the current occurrence is a triggered extra run whose first attempt has not started."""
    return job.extra_run and job.status in (JobStatus.PENDING, JobStatus.QUEUED) and job.attempt == 0


def waiting_triggers(job: Job) -> int:
    """Acknowledged triggers whose runs have not started: the current occurrence when it is one, and
    those waiting behind it. None once a cancel was asked: it drops them all."""
    if job.cancel_requested or job.status is JobStatus.CANCELLED:
        return 0
    return job.triggers + (1 if unstarted_extra(job) and not is_backfill_run(job) else 0)


def on_retry(job: Job, now_ms: int) -> Placement:
    """A dead job's occurrence again, now, with its retry policy afresh. Raises Conflict unless dead.

    Attempt numbers go on from the dead attempt's, so the history keeps every attempt apart."""
    if job.status is not JobStatus.DEAD:
        raise Conflict(f"job '{job.id}' is {job.status.value}, not dead; only dead jobs can be retried")
    return Placement(
        JobStatus.PENDING,
        job.scheduled_at,
        now_ms,
        job.attempt,
        clear_deferred=True,
        retried_after=job.attempt,
    )


def timing_change_refusal(job: Job, changed: Job) -> str | None:
    """Why a change of schedule or run time cannot apply to this job now (making it `changed`), or
    None when it can.

    A change takes effect from the next occurrence: a finished one-off or a cancelled job has none,
    and a one-off retrying its only occurrence keeps it. A paused job may not become a one-off: only
    a recurring job resumes, so it would stay paused, and never run, for good."""
    if job.status is JobStatus.CANCELLED:
        return f"job '{job.id}' is cancelled; create a new job instead"
    if job.status is JobStatus.DEAD:
        return f"job '{job.id}' is dead; retry it (POST /jobs/{job.id}/retry) or create a new job"
    if job.status is JobStatus.SUCCEEDED:
        return f"job '{job.id}' has finished; create a new job to run it again"
    if job.attempt > 0 and not job.is_recurring:
        return f"job '{job.id}' is retrying its run; change its timing after the retries end, or cancel it"
    if job.extra_run and job.deferred_at is None:
        return f"job '{job.id}' has finished and runs a triggered run now; create a new job to run it again"
    if job.paused and not changed.is_recurring:
        return (
            f"job '{job.id}' is paused, and a one-off cannot be: resume it (POST /jobs/{job.id}/resume), "
            "then set run_at"
        )
    return None


def replaces_occurrence(job: Job) -> bool:
    """True when new timing moves the current occurrence: it has not run an attempt yet, and it is
    not a triggered run (new timing moves where the schedule resumes after that instead)."""
    return job.status in (JobStatus.PENDING, JobStatus.QUEUED) and job.attempt == 0 and not job.extra_run


def resumes_behind_retry(job: Job, changed: Job) -> bool:
    """True when a change of timing makes a job whose own occurrence retries a one-off: the retry runs
    as the occurrence it is, and the new run_at waits behind it as a deferred run, as behind a
    triggered run. A change to another schedule needs none: the settle finds the next occurrence from
    the schedule the job has then, but a one-off has no series to find its instant in."""
    return job.attempt > 0 and not job.extra_run and job.is_recurring and not changed.is_recurring


def _waiting_status(job: Job) -> JobStatus:
    return JobStatus.FAILED if job.attempt > 0 else JobStatus.PENDING
