"""The backfill ledger: one item per instant a backfill recorded for a job, under the job's own
partition (`BACKFILL#<instant>`). An instant's item is written only if absent, in the same
transaction as the job's write, so two requests over overlapping windows cannot both run it."""

from __future__ import annotations

from typing import Any

from sundial.shared import constants as c
from sundial.shared.models import Job
from sundial.shared.store import expressions as x
from sundial.shared.store import items
from sundial.shared.store.writes import Item, StoreWrites

BACKFILL_PREFIX = "BACKFILL#"


def backfill_sk(instant_ms: int) -> str:
    return f"{BACKFILL_PREFIX}{instant_ms:015d}"


def ledger_item(job_id: str, instant_ms: int, recorded_at: int, passed_over: bool = False) -> Item:
    """`passed_over`: taken without a run (overlap policy skip runs only the window's latest)."""
    values = {
        c.PARTITION_KEY: items.job_pk(job_id),
        c.SORT_KEY: backfill_sk(instant_ms),
        "scheduled_at": instant_ms,
        "recorded_at": recorded_at,
        **({"passed_over": True} if passed_over else {}),
    }
    return items.serialize(values)


class BackfillLedger(StoreWrites):
    def backfilled(self, job_id: str, from_ms: int, until_ms: int) -> set[int]:
        """The instants in [from, until) that a backfill of `job_id` recorded (a consistent read)."""
        return self.backfill_records(job_id, from_ms, until_ms)[0]

    def backfill_records(self, job_id: str, from_ms: int, until_ms: int) -> tuple[set[int], set[int]]:
        """The instants in [from, until) that a backfill of `job_id` recorded, and those of them it
        passed over without a run (a consistent read)."""
        low, high = backfill_sk(from_ms), backfill_sk(max(from_ms, until_ms - 1))
        found: set[int] = set()
        passed: set[int] = set()
        for item in self._between(job_id, low, high):
            instant = int(item["scheduled_at"]["N"])
            found.add(instant)
            if item.get("passed_over", {}).get("BOOL"):
                passed.add(instant)
        return found, passed

    def _write_recording(self, job_id: str, change: x.Change, condition: str, new: list[Item]) -> Job:
        """The job's UpdateItem and a Put of each ledger item that must not exist yet, all or none.
        Raises StaleDelivery (with the job as it is) when any condition failed: the caller reads
        the ledger again and decides again."""
        recorded = [{"Item": item, **_absent()} for item in new]
        return self._transact(job_id, change, condition, recorded + [{"Item": r} for r in change.records])


def _absent() -> dict[str, Any]:
    return {
        "ConditionExpression": "attribute_not_exists(#pk)",
        "ExpressionAttributeNames": {"#pk": c.PARTITION_KEY},
    }
