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


def kept_in_history(history: History, run: RunSummary) -> bool:
    """Whether an attempt leaves a history item: every one but a success under History.FAILURES,
    which only the job's last_run keeps (at one a minute, a recurring job's history would be most of
    the table; a one-off's success would cost it a write unit that its last_run already answers)."""
    return history is History.ALL or run.status is not RunStatus.SUCCEEDED


def shown_in_runs(history: History, job: Job, run: RunSummary) -> bool:
    """Whether the job's last run is among its runs: whenever it is kept in history, and a one-off's
    always, since its last_run holds what a history item of it would (under History.FAILURES a
    recurring job's successes are in no answer of runs, as documented)."""
    return kept_in_history(history, run) or not job.is_recurring
