"""The words of the HTTP API that the domain speaks too: statuses, priorities and policies.

Defined here, in the contract, so that a client reads them without the service; the domain imports
them from here.
"""

from __future__ import annotations

from enum import StrEnum


class Priority(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class JobStatus(StrEnum):
    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DEAD = "dead"
    CANCELLED = "cancelled"


class OverlapPolicy(StrEnum):
    """What a recurring job does with an occurrence that falls due while the previous one runs."""

    SKIP = "skip"  # drop it
    BUFFER = "buffer"  # run it when the previous one has finished, never two at once
    ALLOW = "allow"  # start it on time beside the previous one: refused by the API for now


class MisfirePolicy(StrEnum):
    """What a recurring job does about occurrences missed while the system was down or the job paused."""

    RUN_ONCE = "run_once"  # run the latest missed occurrence once, late; drop the earlier ones
    SKIP = "skip"  # drop every missed occurrence; continue with the next one not yet missed
    RUN_ALL = "run_all"  # run every missed occurrence, one after another


class RunStatus(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DEAD = "dead"
    LOST = "lost"  # the worker vanished with the lease; the scheduler reclaimed the job
    TIMED_OUT = "timed_out"


class Health(StrEnum):
    """How a job's occurrences have been ending (docs/api.md, "Health")."""

    OK = "ok"
    FAILING = "failing"  # its last attempt failed and a retry waits
    DEAD = "dead"  # its last occurrence died (a recurring job goes on to the next one)


class BulkAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    RETRY = "retry"
    TRIGGER = "trigger"


class OperationState(StrEnum):
    RUNNING = "running"
    DONE = "done"


class OccurrenceState(StrEnum):
    """Where one instant of a job's schedule stands (docs/api.md, "Occurrences")."""

    RAN = "ran"  # its last attempt ended
    RUNNING = "running"
    WAITING = "waiting"  # not started yet, queued, or between retries
    SKIPPED = "skipped"  # it will not run: `reason` says why


class SkipReason(StrEnum):
    """Why an instant did not run, or waits while paused. Misfire and overlap are missed runs: the
    user did not choose them, so they are counted and may alarm."""

    PAUSED = "paused"
    OVERLAP = "overlap"  # the previous occurrence still ran, policy skip
    MISFIRE = "misfire"  # missed while the system was down or the job late, per the misfire policy
    CALENDAR = "calendar"  # its date is excluded by the job's calendar
    CANCELLED = "cancelled"
    NOT_OWED = "not_owed"  # before the job (or its current schedule) existed, never backfilled

    @property
    def is_missed(self) -> bool:
        return self in (SkipReason.MISFIRE, SkipReason.OVERLAP)
