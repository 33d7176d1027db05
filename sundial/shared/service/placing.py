"""A job's place in time: a new job's first occurrence, and where new timing puts a job."""

from __future__ import annotations

from typing import Any

from ulid import ULID

from sundial.contract.jobs import JobCreate, JobUpdate
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.clock import format_rfc3339
from sundial.shared.errors import Conflict, InvalidInput
from sundial.shared.lifecycle import Placement
from sundial.shared.lifecycle.job_schedule import job_schedule, no_occurrence_left
from sundial.shared.models import Job, RetryPolicy
from sundial.shared.schedules import first_occurrence
from sundial.shared.service.alert_routes import check_alert_route
from sundial.shared.service.requests import (
    TIMING_FIELDS,
    check_job_window,
    refuse_allow,
    refuse_oversized_payload,
    timing,
)
from sundial.shared.store import new_token
from sundial.shared.targets import check_target
from sundial.shared.targets.models import check_form


def new_job(
    spec: JobCreate,
    now_ms: int,
    payload_size: int,
    *,
    allow_private: bool,
    forbidden_queue_urls: frozenset[str],
    traceparent: str | None,
) -> Job:
    """A job as `spec` asks, placed at its first occurrence from `now_ms`. Raises InvalidInput or
    PayloadTooLarge naming the field at fault."""
    if spec.run_at is not None and spec.schedule is not None:
        raise InvalidInput("run_at and schedule are exclusive: send one", field="run_at")
    refuse_allow(spec.overlap_policy)
    refuse_oversized_payload(spec.target, payload_size)
    check_form(spec.target, local_stack=allow_private)
    check_target(spec.target, allow_private=allow_private, forbidden_queue_urls=forbidden_queue_urls)
    fields = timing(spec.model_dump(include=set(TIMING_FIELDS)), now_ms)
    job = Job(
        id=str(ULID()),
        name=spec.name,
        status=JobStatus.PENDING,
        target=spec.target,
        payload=spec.payload,
        payload_stored_apart=payload_size > c.INLINE_PAYLOAD_BYTES,
        priority=spec.priority,
        retry=RetryPolicy(
            max_retries=spec.max_retries,
            backoff=tuple(spec.backoff),
            timeout_seconds=spec.timeout_seconds,
        ),
        misfire_policy=spec.misfire_policy,
        overlap_policy=spec.overlap_policy,
        window_seconds=spec.window_seconds,
        limit_key=spec.limit_key,
        created_at=now_ms,
        updated_at=now_ms,
        traceparent=traceparent,
        on_dead=spec.on_dead,
        on_failure_streak=spec.on_failure_streak,
        alert_on_missed=spec.alert_on_missed,
        **fields,
    )
    check_job_window(job)
    check_alert_route(
        job, new_route=True, allow_private=allow_private, forbidden_queue_urls=forbidden_queue_urls
    )
    # From the instant the job was created at, read once: a rate's first run is one period after
    # it, to the millisecond, which is what the occurrence ledger counts from.
    first = replacement(job, now_ms)
    return _placed(job, first, now_ms)


def replacement(job: Job, now_ms: int) -> Placement:
    """Where a job with new timing goes: its first occurrence from now."""
    if job.schedule is None:
        instant = job.run_at or now_ms
        due = max(lifecycle.start_of(job, instant), now_ms)
        return Placement(JobStatus.PENDING, instant, None if job.paused else due, 0)
    first = first_occurrence(job_schedule(job), now_ms, job.start_at, job.end_at)
    if first is None:
        raise no_occurrence_left(job, now_ms)
    due = lifecycle.start_of(job, first)
    return Placement(JobStatus.PENDING, first, None if job.paused else due, 0)


def rewindowed(job: Job, updated: Job, now_ms: int) -> Placement | None:
    """The current occurrence at its start under a new window, while it has not run yet."""
    if not lifecycle.replaces_occurrence(job) or job.scheduled_at is None or job.paused:
        return None
    start = max(lifecycle.start_of(updated, job.scheduled_at), now_ms)
    return Placement(JobStatus.PENDING, job.scheduled_at, start, 0)


def _placed(job: Job, placement: Placement, now_ms: int) -> Job:
    fields: dict[str, Any] = {"scheduled_at": placement.scheduled_at, "due_at": placement.due_at}
    if placement.dispatches_now(now_ms) and placement.due_at is not None:
        lease = lifecycle.queued_lease(placement.due_at, now_ms, job.retry.timeout_seconds)
        fields.update(status=JobStatus.QUEUED, token=new_token(), lease_until=lease)
    elif placement.waits_ahead(now_ms) and placement.due_at is not None:
        fields.update(token=new_token(), lease_until=lifecycle.ahead_lease(placement.due_at))
    return job.model_copy(update=fields)


def refuse_moving_onto_a_run(job: Job, moved_to: int | None, patch: JobUpdate) -> None:
    """New timing may not put an occurrence (or the schedule's resumption) on one that ran already."""
    field = "run_at" if "run_at" in patch.model_fields_set else "schedule"
    if moved_to is not None and job.deferred_at is not None and moved_to == job.scheduled_at:
        # The triggered run's instant names it: two runs on one instant would share its key.
        raise Conflict(
            f"job '{job.id}' has a triggered run at {format_rfc3339(moved_to)}; a change may not put "
            "its occurrence on that same instant",
            field=field,
        )
    ran = job.last_run.scheduled_at if job.last_run else None
    if moved_to is None or ran is None or moved_to > ran:
        return
    raise Conflict(
        f"job '{job.id}' already ran its occurrence at {format_rfc3339(ran)}; a change may only "
        "move it to a later instant",
        field=field,
    )
