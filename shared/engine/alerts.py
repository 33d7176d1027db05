"""Sending a dead occurrence's alert: the dead-letter message, then the owed mark cleared."""

from __future__ import annotations

from shared.dispatch import Dispatcher
from shared.models import JobStatus, RunSummary
from shared.store import JobStore


def send_alert(store: JobStore, dispatcher: Dispatcher, job_id: str, run: RunSummary) -> bool:
    """Sends the alert of `run`'s dead occurrence and clears its owed mark. A job cancelled by now
    raises no alert (its mark is cleared all the same): whoever cancelled it has said it needs no
    attention. Returns True when the alert went out. Raises ClientError or BotoCoreError; the
    mark then stays owed for the tick."""
    job = store.get(job_id)
    if job.status is JobStatus.CANCELLED or job.cancel_requested:
        store.alert_sent(job_id, run)
        return False
    dispatcher.send_dead(job, run)
    store.alert_sent(job_id, run)
    return True
