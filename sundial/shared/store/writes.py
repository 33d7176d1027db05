"""The store's conditional writes, each of which knows what it wrote.

DynamoDB may apply a write and lose its answer (a 500 after the write, a reset connection, a client
timeout). The SDK then retries it, and a conditional write fails its condition *because* it was
applied. So a failed condition, or an error after the SDK's retries, is checked against the item as
it now is: when the write's own mark is there, the write succeeded and the caller goes on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from sundial.shared import constants as c
from sundial.shared.errors import LimitChanged, StaleDelivery
from sundial.shared.models import Job
from sundial.shared.store import expressions as x
from sundial.shared.store import items
from sundial.shared.store.reads import StoreReads

T = TypeVar("T")
Item = dict[str, Any]
CONFLICT_RETRIES = 4
CONFLICT_BACKOFF_SECONDS = 0.02


class StoreWrites(StoreReads):
    """Update, put and transaction primitives: retried on transaction conflicts, recognised when
    applied with their answer lost, and failed as StaleDelivery carrying the job as it now is."""

    def _write(self, job_id: str, change: x.Change, condition: str) -> Job:
        """One UpdateItem. Raises StaleDelivery (with `current`, the Job as it is, or None)."""
        request = change.request(condition)
        call = lambda: self._client.update_item(  # noqa: E731
            TableName=self._table,
            Key=items.job_key(job_id),
            ReturnValues="ALL_NEW",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **request,
        )
        try:
            response = retry_conflicts(call)
        except ClientError as exc:
            if not is_condition_failure(exc):
                return self._recognise(job_id, change, exc)
            found: Item | None = exc.response.get("Item")  # type: ignore[assignment]
            return self._own_or_stale(job_id, change, found)
        except BotoCoreError as exc:
            return self._recognise(job_id, change, exc)
        return items.item_to_job(response["Attributes"])

    def _transact(
        self,
        job_id: str,
        change: x.Change,
        condition: str,
        puts: list[dict[str, Any]],
        partners: list[dict[str, Any]] | None = None,
    ) -> Job:
        """The job's UpdateItem and these Puts (each its item, and its own condition if any), and the
        `partners` (whole transaction items: a limit's shard), all or none. Raises StaleDelivery, with
        the job as it is, when a condition of the job or a Put failed; LimitChanged when only a
        partner's did."""
        update = {"TableName": self._table, "Key": items.job_key(job_id), **change.request(condition)}
        transaction: list[Any] = [{"Update": update}]
        transaction += [{"Put": {"TableName": self._table, **put}} for put in puts]
        transaction += partners or []
        try:
            retry_conflicts(lambda: self._client.transact_write_items(TransactItems=transaction))
        except ClientError as exc:
            if _code(exc) != "TransactionCanceledException":
                return self._recognise(job_id, change, exc)
            found = self._job_item(job_id)
            if partners and not change.applied_in(found) and _only_partners_failed(exc, len(puts) + 1):
                raise LimitChanged(f"job '{job_id}': its limit's shard changed under us") from None
            return self._own_or_stale(job_id, change, found)
        except BotoCoreError as exc:
            return self._recognise(job_id, change, exc)
        return self.get(job_id)  # a transaction answers no item: read after it, later writes and all

    def _put_if(self, item: Item, condition: str, values: Item | None, mine: Callable[[Item], bool]) -> bool:
        """A conditional PutItem. True when written, by this call or by its own lost-answer attempt
        (`mine` recognises it in the item found); False when another write holds the key."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            "ExpressionAttributeNames": {
                name: attr
                for name, attr in (("#pk", c.PARTITION_KEY), ("#expires", c.TTL_ATTRIBUTE))
                if name in condition
            },
        }
        if values:
            request["ExpressionAttributeValues"] = values
        try:
            retry_conflicts(lambda: self._client.put_item(**request))
        except ClientError as exc:
            if is_condition_failure(exc):
                found: Item = exc.response.get("Item") or {}  # type: ignore[assignment]
                return bool(found) and mine(found)
            if not mine(self._item(item) or {}):
                raise
        except BotoCoreError:
            if not mine(self._item(item) or {}):
                raise
        return True

    def _own_or_stale(self, job_id: str, change: x.Change, found: Item | None) -> Job:
        if change.applied_in(found):
            assert found is not None
            return items.item_to_job(found)
        current = items.item_to_job(found) if found and "status" in found else None
        raise StaleDelivery(f"job '{job_id}' changed under us", current=current)

    def _recognise(self, job_id: str, change: x.Change, error: Exception) -> Job:
        """After an error that may hide an applied write: the write is there, or the error stands."""
        try:
            found = self._job_item(job_id)
        except (ClientError, BotoCoreError):
            raise error from None
        if change.applied_in(found):
            assert found is not None
            return items.item_to_job(found)
        raise error

    def _job_item(self, job_id: str) -> Item | None:
        key = items.job_key(job_id)
        item: Item | None = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get(
            "Item"
        )
        return item

    def _item(self, item: Item) -> Item | None:
        key = {name: item[name] for name in (c.PARTITION_KEY, c.SORT_KEY)}
        found: Item | None = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get(
            "Item"
        )
        return found


def retry_conflicts(call: Callable[[], T]) -> T:
    """Runs a write again after a TransactionConflict: it did not apply, so it is safe to repeat, and
    the SDK does not retry that code by itself."""
    for attempt in range(CONFLICT_RETRIES):
        try:
            return call()
        except ClientError as exc:
            if not _is_conflict(exc) or attempt == CONFLICT_RETRIES - 1:
                raise
            time.sleep(CONFLICT_BACKOFF_SECONDS * 2**attempt * random.uniform(0.5, 1.5))
    raise AssertionError("unreachable")


def _only_partners_failed(exc: ClientError, first_partner: int) -> bool:
    """Whether a cancelled transaction failed on a condition of its partners alone."""
    reasons = exc.response.get("CancellationReasons", [])
    codes = [str(reason.get("Code") or "None") for reason in reasons]
    own, partners = codes[:first_partner], codes[first_partner:]
    return all(code == "None" for code in own) and "ConditionalCheckFailed" in partners


def _is_conflict(exc: ClientError) -> bool:
    if _code(exc) == "TransactionConflictException":
        return True
    reasons = exc.response.get("CancellationReasons", [])
    return _code(exc) == "TransactionCanceledException" and any(
        reason.get("Code") == "TransactionConflict" for reason in reasons
    )


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def is_condition_failure(exc: ClientError) -> bool:
    return _code(exc) == "ConditionalCheckFailedException"
