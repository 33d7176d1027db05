"""GET /jobs: newest first over the sharded listing indexes, by any filter, at the cost of what it answers.

A listing reads one index: the one of its most selective filter that is ready (docs/operations.md,
"Listing indexes"), or by_created when none is. Each index partition is sorted newest first (its sort
key is the job's ULID), so newest first across partitions is a merge: the newest job not yet taken
of all of them, each partition read ahead only as far as the page needs. What the index does not
decide (a second filter, a name's substring, a row the eventually consistent index has not moved
yet) is checked on the job items read for the page. The next_token holds each partition's position.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sundial.shared import constants as c
from sundial.shared.errors import InvalidInput
from sundial.shared.models import Job
from sundial.shared.store import items
from sundial.shared.store.list_plan import ListFilter, Plan, plan

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# A page reads at most this many index rows beyond its matches when the index alone does not
# decide the filter (a combination, a name substring), then answers what it found with a token; a
# page that found nothing yet goes on reading until READ_SECONDS, so an empty page means the end.
EXTRA_READS = 1000
READ_SECONDS = 5.0
# `total` is exact up to this many index rows counted; above it, an estimate marked as one.
EXACT_TOTAL_UP_TO = 1000
__all__ = ["ListFilter", "Listed", "Lister", "Plan", "not_issued", "plan", "ulid_ms"]
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


@dataclass
class _Cursor:
    """One partition: rows read ahead and not yet taken, where reading goes on, where the page is."""

    index: str
    partition: str
    position: str | None  # the last row taken (the next page starts after it)
    ahead: list[str] = field(default_factory=list)
    read_from: str | None = None  # the last row read
    more: bool = True

    @property
    def done(self) -> bool:
        return not self.ahead and not self.more


@dataclass(frozen=True)
class Listed:
    jobs: list[Job]
    next_token: str | None
    total: int
    total_is_estimate: bool


class Lister:
    """Reads pages of one listing; `fetch` reads job items by id (BatchGetItem), in order."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        query: Callable[[dict[str, Any]], Any],
        fetch: Callable[[list[str]], list[Job]],
        now_ms: int,
    ) -> None:
        self._client = client
        self._table = table
        self._query_with_start = query  # turns a start key DynamoDB refuses into a bad next_token
        self._fetch = fetch
        self._now_ms = now_ms

    def page(self, the_plan: Plan, wanted: ListFilter, limit: int, token: str | None) -> Listed:
        state = _decode(token, the_plan)
        at, done = state["at"], state["done"]
        cursors = [_Cursor(the_plan.index, p, at.get(p)) for p in the_plan.partitions if p not in done]
        for cursor in cursors:
            cursor.read_from = cursor.position
        found: list[Job] = []
        examined = 0
        started = time.monotonic()
        while len(found) < limit and not all(cursor.done for cursor in cursors):
            need = limit - len(found)
            ids = self._take(cursors, need)
            examined += len(ids)
            found += [job for job in self._fetch(ids) if wanted.matches(job)]
            if self._out_of_reads(examined - len(found), found, started):
                break
        total, estimate = self._page_total(the_plan, state, cursors, len(found), examined)
        return Listed(found, _encode(the_plan, cursors, total, estimate), total, estimate)

    def _page_total(
        self, the_plan: Plan, state: dict[str, Any], cursors: list[_Cursor], found: int, examined: int
    ) -> tuple[int, bool]:
        """Counted once, on the first page, and carried by its next_token to the pages after it."""
        if "total" in state:
            return int(state["total"]), bool(state["estimate"])
        if all(cursor.done for cursor in cursors):
            return found, False  # the first page held every match
        total, estimate = self._total(the_plan)
        if the_plan.exact or not examined:
            return total, estimate
        # The index holds more than the filter keeps: scaled by the share of this page's rows kept.
        return round(total * found / examined), True

    @staticmethod
    def _out_of_reads(rejected: int, found: list[Job], started: float) -> bool:
        if found:
            return rejected >= EXTRA_READS
        return time.monotonic() - started >= READ_SECONDS

    def _take(self, cursors: list[_Cursor], need: int) -> list[str]:
        """Up to `need` ids, newest first across partitions. A row is taken once no partition may
        still hold a newer one: each partition's unread rows are older than the last row read from
        it, so only a partition whose last row read is newer than the best row at hand is read on.
        Each read asks for the page's share per partition, so a partition's rows read and not
        taken (the page's overhead) are never more than that share."""
        taken: list[str] = []
        while len(taken) < need:
            live = [cursor for cursor in cursors if cursor.ahead]
            best = max(live, key=lambda cursor: cursor.ahead[0]) if live else None
            blocking = [
                cursor
                for cursor in cursors
                if not cursor.ahead
                and cursor.more
                and (best is None or cursor.read_from is None or cursor.read_from > best.ahead[0])
            ]
            if blocking:
                self._read_ahead(blocking, max(1, need // len(cursors)))
                continue
            if best is None:
                break
            best.position = best.ahead.pop(0)
            taken.append(best.position)
        return taken

    def _read_ahead(self, cursors: list[_Cursor], limit: int) -> None:
        if len(cursors) == 1:
            self._query(cursors[0], limit)
            return
        with ThreadPoolExecutor(max_workers=min(8, len(cursors)), thread_name_prefix="list") as pool:
            list(pool.map(lambda cursor: self._query(cursor, limit), cursors))

    def _query(self, cursor: _Cursor, limit: int) -> None:
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": cursor.index,
            "KeyConditionExpression": "#p = :p",
            "ExpressionAttributeNames": {"#p": c.LIST_INDEX_KEYS[cursor.index]},
            "ExpressionAttributeValues": {":p": {"S": cursor.partition}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor.read_from is not None:
            attribute = c.LIST_INDEX_KEYS[cursor.index]
            request["ExclusiveStartKey"] = _start_key(attribute, cursor.partition, cursor.read_from)
        response = self._query_with_start(request)
        ids = [row[c.LIST_SORT_ATTRIBUTE]["S"] for row in response["Items"]]
        cursor.ahead += ids
        cursor.read_from = ids[-1] if ids else cursor.read_from
        cursor.more = "LastEvaluatedKey" in response and bool(ids)

    def _total(self, the_plan: Plan) -> tuple[int, bool]:
        """Rows in the plan's partitions: counted while there are at most EXACT_TOTAL_UP_TO of them;
        beyond, each partition's count of its newest rows stretched over the partitions' age (ids
        hold their creation instant; the shards of a hash span the same years, so one partition's
        oldest row stands for all), which assumes creates spread evenly over time."""
        share = max(1, EXACT_TOTAL_UP_TO // len(the_plan.partitions))
        total, cut = 0, []
        for partition in the_plan.partitions:
            counted, last = self._count(the_plan, partition, share)
            total += counted
            if last is not None:
                cut.append((partition, counted, last))
        if not cut:
            return total, False
        oldest = self._oldest(the_plan, cut[0][0])
        for _, counted, last in cut:
            span = max(1, self._now_ms - ulid_ms(last))
            total += max(0, round(counted * (self._now_ms - oldest) / span) - counted)
        return total, True

    def _count(self, the_plan: Plan, partition: str, limit: int) -> tuple[int, str | None]:
        response = self._client.query(
            **self._partition(the_plan, partition), ScanIndexForward=False, Select="COUNT", Limit=limit
        )
        last = response.get("LastEvaluatedKey")
        return int(response["Count"]), last[c.LIST_SORT_ATTRIBUTE]["S"] if last else None

    def _oldest(self, the_plan: Plan, partition: str) -> int:
        rows = self._client.query(**self._partition(the_plan, partition), ScanIndexForward=True, Limit=1)[
            "Items"
        ]
        return ulid_ms(rows[0][c.LIST_SORT_ATTRIBUTE]["S"]) if rows else self._now_ms

    def _partition(self, the_plan: Plan, partition: str) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "IndexName": the_plan.index,
            "KeyConditionExpression": "#p = :p",
            "ExpressionAttributeNames": {"#p": the_plan.key_attribute},
            "ExpressionAttributeValues": {":p": {"S": partition}},
        }


def ulid_ms(value: str) -> int:
    """The creation instant a ULID carries in its first ten characters."""
    instant = 0
    for char in value[:10]:
        instant = instant * 32 + _CROCKFORD.index(char)
    return instant


def _start_key(attribute: str, partition: str, job_id: str) -> dict[str, Any]:
    return {
        c.PARTITION_KEY: {"S": items.job_pk(job_id)},
        c.SORT_KEY: {"S": items.JOB_SK},
        attribute: {"S": partition},
        c.LIST_SORT_ATTRIBUTE: {"S": job_id},
    }


# --- next_token: {"i": index, "at": {partition: last id taken}, "done": [partitions], "n", "e"} --


def _encode(the_plan: Plan, cursors: list[_Cursor], total: int, estimate: bool) -> str | None:
    if all(cursor.done for cursor in cursors):
        return None
    live = {cursor.partition: cursor.position for cursor in cursors if not cursor.done}
    state = {
        "i": the_plan.index,
        "at": {partition: position for partition, position in live.items() if position is not None},
        "done": [partition for partition in the_plan.partitions if partition not in live],
        "n": total,
        "e": estimate,
    }
    text = json.dumps(state, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode(token: str | None, the_plan: Plan) -> dict[str, Any]:
    """The positions a next_token holds. Raises InvalidInput (field next_token) for a token this
    listing did not issue: another filter's, or one edited by hand."""
    if not token:
        return {"at": {}, "done": set()}
    try:
        state = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, RecursionError) as exc:
        raise not_issued() from exc
    if not _well_formed(state, the_plan):
        raise not_issued()
    return {"at": state["at"], "done": set(state["done"]), "total": state["n"], "estimate": state["e"]}


def _well_formed(state: Any, the_plan: Plan) -> bool:
    if not isinstance(state, dict) or state.keys() != {"i", "at", "done", "n", "e"}:
        return False
    at, done, partitions = state["at"], state["done"], set(the_plan.partitions)
    return (
        state["i"] == the_plan.index
        and isinstance(at, dict)
        and set(at) <= partitions
        and all(isinstance(v, str) and _ULID.fullmatch(v) for v in at.values())
        and isinstance(done, list)
        and all(isinstance(p, str) and p in partitions for p in done)
        and type(state["n"]) is int
        and state["n"] >= 0
        and type(state["e"]) is bool
    )


def not_issued() -> InvalidInput:
    return InvalidInput("next_token is not one this API issued", field="next_token")
