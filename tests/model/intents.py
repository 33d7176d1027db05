"""What the user was told about each job, and the invariants that hold it to those answers.

Each check is a pure function of one job as read and its Intent; it returns the violations it finds,
as sentences (empty: the invariant holds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.models import Job, JobStatus
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
    # The acknowledged ones among them: each must run once, unless a later cancel or pause drops it.
    owed_triggers: list[tuple[int, int]] = field(default_factory=list)
    patched_at: list[int] = field(default_factory=list)
    patched_run_at: set[int] = field(default_factory=set)  # run_at instants a PATCH asked for
    triggered_at: set[int] = field(default_factory=set)  # instants a trigger was asked at
    succeeded: dict[int, int] = field(default_factory=dict)  # occurrence → when its success was kept
    # The step a one-off was first seen finished, until a trigger or retry revives it.
    finished_at_step: int | None = None
    finished_as: JobStatus | None = None

    def started(self, scheduled_at: int) -> tuple[int, int] | None:
        """A new occurrence started at `scheduled_at`: the trigger it is the extra run of, if any
        (the latest asked by then), is no longer pending."""
        extra = max((t for t in self.triggers if t[0] <= scheduled_at), default=None)
        if extra is not None:
            self.triggers.remove(extra)
        owed = max((t for t in self.owed_triggers if t[0] <= scheduled_at), default=None)
        if owed is not None:
            self.owed_triggers.remove(owed)
        return extra

    def dropped(self) -> None:
        """An acknowledged pause or cancel drops the extra runs asked before it."""
        self.triggers.clear()
        self.owed_triggers.clear()

    def revived(self) -> None:
        """A trigger or a retry (answered, or perhaps applied) may run a finished one-off again."""
        self.finished_at_step = None
        self.finished_as = None


def trigger_not_held(job: Job, intent: Intent) -> list[str]:
    """6b. An acknowledged trigger is held by the job until its extra run starts: as the flag on a
    running attempt, or as the waiting occurrence at (or just after) its instant, the schedule's
    own occurrence deferred behind it. A later cancel or pause drops it (Intent.dropped)."""
    if not intent.owed_triggers or job.status is JobStatus.CANCELLED or job.cancel_requested:
        return []
    if job.status is JobStatus.RUNNING and job.trigger_requested:
        return []
    found = []
    for instant, step in intent.owed_triggers:
        waiting = job.status in (JobStatus.PENDING, JobStatus.QUEUED) and job.attempt == 0
        extra = waiting and (job.scheduled_at or 0) >= instant
        if extra and (job.deferred_at is not None or not job.is_recurring):
            continue
        found.append(
            f"{short(job.id)}: the trigger acknowledged at step {step} (t={instant}) is gone: the job is "
            f"{job.status.value} at {job.scheduled_at} (attempt {job.attempt}, deferred to "
            f"{job.deferred_at}, trigger flag {job.trigger_requested}), no extra run pending"
        )
    return found[:1]


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
