"""The worker's side of one delivery: wait for the instant, fence, run the target, settle.

Nothing runs before the fence (QUEUED+token → RUNNING) succeeds, and nothing is recorded after the
lease was lost: a duplicate, stale or zombie delivery can change nothing (invariants 4 and 5). An
attempt's time limit nests inside the invocation's: a target still running when the attempt gives up
on it holds back its retry until the invocation (and with it the call) is over. Without an invocation
deadline nothing would end such a call, so the attempt waits for it: never two attempts of one job
at once, whoever calls the worker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import partial

from botocore.exceptions import BotoCoreError, ClientError

from sundial.contract.bounds import MAX_EARLY_WAIT_SECONDS, SETTLE_HEADROOM_SECONDS
from sundial.contract.vocabulary import RunStatus
from sundial.shared import constants as c
from sundial.shared import lifecycle, tracing
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.alerts import RouteSender, send_alert, send_route
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.gate import HeldBack, LimitGate
from sundial.shared.engine.heartbeat import Heartbeat
from sundial.shared.engine.patience import Patience
from sundial.shared.engine.settle import settle
from sundial.shared.errors import StaleDelivery
from sundial.shared.lifecycle import Placement
from sundial.shared.models import Job, Run, RunSummary
from sundial.shared.store import new_token, routes
from sundial.shared.store.jobs import FENCED_FROM
from sundial.shared.targets import Delivery, TargetTimedOut

logger = logging.getLogger(__name__)
SECOND_MS = 1000
# A message this much earlier than its instant goes back to the queue instead of holding a worker.
MAX_EARLY_WAIT_MS = MAX_EARLY_WAIT_SECONDS * SECOND_MS
# How long the settle and the history item ride out throttles and AWS faults; within the headroom,
# with time to spare for the send that follows and the alert.
SETTLE_PATIENCE_SECONDS = 20
# How long a fence rides them out: the job is late by as much, but starts.
FENCE_PATIENCE_SECONDS = 10

Deliver = Callable[[Job, Delivery, float], None]


class DeferralFailed(RuntimeError):
    """An early message could not be sent on again; the delivery must fail so SQS keeps it."""


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # the attempt failed or timed out; a retry may follow
    DEAD = "dead"
    DROPPED = "dropped"  # duplicate or stale delivery: the fence refused it
    DEFERRED = "deferred"  # arrived too early: sent again with a delay
    HELD = "held"  # its limit key held it back: sent again for when the key allows it
    LEASE_LOST = "lease_lost"  # the lease moved on while running: nothing recorded


@dataclass(frozen=True)
class AttemptResult:
    outcome: Outcome
    job_id: str
    attempt: int = 0
    # Start instant minus due instant: a job dated before its creation is due from its creation on, so
    # the start-lateness metric never counts the time before the job existed.
    lateness_ms: int | None = None
    error: str | None = None
    dead_in_a_row: int | None = None  # a recurring job's occurrence died: how many in a row have
    trace_id: str | None = None  # the trace the attempt's delivery carried
    # held back: how long until it looks again; started: how long its limit key held it back
    limit_wait_ms: int | None = None
    limit_key: str | None = None
    missed: int = 0  # instants of its schedule the settle passed over for a reason nobody chose


@dataclass(frozen=True)
class Settled:
    """How a settled attempt ended, and the instants of its schedule the settle passed over for a
    reason nobody chose (a misfire, an overlap)."""

    outcome: Outcome
    missed: int = 0


@dataclass(frozen=True)
class AttemptEnd:
    """How the target's call ended: `error` None is a success; `still_running` means the call
    outlived the attempt's limit and may go on until the invocation ends."""

    error: str | None
    timed_out: bool = False
    still_running: bool = False


