"""What a user's call did to what was waiting: a triggered run, a retry, the occurrence a triggered
run put off. Read from the job as the call found it and as it left it, so that the answer says what
happened, not what was meant (docs/design.md, "What a user action does to what waits")."""

from __future__ import annotations

from typing import Literal

from sundial.contract.jobs import Effect
from sundial.contract.vocabulary import JobStatus
from sundial.shared.clock import format_rfc3339
from sundial.shared.lifecycle import unstarted_extra, waiting_triggers
from sundial.shared.models import Job

Action = Literal["update", "cancel", "pause", "resume", "trigger", "retry", "backfill"]


def effects_of(action: Action, before: Job, after: Job, now_ms: int) -> list[Effect]:
    """The effects of `action`, which found the job as `before` and left it as `after`."""
    if action == "trigger":
        return [_triggered(before, after, now_ms)]
    found = [*_on_triggers(action, before, after), *_on_retry(action, before, after, now_ms)]
    return found + _on_deferred(action, before, after)


def _triggered(before: Job, after: Job, now_ms: int) -> Effect:
    if _retry_waiting(before) and not _due(before, now_ms) and _due(after, now_ms):
        return Effect(subject="retry", fate="runs_now", at=_at(after.due_at), message="its retry runs now")
    waiting = waiting_triggers(after)
    if waiting == 1 and unstarted_extra(after):
        resumes = f"; the schedule resumes at {_at(after.deferred_at)}" if after.deferred_at else ""
        return Effect(subject="trigger", fate="runs_now", at=_at(after.due_at), message=f"runs now{resumes}")
    return Effect(subject="trigger", fate="waits", count=waiting, message=_behind(after, waiting))


def _behind(job: Job, waiting: int) -> str:
    if job.status is JobStatus.RUNNING:
        ahead = "the running attempt"
    elif unstarted_extra(job):
        ahead = "the triggered run before it"
    else:
        ahead = "this occurrence, whose retry is due"
    earlier = waiting - 1 - (1 if unstarted_extra(job) else 0)
    queue = f" and {earlier} triggered run{'s' if earlier != 1 else ''} before it" if earlier > 0 else ""
    return f"runs as soon as {ahead}{queue} ended; one attempt at a time"


def _on_triggers(action: Action, before: Job, after: Job) -> list[Effect]:
    had, has = waiting_triggers(before), waiting_triggers(after)
    if action in ("cancel", "pause") and had > has:
        why = "a cancel" if action == "cancel" else "a pause"
        return [
            Effect(subject="trigger", fate="dropped", count=had - has, message=f"{why} drops triggered runs")
        ]
    if action == "update" and has:
        return [
            Effect(subject="trigger", fate="kept", count=has, message="still runs; a change never drops one")
        ]
    return []


def _on_retry(action: Action, before: Job, after: Job, now_ms: int) -> list[Effect]:
    if not _retry_waiting(before):
        return []
    if after.status is JobStatus.CANCELLED or after.cancel_requested:
        return [Effect(subject="retry", fate="dropped", message="a cancel drops the retry")]
    if action == "pause" and after.due_at is None:
        return [Effect(subject="retry", fate="held", message="held until resume, which runs it at once")]
    if action == "resume" and before.due_at is None and _due(after, now_ms):
        return [
            Effect(subject="retry", fate="runs_now", at=_at(after.due_at), message="the held retry runs now")
        ]
    if action == "update" and after.due_at is not None:
        return [
            Effect(
                subject="retry",
                fate="kept",
                at=_at(after.due_at),
                message="the retry already scheduled still runs; new retry settings decide what follows it",
            )
        ]
    return []


def _on_deferred(action: Action, before: Job, after: Job) -> list[Effect]:
    if before.deferred_at is None:
        if action == "update" and after.deferred_at is not None:
            # A new run_at on a job whose own occurrence retries (lifecycle.resumes_behind_retry).
            return [
                Effect(
                    subject="deferred_run",
                    fate="moved",
                    at=_at(after.deferred_at),
                    message="the new run_at runs once the retry already scheduled has ended",
                )
            ]
        return []
    if after.status is JobStatus.CANCELLED or after.cancel_requested:
        return [Effect(subject="deferred_run", fate="dropped", message="a cancel drops it")]
    if after.deferred_at is not None and after.deferred_at != before.deferred_at:
        return [
            Effect(
                subject="deferred_run",
                fate="moved",
                at=_at(after.deferred_at),
                message="the schedule resumes here after the triggered run",
            )
        ]
    if action == "pause" and after.deferred_at is None and after.scheduled_at == before.deferred_at:
        return [
            Effect(
                subject="deferred_run",
                fate="held",
                at=_at(before.deferred_at),
                message="it is the current occurrence again, held while paused",
            )
        ]
    return []


def _retry_waiting(job: Job) -> bool:
    return job.attempt > 0 and job.status in (JobStatus.FAILED, JobStatus.QUEUED)


def _due(job: Job, now_ms: int) -> bool:
    return job.due_at is not None and job.due_at <= now_ms


def _at(instant: int | None) -> str | None:
    return format_rfc3339(instant) if instant is not None else None
