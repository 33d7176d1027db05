"""The skip ledger: one item per stretch of a job's series passed over without a run, under the
job's own partition (`SKIP#<first instant>`), written in the same transaction as the write that
passed it over (shared.lifecycle.skips). Items expire with run history."""

from __future__ import annotations

from typing import Any

from sundial.contract.bounds import LATEST_MS
from sundial.contract.vocabulary import SkipReason
from sundial.shared import constants as c
from sundial.shared.lifecycle.skips import Skip
from sundial.shared.store import items
from sundial.shared.store.writes import Item, StoreWrites

SKIP_PREFIX = "SKIP#"
SECOND_MS = 1000


def skip_sk(first_ms: int) -> str:
    return f"{SKIP_PREFIX}{first_ms:015d}"


def skip_item(job_id: str, skip: Skip, retention_seconds: int) -> Item:
    """Written whole and unconditionally: a repeat of the same write writes the same item."""
    values = {
        c.PARTITION_KEY: items.job_pk(job_id),
        c.SORT_KEY: skip_sk(skip.first_ms),
        "first_ms": skip.first_ms,
        "until_ms": skip.until_ms,
        "reason": skip.reason.value,
        "count": skip.count,
        c.TTL_ATTRIBUTE: min(skip.until_ms, LATEST_MS) // SECOND_MS + retention_seconds,
    }
    return items.serialize(values)


class SkipLedger(StoreWrites):
    def skips(self, job_id: str, from_ms: int, until_ms: int) -> list[Skip]:
        """The stretches recorded for `job_id` that reach into [from, until), oldest first: those that
        start in it, and the one before it when it reaches in. Stretches of a job never overlap (each
        write passes over instants after the last one passed over), so only the latest stretch that
        starts before `from` can reach into it: what a read costs follows the range, not the ledger."""
        inside = self._between(job_id, skip_sk(max(0, from_ms)), skip_sk(max(0, until_ms - 1)))
        found = [_skip_of(items.deserialize(item)) for item in inside]
        before = self._client.query(
            TableName=self._table,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :low AND :high",
            ExpressionAttributeNames={"#pk": c.PARTITION_KEY, "#sk": c.SORT_KEY},
            ExpressionAttributeValues={
                ":pk": {"S": items.job_pk(job_id)},
                ":low": {"S": skip_sk(0)},
                ":high": {"S": skip_sk(max(0, from_ms - 1))},
            },
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        ).get("Items", [])
        reaching = [skip for skip in map(_skip_of, map(items.deserialize, before)) if skip.until_ms > from_ms]
        return reaching + found


def _skip_of(values: dict[str, Any]) -> Skip:
    reason = SkipReason(values["reason"])
    return Skip(int(values["first_ms"]), int(values["until_ms"]), reason, int(values["count"]))
