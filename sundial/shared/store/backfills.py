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


def ledger_item(job_id: str, instant_ms: int, recorded_at: int) -> Item:
    values = {
        c.PARTITION_KEY: items.job_pk(job_id),
        c.SORT_KEY: backfill_sk(instant_ms),
        "scheduled_at": instant_ms,
        "recorded_at": recorded_at,
    }
    return items.serialize(values)


class BackfillLedger(StoreWrites):
    def backfilled(self, job_id: str, from_ms: int, until_ms: int) -> set[int]:
        """The instants in [from, until) that a backfill of `job_id` recorded (a consistent read)."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :low AND :high",
            "ExpressionAttributeNames": {"#pk": c.PARTITION_KEY, "#sk": c.SORT_KEY},
            "ExpressionAttributeValues": {
                ":pk": {"S": items.job_pk(job_id)},
                ":low": {"S": backfill_sk(from_ms)},
                ":high": {"S": backfill_sk(max(from_ms, until_ms - 1))},
            },
            "ConsistentRead": True,
        }
        found: set[int] = set()
        while True:
            page = self._client.query(**request)
            found.update(int(item["scheduled_at"]["N"]) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return found
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _write_recording(self, job_id: str, change: x.Change, condition: str, new: list[Item]) -> Job:
        """The job's UpdateItem and a Put of each ledger item that must not exist yet, all or none.
        Raises StaleDelivery (with the job as it is) when any condition failed: the caller reads
        the ledger again and decides again."""
        return self._transact(job_id, change, condition, [{"Item": item, **_absent()} for item in new])


def _absent() -> dict[str, Any]:
    return {
        "ConditionExpression": "attribute_not_exists(#pk)",
        "ExpressionAttributeNames": {"#pk": c.PARTITION_KEY},
    }
