"""Sending a dead occurrence's alerts: the stack's dead-letter message, and the job's own route,
each then cleared from what is owed (docs/design.md, "Owed alerts")."""

from __future__ import annotations

from collections.abc import Callable

from sundial.contract.bounds import LATEST_MS
from sundial.contract.vocabulary import JobStatus, Priority
from sundial.shared.clock import format_rfc3339
from sundial.shared.dispatch import AlertMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.models import Job, RunSummary
from sundial.shared.store import JobStore
from sundial.shared.store.routes import OwedRoute
from sundial.shared.targets.alert_delivery import AlertNotice

# Calls the job's route (job.on_dead) with the notice; raises when the route did not take it.
RouteSender = Callable[[Job, AlertNotice], None]


def send_alert(engine: EngineContext, job_id: str, run: RunSummary) -> bool:
    """Sends the alert of `run`'s dead occurrence and clears its owed mark. A job cancelled by now
    raises no alert (its mark is cleared all the same): whoever cancelled it has said it needs no
    attention. Returns True when the alert went out. Raises ClientError or BotoCoreError; the
    mark then stays owed for the tick."""
    job = engine.store.get(job_id)
    if _needs_none(job):
        engine.store.alert_sent(job_id, run)
        return False
    engine.dispatcher.send_dead(job, run)
    engine.store.alert_sent(job_id, run)
    return True


def send_route(store: JobStore, route: RouteSender, job_id: str, sort_key: str) -> bool:
    """Sends the owed route alert under `sort_key` to the job's route as it now is, and clears it.
    None is sent, and the mark cleared, when it was sent already, when the job was cancelled since
    (as for the stack's alert) or when its route was removed since. Returns True when it went out.
    Raises whatever the route or AWS raised; the alert then stays owed, and the tick hands it on."""
    owed = store.owed_route(job_id, sort_key)
    if owed is None:
        return False
    job = store.get(job_id)
    if _needs_none(job) or job.on_dead is None:
        store.route_sent(job_id, sort_key)
        return False
    route(job, notice_of(job, owed))
    store.route_sent(job_id, sort_key)
    return True


def hand_on_route(engine: EngineContext, job_id: str, sort_key: str, priority: Priority, now_ms: int) -> bool:
    """The tick's part: an owed route alert goes to a worker as an errand on the job's queue (the
    tick calls no target), moved on first by a growing wait so that it comes back should the worker
    fail too. False when it was sent meanwhile. Raises StaleDelivery when another tick handed it on
    first, ClientError or BotoCoreError (it stays owed)."""
    owed = engine.store.owed_route(job_id, sort_key)
    if owed is None:
        return False
    engine.store.hand_on_route(owed, now_ms)
    engine.dispatcher.send_alert_errand(AlertMessage(job_id=job_id, alert=sort_key, priority=priority))
    return True


def notice_of(job: Job, owed: OwedRoute) -> AlertNotice:
    if owed.missed is not None:
        skip = owed.missed
        return AlertNotice(
            job_id=job.id,
            name=job.name,
            scheduled_at=format_rfc3339(skip.first_ms),
            attempts=0,
            error=None,
            consecutive_failures=job.consecutive_failures,
            kind="missed",
            missed=skip.count,
            reason=skip.reason.value,
            until=format_rfc3339(min(skip.until_ms, LATEST_MS)),
        )
    run = owed.run
    assert run is not None
    return AlertNotice(
        job_id=job.id,
        name=job.name,
        scheduled_at=format_rfc3339(run.scheduled_at),
        attempts=run.attempt,
        error=run.error,
        consecutive_failures=owed.in_a_row,
        trace_id=run.trace_id,
    )


def _needs_none(job: Job) -> bool:
    return job.status is JobStatus.CANCELLED or job.cancel_requested
