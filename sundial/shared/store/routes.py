"""Owed alerts of a job's own route (`on_dead`): written in the transaction that ends an occurrence
DEAD, beside the stack's dead-letter alert, or (with `alert_on_missed`) in the one that passes
instants over for a misfire or an overlap, and retried until sent (docs/design.md, "Owed alerts").

The item sits in the due index under the alert kind, as the stack's does. The writer that owes it
sends it at once; if that fails or never happens, the tick finds it when it falls due, moves it on by
a growing wait (so that a route down for a day is tried hourly, not every minute) and hands it to a
worker, which calls the route and deletes the item.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from botocore.exceptions import ClientError

from sundial.contract.vocabulary import SkipReason
from sundial.shared import constants as c
from sundial.shared.errors import StaleDelivery
from sundial.shared.lifecycle.skips import Skip
from sundial.shared.models import Job, RunSummary
from sundial.shared.store import items
from sundial.shared.store.writes import StoreWrites, is_condition_failure

SECOND_MS = 1000
MISSED_MARK = "missed"
FIRST_RETRY_MS = 60 * SECOND_MS
LONGEST_RETRY_MS = 3600 * SECOND_MS


@dataclass(frozen=True)
class OwedRoute:
    """A dead occurrence (`run`), or a stretch of missed instants (`missed`), that the job's route
    has not yet heard of."""

    job_id: str
    sort_key: str
    run: RunSummary | None
    in_a_row: int  # the dead occurrences in a row, this one included
    tries: int  # how often the tick has handed it on
    due_key: str
    missed: Skip | None = None


def route_sk(scheduled_at: int, attempt: int) -> str:
    return f"{items.ROUTE_PREFIX}{scheduled_at:013d}#{attempt:03d}"


def missed_route_sk(first_ms: int) -> str:
    return f"{items.ROUTE_PREFIX}{first_ms:013d}#{MISSED_MARK}"


def is_route_key(sort_key: str) -> bool:
    return sort_key.startswith(items.ROUTE_PREFIX)


def route_alert_item(
    job: Job, run: RunSummary, in_a_row: int, due_at: int, shards: int = c.DUE_SHARDS
) -> dict[str, Any]:
    values = {
        c.PARTITION_KEY: items.job_pk(job.id),
        c.SORT_KEY: route_sk(run.scheduled_at, run.attempt),
        c.DUE_SHARD_ATTRIBUTE: items.due_shard(job.priority, job.id, shards),
        c.DUE_KEY_ATTRIBUTE: items.alert_due_key(due_at),
        "run": run.model_dump_json(exclude_none=True),
        "in_a_row": in_a_row,
        "tries": 0,
    }
    return items.serialize(values)


def missed_route_item(job: Job, skip: Skip, due_at: int, shards: int = c.DUE_SHARDS) -> dict[str, Any]:
    """The notice of a stretch of missed instants owed to the job's route, due at once: the tick
    hands it to a worker."""
    values = {
        c.PARTITION_KEY: items.job_pk(job.id),
        c.SORT_KEY: missed_route_sk(skip.first_ms),
        c.DUE_SHARD_ATTRIBUTE: items.due_shard(job.priority, job.id, shards),
        c.DUE_KEY_ATTRIBUTE: items.alert_due_key(due_at),
        "missed": json.dumps([skip.first_ms, skip.until_ms, skip.reason.value, skip.count]),
        "tries": 0,
    }
    return items.serialize(values)


def retry_wait_ms(tries: int) -> int:
    """How long a handed-on alert waits before the tick hands it on again: 1 min, doubling, at most 1 h."""
    return int(min(FIRST_RETRY_MS * 2 ** min(tries, 12), LONGEST_RETRY_MS))


class RouteAlerts(StoreWrites):
    def owed_route(self, job_id: str, sort_key: str) -> OwedRoute | None:
        """The route alert still owed under `sort_key`, or None once it was sent."""
        item = self._client.get_item(
            TableName=self._table, Key=_key(job_id, sort_key), ConsistentRead=True
        ).get("Item")
        return _owed(job_id, item) if item else None

    def hand_on_route(self, owed: OwedRoute, now_ms: int) -> OwedRoute:
        """Moves the owed alert's due time past the wait for its next try, conditional on the due key
        read: of two ticks that read it, one hands it on. Raises StaleDelivery when it was sent or
        handed on meanwhile."""
        due_key = items.alert_due_key(now_ms + retry_wait_ms(owed.tries))
        try:
            self._client.update_item(
                TableName=self._table,
                Key=_key(owed.job_id, owed.sort_key),
                UpdateExpression="SET #due = :due, #tries = :tries",
                ConditionExpression="#due = :seen",
                ExpressionAttributeNames={"#due": c.DUE_KEY_ATTRIBUTE, "#tries": "tries"},
                ExpressionAttributeValues={
                    ":due": {"S": due_key},
                    ":tries": {"N": str(owed.tries + 1)},
                    ":seen": {"S": owed.due_key},
                },
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                raise StaleDelivery(f"job '{owed.job_id}': its route alert moved on") from exc
            raise
        return replace(owed, tries=owed.tries + 1, due_key=due_key)

    def route_sent(self, job_id: str, sort_key: str) -> None:
        """Clears an owed route alert once the route took it (or once a cancel said it needs none)."""
        self._client.delete_item(TableName=self._table, Key=_key(job_id, sort_key))


def _key(job_id: str, sort_key: str) -> dict[str, Any]:
    return {c.PARTITION_KEY: {"S": items.job_pk(job_id)}, c.SORT_KEY: {"S": sort_key}}


def _owed(job_id: str, item: dict[str, Any]) -> OwedRoute:
    values = items.deserialize(item)
    missed = None
    if "missed" in values:
        first, until, reason, count = json.loads(values["missed"])
        missed = Skip(int(first), int(until), SkipReason(reason), int(count))
    return OwedRoute(
        job_id=job_id,
        sort_key=str(values[c.SORT_KEY]),
        run=RunSummary.model_validate_json(values["run"]) if "run" in values else None,
        in_a_row=int(values.get("in_a_row", 1)),
        tries=int(values.get("tries", 0)),
        due_key=str(values[c.DUE_KEY_ATTRIBUTE]),
        missed=missed,
    )