class Worker:
    def __init__(
        self,
        engine: EngineContext,
        deliver: Deliver,
        worker_id: str,
        sleep: Callable[[float], None] = time.sleep,
        heartbeat_seconds: float = c.HEARTBEAT_EVERY_SECONDS,
        history: c.History = c.History.ALL,
        route: RouteSender | None = None,
    ) -> None:
        """`route` sends a job's owed route alerts (on_dead); without it they wait for a worker
        that has one."""
        self._engine = engine
        self._deliver = deliver
        self._worker_id = worker_id
        self._sleep = sleep
        self._heartbeat_seconds = heartbeat_seconds
        self._history = history
        self._route = route
        self._gate = LimitGate(engine)

    def process(self, message: JobMessage, deadline_ms: int | None = None) -> AttemptResult:
        """Handles one delivery end to end; `deadline_ms` is when the invocation ends (and with it
        any call still running), None when nothing ends it: a call that outlives its limit is then
        waited for. Raises only for infrastructure errors (the message is then redelivered; the
        fence makes that safe)."""
        early_ms = message.starts_after - self._engine.clock.now_ms()
        if early_ms > MAX_EARLY_WAIT_MS:
            if self._engine.dispatcher.send([message]):
                # Keep this copy: failing the delivery leaves it to SQS rather than to the lease.
                raise DeferralFailed(f"could not send job '{message.job_id}' on with a delay")
            return AttemptResult(Outcome.DEFERRED, message.job_id)
        if early_ms > 0:
            self._sleep(early_ms / SECOND_MS)
        try:
            job = self._fence_by_its_key(message)
        except StaleDelivery:
            return AttemptResult(Outcome.DROPPED, message.job_id)
        except HeldBack as held:
            return AttemptResult(
                Outcome.HELD, message.job_id, limit_wait_ms=held.delay_ms, limit_key=held.message.limit_key
            )
        return self._run(job, message.token, deadline_ms)

    def _fence_by_its_key(self, message: JobMessage) -> Job:
        """The fence, under the limit key the job names: a message that named another (one the tick
        built from an ahead row names none, or a PATCH changed the key since) is fenced again by the
        job's own key."""
        try:
            return self.fence(message)
        except StaleDelivery as exc:
            current = exc.current
            if (
                current is None
                or current.token != message.token
                or current.status not in FENCED_FROM
                or current.limit_key == message.limit_key
            ):
                raise
            keyed = {"limit_key": current.limit_key, "timeout_seconds": current.retry.timeout_seconds}
            return self.fence(message.model_copy(update=keyed))

    def fence(self, message: JobMessage) -> Job:
        """Takes the job for this delivery, riding out throttles and AWS faults for a few seconds:
        a fence left to SQS's redelivery would start the job minutes late. Raises StaleDelivery, or
        HeldBack when the job's limit key holds it back."""
        now_ms = self._engine.clock.now_ms()
        delivery_id = new_token()
        patience = Patience(self._engine.clock, self._sleep, now_ms + FENCE_PATIENCE_SECONDS * SECOND_MS)
        if message.limit_key is not None:
            gated = partial(self._gate.fence, message, self._worker_id, delivery_id)
            return patience.call(gated, f"fencing job {message.job_id} on its limit key")
        fence = partial(
            self._engine.store.fence,
            message.job_id,
            message.token,
            self._worker_id,
            now_ms,
            message.timeout_seconds,
            delivery_id,
        )
        return patience.call(fence, f"fencing job {message.job_id}")

    def _run(self, job: Job, token: str, deadline_ms: int | None) -> AttemptResult:
        started = job.started_at or self._engine.clock.now_ms()
        lateness = started - (job.due_at or started)
        limit = self._limit_seconds(job, deadline_ms)
        with Heartbeat(self._engine, job, token, self._heartbeat_seconds) as heartbeat:
            end = self._attempt(job, self._delivery(job), limit, outlives=deadline_ms is not None)
        trace_id = tracing.of_attempt(job).trace_id
        lost = AttemptResult(Outcome.LEASE_LOST, job.id, job.attempt, lateness, end.error, trace_id=trace_id)
        if heartbeat.lost:
            return lost
        # A call that may still run ends with the invocation, at its deadline: its retry waits for that.
        not_before = deadline_ms if end.still_running and deadline_ms is not None else 0
        try:
            settled = self.finish(job, token, started, end, not_before, deadline_ms, heartbeat.holder_ends)
        except StaleDelivery:
            return lost
        # The settle counted this death on the count the fence read (no other settle holds the token).
        outcome = settled.outcome
        streak = job.consecutive_failures + 1 if outcome is Outcome.DEAD and job.is_recurring else None
        return AttemptResult(
            outcome,
            job.id,
            job.attempt,
            lateness,
            end.error,
            streak,
            trace_id,
            job.limit_wait_ms,
            job.limit_key,
            settled.missed,
        )

    def _limit_seconds(self, job: Job, deadline_ms: int | None) -> float:
        """The job's timeout, cut to what the invocation has left after settling's headroom."""
        if deadline_ms is None:
            return float(job.retry.timeout_seconds)
        left = (deadline_ms - self._engine.clock.now_ms()) / SECOND_MS - SETTLE_HEADROOM_SECONDS
        limit = max(1.0, min(float(job.retry.timeout_seconds), left))
        if limit < job.retry.timeout_seconds:
            # Only a fence that rode out faults, or a job stored before the API's limit, gets here.
            logger.warning(
                "attempt %s of job %s gets %.0f s of its %d s timeout: the invocation ends sooner",
                job.attempt,
                job.id,
                limit,
                job.retry.timeout_seconds,
            )
        return limit

    def _delivery(self, job: Job) -> Delivery:
        scheduled = tracing.scheduled_text(job)
        return Delivery(
            job_id=job.id,
            scheduled_at=scheduled,
            attempt=job.attempt,
            idempotency_key=tracing.occurrence_key(job),
            payload=self._engine.store.load_payload(job),
            traceparent=tracing.of_attempt(job).header,
        )

    def _attempt(self, job: Job, delivery: Delivery, limit_seconds: float, outlives: bool) -> AttemptEnd:
        """Runs the target within `limit_seconds` (the targets enforce it; the join is the backstop).

        A call that ignores its limit cannot be stopped. With `outlives` (an invocation deadline will
        end it) the attempt gives up on it and says it may still run. Without, nothing but the call
        itself ends it: the attempt waits for it, under its heartbeat, so that no retry of the job can
        start beside it, and records it timed out whatever it returned."""
        ended: list[AttemptEnd] = []
        fatal: list[BaseException] = []

        def run() -> None:
            try:
                self._deliver(job, delivery, limit_seconds)
                ended.append(AttemptEnd(None))
            except (TargetTimedOut, TimeoutError) as exc:
                ended.append(AttemptEnd(_text(exc) or f"timed out after {limit_seconds:g} s", timed_out=True))
            except Exception as exc:  # every failure of a target is the job's failure
                ended.append(AttemptEnd(_text(exc) or type(exc).__name__))
            except BaseException as exc:  # an exit or interrupt ends the worker, not the job
                fatal.append(exc)

        thread = threading.Thread(target=run, name=f"job-{job.id}", daemon=True)
        thread.start()
        thread.join(limit_seconds + 1)
        overran = thread.is_alive()
        if overran and not outlives:
            logger.warning(
                "job %s: its call outlived its %g s limit; waiting for it to end", job.id, limit_seconds
            )
            thread.join()
        if fatal:
            raise fatal[0]
        if overran:
            error = f"timed out after {limit_seconds:g} s"
            return AttemptEnd(error, timed_out=True, still_running=not ended)
        return ended[0]

    def finish(
        self,
        job: Job,
        token: str,
        started: int,
        end: AttemptEnd,
        not_before: int = 0,
        deadline_ms: int | None = None,
        holder_ends: tuple[int, ...] = (),
    ) -> Settled:
        """Settles a fenced attempt that ended as `end`: the job first, then its limit's slot (held
        until one of `holder_ends`, the leases the attempt may have written; the fence's by default),
        then the
        history item (the history never shows an attempt whose result the job did not keep); a dead
        occurrence's alert is owed from the settle on, and sent after it. The writes ride out
        throttles and AWS faults until the invocation (ending at `deadline_ms`) must stop. Raises
        StaleDelivery when the token is no longer ours; `not_before` holds a retry back while the
        call may still run."""
        now_ms = self._engine.clock.now_ms()
        patience = self._patience(now_ms, deadline_ms)

        def record(placement: Placement) -> RunSummary:
            return self._summary(job, started, now_ms, _run_status(end, placement), end.error)

        if end.error is None:
            decide = lambda current: lifecycle.after_success(current, now_ms, started)  # noqa: E731
            write = self._engine.store.complete
        else:
            decide = lambda current: lifecycle.after_failure(current, now_ms, started, None, not_before)  # noqa: E731
            write = self._engine.store.fail
        settled, placement, run = settle(write, job, token, decide, record, self._engine, patience)
        if job.limit_slot is not None:
            ends = holder_ends or ((job.lease_until,) if job.lease_until is not None else ())
            self._return_slot(job, ends, run, patience)
        if lifecycle.kept_in_history(self._history, run):
            patience.call(
                partial(self._engine.store.put_run, Run.of(job.id, run)), f"history of job {job.id}"
            )
        missed = lifecycle.missed_count(placement.skipped)
        if placement.alert:
            self._alert(job, run)
            if settled.on_dead is not None:
                self.send_owed_route(job.id, routes.route_sk(run.scheduled_at, run.attempt))
            return Settled(Outcome.DEAD, missed)
        return Settled(Outcome.SUCCEEDED if end.error is None else Outcome.FAILED, missed)

    def _return_slot(self, job: Job, ends: tuple[int, ...], run: RunSummary, patience: Patience) -> None:
        """Gives the settled attempt's slot back. One that cannot be given back (the invocation ran
        out of patience, or died first) is the key's again when the attempt's lease ends."""
        assert job.limit_slot is not None
        if not ends:
            return
        took = None
        if run.started_at is not None and run.finished_at is not None:
            took = max(0, run.finished_at - run.started_at)  # it sizes the key's waits
        write = partial(self._engine.store.return_slot, job.limit_slot, job.id, ends, took)
        try:
            patience.call(write, f"returning job {job.id}'s slot")
        except (ClientError, BotoCoreError):
            logger.warning("job %s's slot comes back when its lease ends", job.id, exc_info=True)

    def _patience(self, now_ms: int, deadline_ms: int | None) -> Patience:
        until_ms = now_ms + SETTLE_PATIENCE_SECONDS * SECOND_MS
        if deadline_ms is not None:
            spare_ms = (SETTLE_HEADROOM_SECONDS - SETTLE_PATIENCE_SECONDS) * SECOND_MS
            until_ms = min(until_ms, deadline_ms - spare_ms)
        return Patience(self._engine.clock, self._sleep, until_ms)

    def _alert(self, job: Job, run: RunSummary) -> None:
        try:
            send_alert(self._engine, job.id, run)
        except (ClientError, BotoCoreError):
            logger.warning("dead job %s: its alert stays owed for the tick", job.id, exc_info=True)

    def send_owed_route(self, job_id: str, sort_key: str) -> bool:
        """Sends a job's owed route alert, if it is still owed; a failure leaves it owed, and the
        tick hands it on again later. True when it went out."""
        if self._route is None:
            return False
        try:
            return send_route(self._engine.store, self._route, job_id, sort_key)
        except Exception:  # a route's failure, or AWS's: the alert stays owed either way
            logger.warning("job %s: its route alert stays owed for the tick", job_id, exc_info=True)
            return False

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
            trace_id=tracing.of_attempt(job).trace_id,
            limit_wait_ms=job.limit_wait_ms,
            extra=lifecycle.is_triggered_run(job) or None,
        )


def _run_status(end: AttemptEnd, placement: Placement) -> RunStatus:
    if end.error is None:
        return RunStatus.SUCCEEDED
    if placement.alert:
        return RunStatus.DEAD
    return RunStatus.TIMED_OUT if end.timed_out else RunStatus.FAILED


def _text(exc: BaseException) -> str:
    return str(exc)[: c.ERROR_TEXT_LIMIT]


__all__ = ["AttemptEnd", "AttemptResult", "DeferralFailed", "Outcome", "Settled", "Worker"]
