"""The job store: every DynamoDB write of Sundial, one named conditional write per state change.

Each state change is a row of the transition table (shared.lifecycle.table): its condition is built
from the row, and an end status the row does not list is refused. A failed condition raises
StaleDelivery carrying the job as it now is, so the caller can tell a zombie from a user action and
decide again; the API turns what it cannot resolve into Conflict or JobNotFound.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.errors import Conflict, JobNotFound
from sundial.shared.lifecycle import Event, Placement
from sundial.shared.models import Job, Run, RunSummary
from sundial.shared.store import expressions as x
from sundial.shared.store import items
from sundial.shared.store.backfills import ledger_item
from sundial.shared.store.reads import DueRow, SentMark
from sundial.shared.store.transitions import (
    ENDED,
    FENCED_FROM,
    LEGACY_TRIGGER_FLAG,
    SlotTake,
    new_token,
)
from sundial.shared.store.worker_writes import WorkerWrites
from sundial.shared.store.writes import Item, is_condition_failure

SECOND_MS = 1000
# An idempotency record blocks a second create until it expires (TTL deletion can lag by days).
IDEMPOTENCY_FREE = "attribute_not_exists(#pk) OR #expires < :now"


@dataclass(frozen=True)
class IdempotencyRecord:
    key: str
    body_hash: str
    job_id: str
    expires_at: int  # epoch seconds


class JobStore(WorkerWrites):
    """Reads (StoreReads) and every conditional write on jobs, their history, their alerts and the
    bulk operations that act on them."""

    def for_operation(self, operation_id: str) -> JobStore:
        """This store with every user action it writes marked as `operation_id`'s, in the action's
        own write: a bulk operation repeating a slice after a crash knows the jobs it acted on."""
        marked = copy.copy(self)
        marked._operation = operation_id
        return marked

    def traced(self, traceparent: str | None) -> JobStore:
        """This store with every user action that schedules a run (a trigger, a retry, a resume or a
        change that places an occurrence) recording `traceparent` as the job's trace, in its write."""
        traced = copy.copy(self)
        traced._trace = traceparent
        return traced

    # --- the tick ---------------------------------------------------------------------------------

    def claim(self, row: DueRow, token: str, now_ms: int) -> Job:
        """PENDING/FAILED whose due key is still the one read → QUEUED with a fresh token and lease."""
        lease_until = lifecycle.queued_lease(row.due_at, now_ms)
        change = x.Change(condition_values={":seen_due_key": row.due_key})
        change.set(status=JobStatus.QUEUED, token=token, lease_until=lease_until, updated_at=now_ms)
        change.set(**{c.DUE_KEY_ATTRIBUTE: items.due_key(JobStatus.QUEUED, lease_until)}).remove("resent")
        return self._transition(Event.CLAIM, row.job_id, change)

    def catch_up(self, job: Job, token: str, placement: Placement, next_token: str | None) -> Job:
        """A claimed occurrence that was missed → the one its misfire policy runs instead."""
        change = self._placement_change(job, placement, next_token)
        return self._transition(Event.CATCH_UP, job.id, change, token=token)

    def resend(self, job: Job, seen_due_key: str, now_ms: int) -> Job:
        """A queued job whose lease ran out keeps its token (its message may still be waiting in a
        backlog, and either copy may start it) and gets a longer lease."""
        lease_until = lifecycle.resend_lease(now_ms, job.resent)
        change = x.Change(condition_values={":seen_due_key": seen_due_key, ":now": now_ms})
        change.set(lease_until=lease_until, updated_at=now_ms, resent=job.resent + 1)
        change.set(**items.due_attributes(job.priority, job.id, JobStatus.QUEUED, lease_until, self._written))
        return self._transition(Event.RESEND, job.id, change, token=job.token)

    def expire_lease(self, job_id: str, token: str, now_ms: int, slot: str | None = None) -> Job:
        """RUNNING+token → its lease ended now: its worker is known to be gone (a local stack started
        again on its saved state), so the next tick reclaims the attempt instead of waiting out the
        lease, and its limit's slot (`slot`) is free at once. The heartbeat's row and write, with a
        lease in the past. Raises StaleDelivery."""
        return self.heartbeat(job_id, token, now_ms - 1, now_ms, slot)

    def release(self, job_id: str, token: str, now_ms: int) -> Job:
        """A queued job whose message could not be sent: due for the next tick at once."""
        change = x.Change().set(lease_until=now_ms - 1, updated_at=now_ms)
        change.set(**{c.DUE_KEY_ATTRIBUTE: items.due_key(JobStatus.QUEUED, now_ms - 1)})
        return self._transition(Event.RELEASE, job_id, change, token=token)

    def reclaim(
        self, job: Job, seen_due_key: str, placement: Placement, run: RunSummary, next_token: str | None
    ) -> Job:
        """A running job whose lease expired (its worker is gone) → `placement`, the lost attempt as
        its last run. Conditional on the lease still being expired and the index row unchanged."""
        now_ms = self._now()
        change = self._placement_change(job, placement, next_token)
        change.set(last_run=run.model_dump_json(exclude_none=True))
        change.condition_values.update({":seen_due_key": seen_due_key, ":now": now_ms})
        return self._settle(Event.RECLAIM, job, placement, run, change)

    def mark_sent(self, shard: int, mark: SentMark) -> None:
        """Records that the tick sent every ahead row's message of `shard` that `mark` covers; never
        moves back (a slow tick finishing after a faster one leaves the later mark). A mark without
        a position inside a second leaves the one written before: it is still true."""
        names = {"#until": items.SENT_UNTIL}
        values: dict[str, Any] = {":until": {"N": str(mark.until)}}
        update, condition = "SET #until = :until", "attribute_not_exists(#until) OR #until < :until"
        if mark.within:
            names["#within"] = items.SENT_WITHIN
            values[":within"] = {"S": mark.within}
            update += ", #within = :within"
            condition += " OR (#until = :until AND (attribute_not_exists(#within) OR #within < :within))"
        try:
            self._client.update_item(
                TableName=self._table,
                Key=items.sent_mark_key(shard),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def forget_sends(self) -> None:
        """Drops the tick's record of its sends: the queues that held those messages are gone (a
        local stack started again on its saved state), so the next tick sends them again."""
        marks = self.sent_marks()
        for shard in [None, *marks.own]:
            self._client.delete_item(TableName=self._table, Key=items.sent_mark_key(shard))

    # --- the worker (fence, hold, heartbeat and settle are WorkerWrites') -----------------------------

    def put_run(self, run: Run) -> bool:
        """Writes one history item once; False when another write holds it (a repeated finish)."""
        expires = run.scheduled_at // SECOND_MS + self.retention_seconds
        item = items.run_to_item(run, expires)
        return self._put_if(item, x.NOT_EXISTS, None, lambda found: found == item)

    def alert_sent(self, job_id: str, run: RunSummary) -> None:
        """Clears an owed alert once its dead-letter message is out."""
        key = {c.PARTITION_KEY: {"S": items.job_pk(job_id)}}
        key[c.SORT_KEY] = {"S": items.alert_sk(run.scheduled_at, run.attempt)}
        self._client.delete_item(TableName=self._table, Key=key)

    # --- the API: read, decide, write conditional on the version read ------------------------------

    def create(
        self, job: Job, idempotency: IdempotencyRecord | None, stored_as: Callable[[Job], Job] = lambda j: j
    ) -> tuple[Job, bool]:
        """Writes a new job, its payload apart when large, after reserving its Idempotency-Key.
        `stored_as` gives what the item holds once the job's id is final (its sealed headers name it).

        Returns (job, True), or (the first job, False) for a repeated key with the same body. Raises
        Conflict for a repeated key with a different body. No transaction: the reservation names
        the job's id, so a retry after a crash between the writes finishes the same job."""
        if idempotency is not None and not self._reserve(idempotency):
            return self._replay(idempotency, job, stored_as)
        return self._put_new(stored_as(job), idempotency)

    def cancel(self, job: Job, placement: Placement | None) -> Job:
        """Cancelled, or flagged to end with its running attempt; from when is the ledger's: no
        instant after it runs."""
        since = job.cancelled_at or self._now()
        if placement is None:
            return self._user_change(Event.CANCEL, job, None, None, cancel_requested=True, cancelled_at=since)
        return self._user_change(Event.CANCEL, job, placement, None, cancelled_at=since)

    def pause(self, job: Job, placement: Placement | None) -> Job:
        """Paused; the triggers waiting behind the current occurrence are dropped with it."""
        dropped: dict[str, Any] = {"triggers": None, LEGACY_TRIGGER_FLAG: None}
        since = job.paused_at if job.paused else self._now()
        window: dict[str, Any] = {"paused_at": since, "resumed_at": None}
        return self._user_change(Event.PAUSE, job, placement, None, paused=True, **window, **dropped)

    def resume(self, job: Job, placement: Placement | None, next_token: str | None) -> Job:
        """Back on schedule; what the pause passed over is recorded by the placement's write."""
        ended = self._now() if job.paused else job.resumed_at
        return self._user_change(Event.RESUME, job, placement, next_token, paused=False, resumed_at=ended)

    def trigger(self, job: Job, placement: Placement | None, next_token: str | None) -> Job:
        """Places the extra run, or counts it behind the current occurrence (placement None)."""
        if placement is None:
            counted: dict[str, Any] = {"triggers": job.triggers + 1, LEGACY_TRIGGER_FLAG: None}
            return self._user_change(Event.TRIGGER, job, None, None, **counted)
        return self._user_change(Event.TRIGGER, job, placement, next_token)

    def backfill(
        self,
        job: Job,
        placement: Placement | None,
        next_token: str | None,
        waiting: tuple[int, ...],
        recorded: tuple[int, ...],
        passed_over: tuple[int, ...] = (),
    ) -> Job:
        """Records each instant of `recorded` in the ledger, only if absent, with the job's write:
        the first backfilled run placed now, or `waiting` added behind the current occurrence.
        `passed_over`: those of them that run not (the overlap policy skip runs the latest alone)."""
        now_ms = self._now()
        new = [ledger_item(job.id, instant, now_ms, instant in passed_over) for instant in recorded]
        fields: dict[str, Any] = {} if placement is not None else {"backfill": list(waiting) or None}
        return self._user_change(Event.BACKFILL, job, placement, next_token, new_items=new, **fields)

    def revive(self, job: Job, placement: Placement, next_token: str | None) -> Job:
        return self._user_change(Event.RETRY, job, placement, next_token)

    def update(
        self, job: Job, changes: dict[str, Any], placement: Placement | None, next_token: str | None
    ) -> Job:
        """Writes changed fields, a new placement when timing moved an occurrence not yet run, and
        the index row's shard when the priority changed."""
        fields = items.plain_fields(changes)
        if placement is None and "priority" in changes and job.due_at is not None:
            fields[c.DUE_SHARD_ATTRIBUTE] = items.due_shard(changes["priority"], job.id, self._written)
        if fields.get("payload_stored_apart"):
            # A large payload lives in its own item: it and the job change together or not at all.
            put = items.payload_item(job.id, changes["payload"])
            fields.pop("payload")
            return self._user_change(Event.UPDATE, job, placement, next_token, put=put, **fields)
        return self._user_change(Event.UPDATE, job, placement, next_token, **fields)

    # --- the create's own writes --------------------------------------------------------------------

    def _reserve(self, idempotency: IdempotencyRecord) -> bool:
        item = items.idempotency_item(idempotency)
        values = {":now": {"N": str(self._now() // SECOND_MS)}}
        job_id = idempotency.job_id
        return self._put_if(item, IDEMPOTENCY_FREE, values, lambda found: _names_job(found, job_id))

    def _replay(
        self, idempotency: IdempotencyRecord, job: Job, stored_as: Callable[[Job], Job]
    ) -> tuple[Job, bool]:
        response = self._client.get_item(
            TableName=self._table, Key=items.idempotency_key(idempotency.key), ConsistentRead=True
        )
        first = items.deserialize(response.get("Item", {}))
        if first.get("body_hash") != idempotency.body_hash:
            raise Conflict(
                f"Idempotency-Key '{idempotency.key}' was used with a different body", field="Idempotency-Key"
            )
        try:
            return self.get(str(first["job_id"])), False
        except JobNotFound:  # the first create stopped after its reservation: finish it now
            return self._put_new(stored_as(job.model_copy(update={"id": str(first["job_id"])})), idempotency)

    def _put_new(self, job: Job, idempotency: IdempotencyRecord | None) -> tuple[Job, bool]:
        if job.payload_stored_apart:
            self._client.put_item(TableName=self._table, Item=items.payload_item(job.id, job.payload))
        write_id = x.new_write_id()
        item = items.job_to_item(job, write_id, self._written)
        if self._put_if(item, x.NOT_EXISTS, None, lambda found: found.get("write_id") == item["write_id"]):
            return job, True
        if idempotency is None:
            raise Conflict(f"job '{job.id}' exists already")
        return self.get(job.id), False  # a concurrent retry with the same key finished it first


def _names_job(found: Item, job_id: str) -> bool:
    return bool(found.get("job_id", {}).get("S") == job_id)


__all__ = ["ENDED", "FENCED_FROM", "DueRow", "IdempotencyRecord", "JobStore", "SlotTake", "new_token"]
