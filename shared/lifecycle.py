"""The state machine: where a job goes after each event. Pure functions of the job and `now`.

The store applies a Placement with one conditional write; the engine decides which event happened.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from shared import constants as c
from shared.backoff import retry_delay_seconds
from shared.models import Job, JobStatus, OverlapPolicy
from shared.schedules import MisfirePolicy, following_occurrence, parse_schedule

SECOND_MS = 1000


@dataclass(frozen=True)
class Placement:
    """A job's next state. `due_at` None keeps it out of the due index (terminal, paused)."""

    status: JobStatus
    scheduled_at: int | None
    due_at: int | None
    attempt: int
    clear_deferred: bool = False

    def dispatches_now(self, now_ms: int) -> bool:
        """True when the due time falls before the next tick: the writer dispatches it itself."""
        return (
            self.status in (JobStatus.PENDING, JobStatus.FAILED)
            and self.due_at is not None
            and self.due_at <= now_ms + c.DISPATCH_HORIZON_SECONDS * SECOND_MS
        )


def lease_seconds(timeout_seconds: int) -> int:
    """How long a claim or heartbeat holds a job: long jobs heartbeat, so a lost worker is seen soon."""
    return min(timeout_seconds, c.LEASE_CHUNK_SECONDS) + c.LEASE_MARGIN_SECONDS


def after_success(job: Job, now_ms: int) -> Placement:
    """The placement after an attempt succeeded: the next occurrence, or SUCCEEDED for a one-off."""
    return _move_on(job, now_ms, JobStatus.SUCCEEDED)


def after_failure(job: Job, now_ms: int, rng: random.Random | None = None) -> Placement:
    """A retry after the job's backoff while attempts remain; else the dead path (DEAD, or move on)."""
    if job.cancel_requested or job.paused or job.attempt > job.retry.max_retries:
        return after_death(job, now_ms)
    delay = retry_delay_seconds(job.retry.backoff, job.attempt, rng)
    return Placement(JobStatus.FAILED, job.scheduled_at, now_ms + round(delay * SECOND_MS), job.attempt)


def after_death(job: Job, now_ms: int) -> Placement:
    """Dead is final for the occurrence; a recurring job still moves on to its next one."""
    return _move_on(job, now_ms, JobStatus.DEAD)


def is_dead(job: Job) -> bool:
    """True when the attempts of the current occurrence are used up."""
    return job.attempt > job.retry.max_retries


def after_lease_expired(job: Job, now_ms: int) -> Placement:
    """A lost attempt (RUNNING) was counted at its fence; a lost message (QUEUED) costs nothing."""
    if job.status is JobStatus.RUNNING and is_dead(job):
        return after_death(job, now_ms)
    return Placement(JobStatus.PENDING, job.scheduled_at, now_ms, job.attempt)


def is_skipped_misfire(job: Job, now_ms: int) -> bool:
    """A recurring occurrence missed by more than the grace (downtime) under the skip policy."""
    return (
        job.is_recurring
        and job.misfire_policy is MisfirePolicy.SKIP
        and job.attempt == 0
        and job.deferred_at is None
        and job.scheduled_at is not None
        and job.scheduled_at < now_ms - c.MISFIRE_GRACE_SECONDS * SECOND_MS
    )


def next_occurrence(job: Job, now_ms: int, policy: MisfirePolicy | None = None) -> int | None:
    """The following occurrence of a recurring job after its current one, honouring the policies."""
    if not job.is_recurring or job.schedule is None or job.scheduled_at is None:
        return None
    if policy is None:
        # Occurrences that fell due while the previous one ran are overlaps: skip drops them.
        overlap_skip = job.overlap_policy is OverlapPolicy.SKIP
        policy = MisfirePolicy.SKIP if overlap_skip else MisfirePolicy(job.misfire_policy)
    schedule = parse_schedule(job.schedule, job.timezone)
    return following_occurrence(
        schedule,
        job.scheduled_at,
        now_ms,
        policy,
        job.start_at,
        job.end_at,
        c.MISFIRE_GRACE_SECONDS * SECOND_MS,
    )


def _move_on(job: Job, now_ms: int, outcome: JobStatus) -> Placement:
    if job.cancel_requested:
        return Placement(JobStatus.CANCELLED, job.scheduled_at, None, job.attempt, clear_deferred=True)
    if job.deferred_at is not None:
        # A triggered extra run is over: the schedule resumes where it was.
        return Placement(JobStatus.PENDING, job.deferred_at, _unless_paused(job, job.deferred_at), 0, True)
    following = next_occurrence(job, now_ms)
    if following is None:
        return Placement(outcome, job.scheduled_at, None, job.attempt)
    return Placement(JobStatus.PENDING, following, _unless_paused(job, following), 0)


def _unless_paused(job: Job, due_at: int) -> int | None:
    return None if job.paused else due_at
