"""The worker's side of one delivery: wait for the instant, fence, run the target, settle.

Nothing runs before the fence (QUEUED+token → RUNNING) succeeds, and nothing is recorded after the
lease was lost: a duplicate, stale or zombie delivery can change nothing (invariants 4 and 5).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from shared import constants as c
from shared import lifecycle
from shared.clock import Clock, format_rfc3339
from shared.dispatch import Dispatcher, JobMessage
from shared.engine.heartbeat import Heartbeat
from shared.engine.settle import FinishWrite, settle
from shared.errors import StaleDelivery
from shared.lifecycle import Placement
from shared.models import Job, JobStatus, Run, RunStatus, RunSummary
from shared.store import JobStore
from shared.targets import Delivery

SECOND_MS = 1000
# A message this much earlier than its instant goes back to the queue instead of holding a worker.
MAX_EARLY_WAIT_MS = 3 * SECOND_MS

Deliver = Callable[[Job, Delivery], None]


class DeferralFailed(RuntimeError):
    """An early message could not be sent on again; the delivery must fail so SQS keeps it."""


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # a retry is scheduled
    DEAD = "dead"
    DROPPED = "dropped"  # duplicate or stale delivery: the fence refused it
    DEFERRED = "deferred"  # arrived too early: sent again with a delay
    LEASE_LOST = "lease_lost"  # the lease moved on while running: nothing recorded


@dataclass(frozen=True)
class AttemptResult:
    outcome: Outcome
    job_id: str
    attempt: int = 0
    lateness_ms: int | None = None  # start instant minus due instant
    error: str | None = None


class Worker:
    def __init__(
        self,
        store: JobStore,
        dispatcher: Dispatcher,
        clock: Clock,
        deliver: Deliver,
        worker_id: str,
        sleep: Callable[[float], None] = time.sleep,
        heartbeat_seconds: float = c.HEARTBEAT_EVERY_SECONDS,
    ) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._clock = clock
        self._deliver = deliver
        self._worker_id = worker_id
        self._sleep = sleep
        self._heartbeat_seconds = heartbeat_seconds

    def process(self, message: JobMessage) -> AttemptResult:
        """Handles one delivery end to end. Raises only for infrastructure errors (the message is
        then redelivered, and the fence makes the redelivery safe)."""
        early_ms = message.due_at - self._clock.now_ms()
        if early_ms > MAX_EARLY_WAIT_MS:
            if self._dispatcher.send([message]):
                # Keep this copy: failing the delivery leaves it to SQS rather than to the lease.
                raise DeferralFailed(f"could not send job '{message.job_id}' on with a delay")
            return AttemptResult(Outcome.DEFERRED, message.job_id)
        if early_ms > 0:
            self._sleep(early_ms / SECOND_MS)
        try:
            job = self._store.fence(
                message.job_id, message.token, self._worker_id, self._clock.now_ms(), None
            )
        except StaleDelivery:
            return AttemptResult(Outcome.DROPPED, message.job_id)
        return self._run(job, message.token)

    def _run(self, job: Job, token: str) -> AttemptResult:
        started = job.started_at or self._clock.now_ms()
        lateness = started - (job.due_at or started)
        delivery = self._delivery(job)
        heartbeat = Heartbeat(self._store, job, token, self._clock, self._heartbeat_seconds)
        with heartbeat:
            error = self._attempt(job, delivery)
        if heartbeat.lost:
            return AttemptResult(Outcome.LEASE_LOST, job.id, job.attempt, lateness, error)
        try:
            outcome = self._finish(job, token, started, error)
        except StaleDelivery:
            return AttemptResult(Outcome.LEASE_LOST, job.id, job.attempt, lateness, error)
        return AttemptResult(outcome, job.id, job.attempt, lateness, error)

    def _delivery(self, job: Job) -> Delivery:
        scheduled = format_rfc3339(job.scheduled_at if job.scheduled_at is not None else job.due_at or 0)
        return Delivery(
            job_id=job.id,
            scheduled_at=scheduled,
            attempt=job.attempt,
            idempotency_key=f"{job.id}:{scheduled}",
            payload=self._store.load_payload(job),
        )

    def _attempt(self, job: Job, delivery: Delivery) -> str | None:
        """Runs the target within the job's timeout; returns the error text, or None on success."""
        outcome: list[str | None] = []
        fatal: list[BaseException] = []

        def run() -> None:
            try:
                self._deliver(job, delivery)
                outcome.append(None)
            except Exception as exc:  # every failure of a target is the job's failure
                outcome.append(str(exc)[: c.ERROR_TEXT_LIMIT] or type(exc).__name__)
            except BaseException as exc:  # an exit or interrupt ends the worker, not the job
                fatal.append(exc)

        thread = threading.Thread(target=run, name=f"job-{job.id}", daemon=True)
        thread.start()
        # The targets enforce the timeout themselves; this is the backstop for a python handler.
        thread.join(job.retry.timeout_seconds + 1)
        if fatal:
            raise fatal[0]
        if not outcome:
            return f"timed out after {job.retry.timeout_seconds} s"
        return outcome[0]

    def _finish(self, job: Job, token: str, started: int, error: str | None) -> Outcome:
        """Settles the job first, then writes the history item: a crash in between can leave an
        attempt out of the history (the job's last_run still has it), but the history never shows
        a success that the job did not keep."""
        now_ms = self._clock.now_ms()
        if error is None:
            run = self._summary(job, started, now_ms, RunStatus.SUCCEEDED, None)
            self._settle(self._store.complete, job, token, lifecycle.after_success(job, now_ms), run)
            return Outcome.SUCCEEDED
        if lifecycle.is_dead(job):
            run = self._summary(job, started, now_ms, RunStatus.DEAD, error)
            self._settle(self._store.kill, job, token, lifecycle.after_death(job, now_ms), run)
            self._dispatcher.send_dead(job, error)
            return Outcome.DEAD
        run = self._summary(job, started, now_ms, RunStatus.FAILED, error)
        placement = lifecycle.after_failure(job, now_ms)
        self._settle(self._store.fail, job, token, placement, run)
        return Outcome.FAILED if placement.status is JobStatus.FAILED else Outcome.SUCCEEDED

    def _settle(
        self, write: FinishWrite, job: Job, token: str, placement: Placement, run: RunSummary
    ) -> None:
        settle(write, job, token, placement, run, self._dispatcher, self._clock)
        self._store.put_run(Run.of(job.id, run))

    def _summary(
        self, job: Job, started: int, finished: int, status: RunStatus, error: str | None
    ) -> RunSummary:
        return RunSummary(
            scheduled_at=job.scheduled_at if job.scheduled_at is not None else started,
            attempt=job.attempt,
            status=status,
            started_at=started,
            finished_at=finished,
            error=error,
            worker=self._worker_id,
        )
