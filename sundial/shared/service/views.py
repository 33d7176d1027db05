"""The service's answers built from domain objects: each contract body (sundial/contract/) from the
job, run or operation it shows."""

from __future__ import annotations

from typing import Any

from pydantic import PrivateAttr

from sundial.contract.bulk import OperationView
from sundial.contract.jobs import BackfillView, Effect, JobView, LastRun, RunView
from sundial.contract.vocabulary import JobStatus, OperationState
from sundial.shared.clock import format_rfc3339
from sundial.shared.lifecycle import waiting_triggers
from sundial.shared.lifecycle.backfill import BackfillPlan
from sundial.shared.models import Job, Operation, Run, RunSummary
from sundial.shared.service.conditions import etag
from sundial.shared.targets.models import masked


class TaggedJobView(JobView):
    """A job as an answer shows it, with its entity tag, which the API answers as its ETag header."""

    _etag: str | None = PrivateAttr(default=None)

    @property
    def etag(self) -> str | None:
        return self._etag

    def tagged(self, tag: str) -> TaggedJobView:
        self._etag = tag
        return self


def etag_of(view: JobView) -> str | None:
    """The entity tag of the job a view shows, when the service built the view."""
    return view.etag if isinstance(view, TaggedJobView) else None


def job_view(job: Job, payload: Any, effects: list[Effect] | None = None) -> JobView:
    view = TaggedJobView(
        id=job.id,
        name=job.name,
        status=job.status,
        schedule=job.schedule,
        timezone=job.timezone,
        run_at=_time(job.run_at),
        next_run_at=_time(_next_run_at(job)),
        calendar=job.calendar,
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
        on_dead=masked(job.on_dead) if job.on_dead is not None else None,
        on_failure_streak=job.on_failure_streak,
        alert_on_missed=job.alert_on_missed,
        window_seconds=job.window_seconds,
        last_run=last_run_view(job.last_run) if job.last_run else None,
        created_at=format_rfc3339(job.created_at),
        updated_at=format_rfc3339(job.updated_at),
        health=job.health,
        consecutive_failures=job.consecutive_failures,
        triggers_waiting=waiting_triggers(job),
        missed=job.missed,
        effects=effects or [],
        limit_key=job.limit_key,
        waiting_on_limit_since=_time(job.limit_held_since) if job.status is JobStatus.QUEUED else None,
    )
    return view.tagged(etag(job))


def last_run_view(run: RunSummary) -> LastRun:
    return LastRun(
        scheduled_at=format_rfc3339(run.scheduled_at),
        status=run.status.value,
        started_at=_time(run.started_at),
        finished_at=_time(run.finished_at),
        error=run.error,
    )


def run_view(run: Run) -> RunView:
    return RunView(
        scheduled_at=format_rfc3339(run.scheduled_at),
        attempt=run.attempt,
        status=run.status.value,
        started_at=_time(run.started_at),
        finished_at=_time(run.finished_at),
        error=run.error,
        worker=run.worker,
        trace_id=run.trace_id,
        limit_wait_ms=run.limit_wait_ms,
    )


def operation_view(operation: Operation) -> OperationView:
    left: int | None = None
    if operation.state is OperationState.DONE:
        left = 0
    elif operation.matched is not None:
        left = max(0, operation.matched - operation.done - operation.refused)
    return OperationView(
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


def _next_run_at(job: Job) -> int | None:
    waiting = job.status in (JobStatus.PENDING, JobStatus.FAILED, JobStatus.QUEUED)
    return job.due_at if waiting and not job.paused else None


def _time(epoch_ms: int | None) -> str | None:
    return format_rfc3339(epoch_ms) if epoch_ms is not None else None


def backfill_view(job_id: str, from_ms: int, done: BackfillPlan, dry_run: bool, job: JobView) -> BackfillView:
    """A backfill's answer: what it ran, skipped and found run already; the job unless a dry run."""
    return BackfillView(
        job_id=job_id,
        from_=format_rfc3339(from_ms),
        to=format_rfc3339(done.until),
        instants=[format_rfc3339(instant) for instant in done.runs],
        skipped=[format_rfc3339(instant) for instant in done.skipped],
        already=[format_rfc3339(instant) for instant in done.already],
        dry_run=dry_run,
        job=None if dry_run else job,
    )
