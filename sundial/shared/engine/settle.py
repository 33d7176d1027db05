"""Writing where a job goes after an attempt, deciding again when a user action came first, and
dispatching at once what falls due before the next tick."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol

from botocore.exceptions import BotoCoreError, ClientError

from sundial.contract.vocabulary import JobStatus
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.patience import Patience
from sundial.shared.errors import StaleDelivery
from sundial.shared.lifecycle import Placement
from sundial.shared.models import Job, RunSummary
from sundial.shared.store import new_token

logger = logging.getLogger(__name__)
# A user may act between our read and our write; after this many rounds the attempt gives up and
# the lease decides (the job is never left without one).
REDECIDE_ROUNDS = 5


class FinishWrite(Protocol):
    def __call__(
        self, job: Job, token: str, placement: Placement, run: RunSummary, next_token: str | None
    ) -> Job: ...


def settle(
    write: FinishWrite,
    job: Job,
    token: str,
    decide: Callable[[Job], Placement],
    record: Callable[[Placement], RunSummary],
    engine: EngineContext,
    patience: Patience,
) -> tuple[Job, Placement, RunSummary]:
    """Writes `decide(job)` conditional on the token and on no user action since `job` was read.

    When a cancel, pause or resume came in between (the token still ours), decides again from the
    job as it now is, so the write never overwrites an intent it did not see. A due time inside the
    horizon is claimed in the same write and sent right after (invariant 6). A throttle or an AWS
    fault is ridden out with `patience`, repeating the same write, which recognises itself if an
    earlier try was applied. The job returned may already show a user's action that came after the
    write. Raises StaleDelivery when the token is no longer ours (a zombie)."""
    for _ in range(REDECIDE_ROUNDS):
        placement = decide(job)
        run = record(placement)
        next_token = new_token() if placement.dispatches_now(engine.clock.now_ms()) else None
        try:
            updated = patience.call(
                partial(write, job, token, placement, run, next_token), f"settling job {job.id}"
            )
        except StaleDelivery as exc:
            current = exc.current
            if current is None or current.status is not JobStatus.RUNNING or current.token != token:
                raise
            job = current
            continue
        if next_token is not None:
            assert placement.due_at is not None  # a placement that dispatches has a due time
            send(engine, [JobMessage.placed(job, next_token, placement.due_at)])
        return updated, placement, run
    raise StaleDelivery(f"job '{job.id}' kept changing while its attempt settled")


def send(engine: EngineContext, messages: Sequence[JobMessage]) -> int:
    """Sends queued jobs' messages; a job whose message could not be sent is released to the next
    tick at once (the send may still have gone out: the fence drops the duplicate). Returns the
    number of messages that failed."""
    failed = engine.dispatcher.send(messages)
    release(engine, failed)
    return len(failed)


def release(engine: EngineContext, failed: Sequence[JobMessage]) -> None:
    """Releases the queued jobs of messages that could not be sent to the next tick at once."""
    for message in failed:
        try:
            engine.store.release(message.job_id, message.token, engine.clock.now_ms())
        except StaleDelivery:
            pass  # it moved on already (fenced by a copy that did go out, or changed by a user)
        except (ClientError, BotoCoreError):
            logger.warning("job %s waits for its lease after a failed send", message.job_id, exc_info=True)
