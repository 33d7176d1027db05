"""The job store: every DynamoDB write of Sundial, one named conditional write per state change.

A failed condition becomes a domain error: StaleDelivery for the engine's races (with the item as it
is, from ReturnValuesOnConditionCheckFailure), Conflict or JobNotFound for the API's calls.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from shared import constants as c
from shared.errors import Conflict, JobNotFound, StaleDelivery
from shared.lifecycle import Placement, lease_seconds
from shared.models import Job, JobStatus, Run, RunSummary
from shared.store import expressions as x
from shared.store import items
from shared.store.reads import DueRow, StoreReads

SECOND_MS = 1000
T = TypeVar("T")
CONFLICT_RETRIES = 4
CONFLICT_BACKOFF_SECONDS = 0.02
# An idempotency record blocks a second create until it expires (TTL deletion can lag by days).
IDEMPOTENCY_FREE = "attribute_not_exists(#pk) OR #expires < :now"
_STATUS_VALUES = {f"{status.value}": status.value for status in JobStatus}


@dataclass(frozen=True)
class IdempotencyRecord:
    key: str
    body_hash: str
    job_id: str
    expires_at: int  # epoch seconds


def new_token() -> str:
    return secrets.token_hex(8)


class JobStore(StoreReads):
    """Reads (StoreReads) and every conditional write on jobs and their history."""

    # --- the engine's state changes -------------------------------------------------------------

    def claim(self, row: DueRow, token: str, now_ms: int) -> Job:
        """PENDING/FAILED whose due key is still the one read → QUEUED with a fresh token and lease.

        The index row carries no timeout, so a claim holds the longest lease chunk; the fence
        shortens nothing and extends only when the delivery came late. Raises StaleDelivery.
        """
        lease_until = max(row.due_at, now_ms) + lease_seconds(c.LEASE_CHUNK_SECONDS) * SECOND_MS
        change = x.Change(condition_values={":seen_due_key": row.due_key, **_statuses()})
        change.set(status=JobStatus.QUEUED, token=token, lease_until=lease_until, updated_at=now_ms)
        change.set(**{c.DUE_KEY_ATTRIBUTE: items.due_key(JobStatus.QUEUED, lease_until)})
        return self._write(row.job_id, change, x.all_of(x.DUE_UNCHANGED, x.IS_WAITING))

    def reclaim(self, job: Job, seen_due_key: str, token: str, now_ms: int) -> Job:
        """QUEUED/RUNNING whose lease expired → QUEUED with a fresh token, due now. Raises StaleDelivery."""
        lease_until = now_ms + lease_seconds(job.retry.timeout_seconds) * SECOND_MS
        change = x.Change(condition_values={":seen_due_key": seen_due_key, ":now": now_ms, **_statuses()})
        change.set(status=JobStatus.QUEUED, token=token, due_at=now_ms, lease_until=lease_until)
        change.set(updated_at=now_ms, worker=None, started_at=None)
        change.set(**items.due_attributes(job.priority, job.id, JobStatus.QUEUED, lease_until))
        condition = x.all_of(x.DUE_UNCHANGED, x.IS_IN_FLIGHT, x.LEASE_EXPIRED)
        return self._write(job.id, change, condition)

    def fence(self, job_id: str, token: str, worker: str, now_ms: int, lease_until: int | None) -> Job:
        """QUEUED+token → RUNNING before anything runs; counts the attempt. Raises StaleDelivery."""
        change = x.Change(condition_values={":token": token, **_statuses()}).increment("attempt")
        change.set(status=JobStatus.RUNNING, worker=worker, started_at=now_ms, updated_at=now_ms)
        if lease_until is not None:
            change.set(lease_until=lease_until, due_key=items.due_key(JobStatus.RUNNING, lease_until))
        return self._write(job_id, change, x.all_of(x.IS_QUEUED, x.HOLDS_TOKEN))

    def heartbeat(self, job_id: str, token: str, lease_until: int, now_ms: int) -> Job:
        """RUNNING+token → lease extended. Raises StaleDelivery when the lease was lost."""
        change = x.Change(condition_values={":token": token, **_statuses()})
        change.set(lease_until=lease_until, due_key=items.due_key(JobStatus.RUNNING, lease_until))
        change.set(updated_at=now_ms)
        return self._write(job_id, change, x.all_of(x.IS_RUNNING, x.HOLDS_TOKEN))

    def complete(
        self, job: Job, token: str, placement: Placement, run: RunSummary, next_token: str | None
    ) -> Job:
        """RUNNING+token → the placement after success. Raises StaleDelivery for a zombie."""
        return self._finish(job, token, placement, run, next_token)

    def fail(
        self, job: Job, token: str, placement: Placement, run: RunSummary, next_token: str | None
    ) -> Job:
        """RUNNING+token → FAILED (a retry is scheduled). Raises StaleDelivery for a zombie."""
        return self._finish(job, token, placement, run, next_token)

    def kill(
        self, job: Job, token: str, placement: Placement, run: RunSummary, next_token: str | None
    ) -> Job:
        """RUNNING (or an expired lease) +token → DEAD for this occurrence. Raises StaleDelivery."""
        condition = x.all_of(x.IS_IN_FLIGHT, x.HOLDS_TOKEN)
        return self._finish(job, token, placement, run, next_token, condition)

    def skip(self, job: Job, token: str, placement: Placement, next_token: str | None) -> Job:
        """QUEUED+token → the next occurrence, without running: a misfire under the skip policy."""
        change = self._placement_change(job, placement, next_token, self._clock.now_ms())
        change.condition_values.update({":token": token, **_statuses()})
        return self._write(job.id, change, x.all_of(x.IS_QUEUED, x.HOLDS_TOKEN))

    def put_run(self, run: Run) -> bool:
        """Writes one history item once; False when it was already there (a repeated finish)."""
        expires = run.scheduled_at // SECOND_MS + c.RUN_HISTORY_TTL_SECONDS
        return self._put_if(items.run_to_item(run, expires), x.NOT_EXISTS, None)

    # --- the API's state changes: read, decide, write conditional on the version read ----------

    def create(self, job: Job, idempotency: IdempotencyRecord | None) -> tuple[Job, bool]:
        """Writes a new job, its payload apart when large, after reserving its Idempotency-Key.

        Returns (job, True), or (the first job, False) for a repeated key with the same body. Raises
        Conflict for a repeated key with a different body. No transaction: the reservation names
        the job's id, so a retry after a crash between the writes finishes the same job (and plain
        writes cost half a transaction's write units)."""
        if idempotency is not None and not self._reserve(idempotency):
            return self._replay(idempotency, job)
        return self._put_new(job, idempotency)

    def _reserve(self, idempotency: IdempotencyRecord) -> bool:
        item = items.idempotency_item(idempotency)
        return self._put_if(item, IDEMPOTENCY_FREE, {":now": {"N": str(self._now() // SECOND_MS)}})

    def _replay(self, idempotency: IdempotencyRecord, job: Job) -> tuple[Job, bool]:
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
            return self._put_new(job.model_copy(update={"id": str(first["job_id"])}), idempotency)

    def _put_new(self, job: Job, idempotency: IdempotencyRecord | None) -> tuple[Job, bool]:
        if job.payload_stored_apart:
            self._client.put_item(TableName=self._table, Item=items.payload_item(job.id, job.payload))
        if self._put_if(items.job_to_item(job), x.NOT_EXISTS, None):
            return job, True
        if idempotency is None:
            raise Conflict(f"job '{job.id}' exists already")
        return self.get(job.id), False  # a concurrent retry with the same key finished it first

    def _put_if(self, item: dict[str, Any], condition: str, values: dict[str, Any] | None) -> bool:
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {
                name: attr
                for name, attr in (("#pk", c.PARTITION_KEY), ("#expires", c.TTL_ATTRIBUTE))
                if name in condition
            },
        }
        if values:
            request["ExpressionAttributeValues"] = values
        try:
            _retry_conflicts(lambda: self._client.put_item(**request))
        except ClientError as exc:
            if _is_condition_failure(exc):
                return False
            raise
        return True

    def cancel(self, job: Job) -> Job:
        """No further occurrence starts; a running attempt finishes and then the job is CANCELLED."""
        if job.status is JobStatus.RUNNING:
            return self._replace(job, None, None, cancel_requested=True)
        placement = Placement(JobStatus.CANCELLED, job.scheduled_at, None, job.attempt, True)
        return self._replace(job, placement, None)

    def pause(self, job: Job) -> Job:
        """Out of the due index; a queued delivery is dropped at its fence, a running one finishes."""
        if job.status is JobStatus.RUNNING:
            return self._replace(job, None, None, paused=True)
        return self._replace(job, Placement(JobStatus.PENDING, job.scheduled_at, None, 0), None, paused=True)

    def resume(self, job: Job, placement: Placement | None, next_token: str | None) -> Job:
        """Back into the due index at `placement` (None while an attempt still runs)."""
        return self._replace(job, placement, next_token, paused=False)

    def revive(self, job: Job, placement: Placement | None, next_token: str | None) -> Job:
        """A dead job's attempts reset; it runs at `placement`."""
        return self._replace(job, placement, next_token)

    def trigger(
        self, job: Job, placement: Placement | None, next_token: str | None, deferred_at: int | None
    ) -> Job:
        """One extra occurrence now; the schedule resumes at `deferred_at` afterwards."""
        return self._replace(job, placement, next_token, deferred_at=deferred_at)

    def update(
        self, job: Job, changes: dict[str, Any], placement: Placement | None, next_token: str | None
    ) -> Job:
        """Writes changed fields (and a new placement when the due time moved)."""
        return self._replace(job, placement, next_token, **items.plain_fields(changes))

    def _replace(self, job: Job, placement: Placement | None, next_token: str | None, **fields: Any) -> Job:
        now_ms = self._now()
        change = (
            x.Change() if placement is None else self._placement_change(job, placement, next_token, now_ms)
        )
        change.set(updated_at=now_ms, **fields)
        change.condition_values[":version"] = job.version
        if "payload" in fields and fields.get("payload_stored_apart"):
            # A large payload lives in its own item: it and the job change together or not at all.
            change.remove("payload")
            return self._write_with_payload(job, change, fields["payload"])
        try:
            return self._write(job.id, change, x.AT_VERSION)
        except StaleDelivery as exc:
            raise Conflict(f"job '{job.id}' changed while being updated; try again") from exc

    def _write_with_payload(self, job: Job, change: x.Change, payload_json: str) -> Job:
        update = {"TableName": self._table, "Key": items.job_key(job.id), **change.request(x.AT_VERSION)}
        payload = items.serialize({c.PARTITION_KEY: items.job_pk(job.id), c.SORT_KEY: items.PAYLOAD_SK})
        payload["payload"] = {"S": payload_json}
        try:
            self._client.transact_write_items(
                TransactItems=[{"Update": update}, {"Put": {"TableName": self._table, "Item": payload}}]  # type: ignore[typeddict-item]
            )
        except ClientError as exc:
            raise Conflict(f"job '{job.id}' changed while being updated; try again") from exc
        return self.get(job.id)

    def _now(self) -> int:
        return self._clock.now_ms()

    # --- helpers --------------------------------------------------------------------------------

    def _finish(
        self,
        job: Job,
        token: str,
        placement: Placement,
        run: RunSummary,
        next_token: str | None,
        condition: str = x.all_of(x.IS_RUNNING, x.HOLDS_TOKEN),
    ) -> Job:
        now_ms = self._clock.now_ms()
        change = self._placement_change(job, placement, next_token, now_ms)
        change.set(last_run=run.model_dump_json(exclude_none=True), cancel_requested=None)
        change.condition_values.update({":token": token, **_statuses()})
        return self._write(job.id, change, condition)

    def _placement_change(
        self, job: Job, placement: Placement, next_token: str | None, now_ms: int
    ) -> x.Change:
        change = x.Change().set(
            status=placement.status,
            attempt=placement.attempt,
            scheduled_at=placement.scheduled_at,
            due_at=placement.due_at,
            updated_at=now_ms,
            worker=None,
            started_at=None,
        )
        if placement.clear_deferred:
            change.remove("deferred_at")
        if next_token is not None and placement.due_at is not None:
            lease_until = self._lease_until(job, placement.due_at, now_ms)
            change.set(status=JobStatus.QUEUED, token=next_token, lease_until=lease_until)
            change.set(**items.due_attributes(job.priority, job.id, JobStatus.QUEUED, lease_until))
        elif placement.due_at is not None:
            change.set(token=None, lease_until=None)
            change.set(**items.due_attributes(job.priority, job.id, placement.status, placement.due_at))
        else:
            change.remove("token", "lease_until", c.DUE_SHARD_ATTRIBUTE, c.DUE_KEY_ATTRIBUTE)
        return change

    def _lease_until(self, job: Job, due_at: int, now_ms: int) -> int:
        return max(due_at, now_ms) + lease_seconds(job.retry.timeout_seconds) * SECOND_MS

    def _write(self, job_id: str, change: x.Change, condition: str) -> Job:
        request = change.request(condition)
        try:
            response = _retry_conflicts(
                lambda: self._client.update_item(
                    TableName=self._table,
                    Key=items.job_key(job_id),
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    **request,
                )
            )
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
            current: Any = exc.response.get("Item")
            raise StaleDelivery(f"job '{job_id}' changed under us", current=current) from exc
        return items.item_to_job(response["Attributes"])


def _statuses() -> dict[str, str]:
    return {f":{name}": value for name, value in _STATUS_VALUES.items()}


def _retry_conflicts(call: Callable[[], T]) -> T:
    """Runs a conditional write again after a TransactionConflict: the write did not apply, so it is
    safe to repeat, and the SDK does not retry that code by itself."""
    for attempt in range(CONFLICT_RETRIES):
        try:
            return call()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "TransactionConflictException":
                raise
            if attempt == CONFLICT_RETRIES - 1:
                raise
            time.sleep(CONFLICT_BACKOFF_SECONDS * 2**attempt * random.uniform(0.5, 1.5))
    raise AssertionError("unreachable")


def _is_condition_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


__all__ = ["DueRow", "IdempotencyRecord", "JobStore", "new_token"]
