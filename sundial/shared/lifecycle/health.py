"""A job's health after a settle: how its occurrences have been ending (docs/api.md, "Health")."""

from __future__ import annotations

from typing import Any

from sundial.contract.vocabulary import Health, JobStatus, RunStatus
from sundial.shared.constants import History
from sundial.shared.lifecycle.decide import Placement
from sundial.shared.models import Job, RunSummary


def health_after(job: Job, placement: Placement, outcome: RunStatus) -> dict[str, Any]:
    """The health fields a settle writes: a success makes the job healthy and resets the count; an
    occurrence that dies counts one more in a row; a failed attempt with a retry waiting is failing,
    unless the occurrence before already died (it stays dead until one succeeds)."""
    if outcome is RunStatus.SUCCEEDED:
        return {"health": Health.OK, "consecutive_failures": 0}
    if placement.alert:
        return {"health": Health.DEAD, "consecutive_failures": job.consecutive_failures + 1}
    if placement.status is JobStatus.FAILED and job.health is not Health.DEAD:
        return {"health": Health.FAILING}
    return {}


def route_owed(job: Job, placement: Placement) -> int | None:
    """The dead occurrences in a row when an occurrence's death owes the job's route its summary:
    every death, or with `on_failure_streak` N the one that makes N in a row (once a streak: a
    success starts the count again). None when no route alert is owed."""
    if not placement.alert or job.on_dead is None:
        return None
    in_a_row = job.consecutive_failures + 1  # as health_after counts it in the same write
    if job.on_failure_streak is not None and in_a_row != job.on_failure_streak:
        return None
    return in_a_row


def kept_in_history(history: History, job: Job, run: RunSummary) -> bool:
    """Whether an attempt leaves a history item: every one but a recurring job's success under
    History.FAILURES, which only its last_run keeps (at one a minute, its history would be most of
    the table)."""
    return history is History.ALL or run.status is not RunStatus.SUCCEEDED or not job.is_recurring
