"""Writing where a job goes next, and dispatching it at once when that is before the next tick."""

from __future__ import annotations

from typing import Protocol

from shared.clock import Clock
from shared.dispatch import Dispatcher, JobMessage
from shared.lifecycle import Placement
from shared.models import Job, RunSummary
from shared.store import new_token


class FinishWrite(Protocol):
    def __call__(
        self, job: Job, token: str, placement: Placement, run: RunSummary, next_token: str | None
    ) -> Job: ...


def settle(
    write: FinishWrite,
    job: Job,
    token: str,
    placement: Placement,
    run: RunSummary,
    dispatcher: Dispatcher,
    clock: Clock,
) -> Job:
    """Applies `placement` with `write` (conditional on token); a due time inside the horizon is
    claimed in the same write and sent right after (invariant 6). Raises StaleDelivery."""
    next_token = new_token() if placement.dispatches_now(clock.now_ms()) else None
    updated = write(job, token, placement, run, next_token)
    if next_token is not None:
        dispatcher.send([JobMessage.for_job(updated)])
    return updated
