"""What the user was told about each job, and the invariants that hold it to those answers.

Each check is a pure function of one job as read and its Intent; it returns the violations it finds,
as sentences (empty: the invariant holds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sundial.contract.vocabulary import JobStatus
from sundial.shared import lifecycle
from sundial.shared.models import Job
from tests.model.checks import short

FINISHED = (JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED)
# Statuses in which a one-off runs (or is about to): never again once it finished, unless revived.
RUNNABLE = (JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.FAILED)


@dataclass
class Intent:
    """What the user was told about one job: acknowledged calls, by time."""

    cancelled_at: int | None = None
    cancelled_step: int | None = None
    paused_since: int | None = None
    paused_at_step: int = 0
    # Trigger calls whose extra run has not started yet: (instant, step), acknowledged or not.
    triggers: list[tuple[int, int]] = field(default_factory=list)
    # Acknowledged triggers whose runs have not started: each runs once, unless a cancel or pause
    # drops it (after a call whose answer was lost, the job's own count is taken).
    owed: int = 0
    patched_at: list[int] = field(default_factory=list)
    patched_run_at: set[int] = field(default_factory=set)  # run_at instants a PATCH asked for
    triggered_at: set[int] = field(default_factory=set)  # instants a trigger was asked at
    succeeded: dict[int, int] = field(default_factory=dict)  # occurrence → when its success was kept
    # The step a one-off was first seen finished, until a trigger or retry revives it.
    finished_at_step: int | None = None
    finished_as: JobStatus | None = None
    revisited_at_step: int | None = None  # the step a user last gave the finished one-off new timing

    def started(self, scheduled_at: int) -> tuple[int, int] | None:
        """A new occurrence started at `scheduled_at`: the trigger it is the extra run of, if any
        (the latest asked by then), is no longer pending."""
        extra = max((t for t in self.triggers if t[0] <= scheduled_at), default=None)
        if extra is not None:
            self.triggers.remove(extra)
        return extra

    def dropped(self) -> None:
        """An acknowledged pause or cancel drops the extra runs asked before it."""
        self.triggers.clear()
        self.owed = 0

    def revived(self) -> None:
        """A trigger or a retry (answered, or perhaps applied) may run a finished one-off again."""
        self.finished_at_step = None
        self.finished_as = None


def triggers_lost(before: Job | None, job: Job, intent: Intent) -> list[str]:
    """6b. Every acknowledged trigger runs once, unless a later cancel or pause drops it: the job
    holds as many waiting triggers as the model counts (acknowledged, not started, not dropped). One
    may go between two reads only as the retry of an attempt that was running (docs/design.md: that
    retry is the trigger's run)."""
    waiting = lifecycle.waiting_triggers(job)
    if waiting == intent.owed:
        return []
    # An attempt ran (from the last read, or within the step: a fence and its settle) and its
    # occurrence now waits for, or runs, its retry.
    retried = (
        before is not None
        and job.scheduled_at == before.scheduled_at
        and job.attempt > 0
        and (
            job.attempt > before.attempt
            or (before.status is JobStatus.RUNNING and job.status in (JobStatus.FAILED, JobStatus.QUEUED))
        )
        and job.status in (JobStatus.FAILED, JobStatus.QUEUED, JobStatus.RUNNING)
    )
    owed, intent.owed = intent.owed, waiting
    if retried and waiting == owed - 1:
        return []
    what = "is gone" if waiting < owed else "was never acknowledged"
    return [
        f"{short(job.id)}: {owed} acknowledged trigger(s) wait by the model's count, the job holds "
        f"{waiting}: one {what} ({job.status.value} at {job.scheduled_at}, attempt {job.attempt}, "
        f"triggers {job.triggers}, extra run {job.extra_run}, deferred to {job.deferred_at})"
    ]


def one_off_revived(job: Job, intent: Intent, step: int) -> list[str]:
    """8. A finished one-off never runs again (a PATCH of its timing included); only a trigger or a
    retry of a dead one starts it anew. Records the step it is first seen finished."""
    if job.is_recurring:
        return []
    if job.status in FINISHED and job.status is not JobStatus.CANCELLED:
        if intent.finished_at_step is None:
            intent.finished_at_step, intent.finished_as = step, job.status
        return []
    if intent.finished_at_step is None or job.status not in RUNNABLE:
        return []
    patched = [t for t in intent.patched_at]
    why = f" (PATCHed at {patched})" if patched else ""
    return [
        f"{short(job.id)} finished {intent.finished_as.value if intent.finished_as else ''} at step "
        f"{intent.finished_at_step}, yet is {job.status.value} again at {job.scheduled_at} with no trigger "
        f"or retry since{why}"
    ]


def pause_let_through(job: Job, intent: Intent) -> list[str]:
    """3b. After an acknowledged pause the job sends nothing to start: it is queued only for a run a
    trigger asked since the pause (docs/design.md), never for its next occurrence or a held retry. A
    start is checked at its fence too; this finds the message as it is queued, before any delivery."""
    paused = intent.paused_since
    if paused is None or not job.paused or job.status is not JobStatus.QUEUED:
        return []
    if any(asked >= paused for asked in intent.triggered_at):
        return []
    return [
        f"{short(job.id)} was paused (acknowledged at {paused}), yet is queued to start {job.scheduled_at} "
        f"attempt {job.attempt} with no trigger since"
    ]
