"""The start-up pass of a `sundial local` that finds its state directory free: hand on at once what
was in flight when the last one stopped.

The queues died with the last emulator (they are not kept: the table is the source of truth), and
the last workers with their process. Every queued job's lease is released and every running
attempt's lease ended now, each through the store's conditional write on the token it holds; the
first tick then resends the queued ones (same token, so a copy that did survive is dropped at the
fence) and reclaims the running ones (the lost attempt counted, the retry sent), as it would have
after their leases ran out, minutes later. The messages the ticks sent from ahead rows died with the
queues too: their record is forgotten, so the first tick sends those still ahead again, and claims
those whose instant passed meanwhile, as it claims any run row that fell due while it was down.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared.clock import Clock
from sundial.shared.errors import JobNotFound, StaleDelivery
from sundial.shared.lifecycle import leases
from sundial.shared.store import DueRow, JobStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

logger = logging.getLogger(__name__)
SECOND_MS = 1000
# No write gives a lease further ahead than a doubled resend's, or a dispatch's near the horizon, so
# every in-flight row lies before now plus this (twice over, for clocks). Reading no further keeps
# the pass from paging through the run rows of every job waiting for later.
_LEASE_REACH_MS = (
    2
    * SECOND_MS
    * (
        c.DISPATCH_HORIZON_SECONDS
        + leases.lease_seconds(c.LEASE_CHUNK_SECONDS) * 2**leases.MAX_RESEND_DOUBLINGS
    )
)


@dataclass(frozen=True)
class Recovery:
    queued: int = 0
    running: int = 0
    moved_on: int = 0  # changed since the index was read: their own writes decide


def hand_on_in_flight(dynamodb: DynamoDBClient, table_name: str, clock: Clock) -> Recovery:
    """Ends the lease of every queued and running job. Only for a start whose predecessor (its
    workers and its emulator) is known to be gone: a running attempt is taken from its worker."""
    store = JobStore(dynamodb, table_name, clock)
    store.forget_sends()
    queued = running = moved_on = 0
    for row in _lease_rows(store, clock.now_ms() + _LEASE_REACH_MS):
        try:
            job = store.get(row.job_id)
            if job.token is None:
                continue
            if job.status is JobStatus.QUEUED:
                store.release(job.id, job.token, clock.now_ms())
                queued += 1
            elif job.status is JobStatus.RUNNING:
                store.expire_lease(job.id, job.token, clock.now_ms(), job.limit_slot)
                running += 1
        except (StaleDelivery, JobNotFound):
            moved_on += 1
    return Recovery(queued, running, moved_on)


def _lease_rows(store: JobStore, up_to_ms: int) -> list[DueRow]:
    rows = [
        row
        for priority in c.PRIORITIES
        for shard in range(c.DUE_SHARDS)
        for row in store.due_rows(priority, shard, up_to_ms)
    ]
    return [row for row in rows if row.is_lease]
