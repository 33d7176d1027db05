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
        """The stretches recorded for `job_id` that reach into [from, until), oldest first. A stretch
        starting before `from` is found by its end: the query reads from the oldest kept."""
        found = self._between(
            job_id,
            skip_sk(0),
            skip_sk(max(0, until_ms - 1)),
            FilterExpression="#until > :from",
            ExpressionAttributeNames={"#until": "until_ms"},
            ExpressionAttributeValues={":from": {"N": str(from_ms)}},
        )
        return [_skip_of(items.deserialize(item)) for item in found]


def _skip_of(values: dict[str, Any]) -> Skip:
    reason = SkipReason(values["reason"])
    return Skip(int(values["first_ms"]), int(values["until_ms"]), reason, int(values["count"]))
