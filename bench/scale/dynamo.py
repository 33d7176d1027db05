"""DynamoDB as the model answers it. A table (bench/scale/tables.py: moto's own request handling,
the native table, or both compared) decides every item (conditions, update expressions, ALL_OLD
answers, transactions), so each item the run touches is as DynamoDB would leave it. Around it the
model adds what those leave out, each figure from bench/scale/limits.py:

- what a request consumes: a write, a unit per KB of the larger of the item before and after (a
  transaction twice that); a write that adds, moves or removes an index entry, a unit per entry
  written on that index; a GetItem or each key of a BatchGetItem, a unit per 4 KB of its item; a
  Query, a unit per 4 KB of all the items it returns together; an eventually consistent read half
  of that.
- capacity, per virtual second: the table's warm throughput, and each global secondary index's own,
  for reads and for writes (each raised only by a peak older than the doubling window), capped at
  the per-table quota; and per partition key value of the table and of each index, 3,000 read units
  or 1,000 write units or a linear combination of the two. A request over any of them is throttled,
  as AWS answers it (ThrottlingException for the table or an index, ProvisionedThroughputExceeded-
  Exception for a partition), and changes nothing: a write whose index is over its throughput is
  refused on the table (index back-pressure).
- the due index: kept sorted beside the table's items, so that a tick's Query reads its rows in
  O(log n) instead of a scan of the whole table. With both tables, moto answers a sample of those
  queries over the same items and the rows must agree.
"""

from __future__ import annotations

import bisect
import copy
import json
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.scale import limits, native, tables
from bench.scale.direct import ANSWERED
from bench.scale.expressions import Invalid, Unsupported, used_placeholders
from bench.scale.tables import CrossChecked, attr, key_of, size
from sundial.shared import constants as c

WRITES = frozenset({"UpdateItem", "PutItem", "DeleteItem"})
KEY = tuple[str, str]
# A partition: ("pk", value) of the table, or (an index's partition attribute, value) of that index.
PARTITION = tuple[str, str]
Answer = tuple[int, dict[str, str], bytes]
TABLE = "table"
INDEX_KEYS = {
    c.DUE_INDEX_NAME: (c.DUE_SHARD_ATTRIBUTE, c.DUE_KEY_ATTRIBUTE),
    **{name: (attribute, c.LIST_SORT_ATTRIBUTE) for name, attribute in c.LIST_INDEX_KEYS.items()},
}
# An attribute with more values than this among the items is not shared (bench/scale: DynamoModel._shared).
SHARED_VALUES = 2_000
# With both tables, moto answers one due-index query in this many as well (the first always).
DUE_QUERY_SAMPLE_EVERY = 5


@dataclass
class Throughput:
    """Units a second, for writes and for reads."""

    write: float
    read: float


@dataclass
class Charge:
    """What one request consumes: of the table, of each index, and of each partition it touches."""

    table: float = 0.0
    indexes: dict[str, float] = field(default_factory=dict)
    partitions: dict[PARTITION, float] = field(default_factory=dict)

    def add(self, other: Charge) -> None:
        self.table += other.table
        for name, units in other.indexes.items():
            self.indexes[name] = self.indexes.get(name, 0.0) + units
        for partition, units in other.partitions.items():
            self.partitions[partition] = self.partitions.get(partition, 0.0) + units


@dataclass
class Buckets:
    """Units used per virtual second, per key."""

    used: defaultdict[Any, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))
    _peaks: dict[Any, tuple[int, float]] = field(default_factory=dict)

    def at(self, key: Any, second: int) -> float:
        return self.used[key].get(second, 0.0) if key in self.used else 0.0

    def charge(self, key: Any, second: int, units: float) -> None:
        seconds = self.used[key]
        seconds[second] = seconds.get(second, 0.0) + units

    def peak(self, key: Any, before: int) -> float:
        """The busiest second before `before`: those seconds no longer change, so it is kept."""
        kept = self._peaks.get(key)
        if kept is not None and kept[0] == before:
            return kept[1]
        found = (
            max((u for s, u in self.used[key].items() if s < before), default=0.0)
            if key in self.used
            else 0.0
        )
        self._peaks[key] = (before, found)
        return found


@dataclass
class Throttles:
    partition: int = 0
    table: int = 0
    index: int = 0
    # The partition throttles by where they fell: "table" (an item's own key) or an index's key.
    by_key: dict[str, int] = field(default_factory=dict)
    # The index throttles (an index's own throughput) by index.
    by_index: dict[str, int] = field(default_factory=dict)

    def hot(self, partition: PARTITION) -> None:
        self.partition += 1
        where = TABLE if partition[0] == "pk" else partition[0]
        self.by_key[where] = self.by_key.get(where, 0) + 1

    def index_over(self, name: str) -> None:
        self.index += 1
        self.by_index[name] = self.by_index.get(name, 0) + 1


def partition_has_room(reads: float, writes: float) -> bool:
    """A partition serves 3,000 read units or 1,000 write units a second, or a linear combination."""
    return reads / limits.PARTITION_RCU.value + writes / limits.PARTITION_WCU.value <= 1.0 + 1e-9


def within_quota(units: float, quota: float) -> float:
    """What warm throughput or a doubled peak may serve at most: the per-table quota (an on-demand
    table's and each of its indexes'), unless a quota increase raised it."""
    return min(units, quota)


class DueIndex:
    """The due index's entries, per shard value: each item's due key, sorted by (due_key, pk, sk)
    when a query reads the shard. A worker's write moves one entry at a time, many thousands a
    second, and a tick reads a shard a few times a minute: a sorted list kept up to date cost each
    write a search of the list, which at a million due was a twentieth of a run."""

    def __init__(self) -> None:
        self.shards: defaultdict[str, dict[KEY, str]] = defaultdict(dict)
        self.of_item: dict[KEY, tuple[str, str]] = {}
        self._sorted: dict[str, list[tuple[str, str, str]]] = {}

    def put(self, key: KEY, entry: tuple[str, str] | None) -> None:
        old = self.of_item.pop(key, None)
        if old is not None:
            del self.shards[old[0]][key]
            self._sorted.pop(old[0], None)
        if entry is not None:
            self.of_item[key] = entry
            self.shards[entry[0]][key] = entry[1]
            self._sorted.pop(entry[0], None)

    def query(
        self, shard: str, bound: str | None, after: tuple[str, str, str] | None, limit: int
    ) -> list[Any]:
        rows = self._sorted.get(shard)
        if rows is None:
            rows = sorted((due_key, *key) for key, due_key in self.shards.get(shard, {}).items())
            self._sorted[shard] = rows
        start = 0 if after is None else bisect.bisect_right(rows, after)
        end = len(rows) if bound is None else bisect.bisect_right(rows, (bound, "\uffff", "\uffff"))
        return rows[start : min(end, start + limit)]


class DynamoModel:
    def __init__(
        self,
        table_name: str,
        warm_wcu: float,
        warm_rcu: float,
        region: str = "us-east-1",
        kind: str = "moto",
        index_warm: Throughput | None = None,
        quota: Throughput | None = None,
    ) -> None:
        self.table_name = table_name
        self.warm = Throughput(warm_wcu, warm_rcu)
        default_index = index_warm or Throughput(limits.INDEX_WARM_WCU.value, limits.INDEX_WARM_RCU.value)
        # Each index's own warm throughput: set one lower to model an index just added.
        self.index_warm = {name: copy.copy(default_index) for name in INDEX_KEYS}
        self.quota = quota or Throughput(limits.TABLE_QUOTA_WCU.value, limits.TABLE_QUOTA_RCU.value)
        self.table = tables.make(kind, table_name, region)
        self.due = DueIndex()
        self.writes = Buckets()
        self.reads = Buckets()
        self.throttles = Throttles()
        self.calls: defaultdict[str, int] = defaultdict(int)
        self.stored_bytes_extra = 0.0  # active jobs the run does not materialise
        # A model that lies, for the test that must catch it: every write applies whatever the item
        # holds, as though DynamoDB ignored conditions.
        self.break_conditions = False
        self.due_queries = 0
        self._last_hot = False
        self._values: dict[str, dict[str, Any]] = {}  # per attribute, one copy of each value
        self._distinct: set[str] = set()
        # A sampled run's meters (bench/scale/sampling.py): each write's item before and after, and
        # what each request consumed.
        self.on_write: Callable[[KEY, Any, Any], None] | None = None
        self.on_consume: Callable[[Charge, bool], None] | None = None

    # --- answering ------------------------------------------------------------------------------

    def answer(self, operation: str, request: Any, now_s: float) -> Answer:
        self.calls[operation] += 1
        body = json.loads(request.body or b"{}")
        if self.break_conditions:
            _strip_conditions(body)
        if operation == "Query" and body.get("IndexName") == c.DUE_INDEX_NAME:
            return self._due_query(body, request, now_s)
        if operation in WRITES:
            return self._write(operation, body, request, now_s)
        if operation == "TransactWriteItems":
            return self._transaction(body, request, now_s)
        if operation in ("GetItem", "Query", "BatchGetItem"):
            return self._read(operation, body, request, now_s)
        return self.table.answer(operation, body, request)

    # --- writes -----------------------------------------------------------------------------------

    def _write(self, operation: str, body: dict[str, Any], request: Any, now_s: float) -> Answer:
        key = key_of(body["Item"] if operation == "PutItem" else body["Key"])
        before = self.table.item(key)
        after = _predicted(operation, body, before)
        throttled = self._refused(_write_charge(key, before, after), int(now_s), writing=True)
        if throttled:
            return throttled
        answer = self.table.answer(operation, body, request)
        self._after_write(key, before, now_s)
        return answer

    def _transaction(self, body: dict[str, Any], request: Any, now_s: float) -> Answer:
        parts = []
        for entry in body["TransactItems"]:
            kind, part = next(iter(entry.items()))
            parts.append((kind, part, key_of(part["Item"] if kind == "Put" else part["Key"])))
        befores = [self.table.item(key) for _, _, key in parts]
        afters = [
            _predicted(kind, part, before) for (kind, part, _), before in zip(parts, befores, strict=True)
        ]
        if any(not _holds(part, before) for (_, part, _), before in zip(parts, befores, strict=True)):
            afters = list(befores)  # cancelled: nothing is written, each item still read and charged
        charge = Charge()
        for (_, _, key), before, after in zip(parts, befores, afters, strict=True):
            charge.add(_write_charge(key, before, after, limits.TRANSACTION_MULTIPLE.value))
        throttled = self._refused(charge, int(now_s), writing=True)
        if throttled:
            return throttled
        answer = self.table.answer("TransactWriteItems", body, request)
        for (_, _, key), before in zip(parts, befores, strict=True):
            self._after_write(key, before, now_s, limits.TRANSACTION_MULTIPLE.value)
        return answer

    def _after_write(self, key: KEY, before: Any, now_s: float, multiple: float = 1.0) -> None:
        after = self.table.item(key)
        self._consume(_write_charge(key, before, after, multiple), int(now_s), writing=True)
        self.due.put(key, _due_entry(after))
        if self.on_write is not None:
            self.on_write(key, before, after)

    def stand_in_write(self, operation: str, key: KEY, after: Any, now_s: float) -> str | None:
        """A write whose item after it a stand-in already knows (bench/scale/standins.py): counted,
        charged and refused as the same request through `answer` would be, and applied; `after` None
        is a write whose condition failed, charged on the item as it is. Answers the error code of a
        throttle, or None."""
        self.calls[operation] += 1
        before = self.table.item(key)
        written = before if after is None else after
        charge = _write_charge(key, before, written)
        if self._refused(charge, int(now_s), writing=True) is not None:
            return "ProvisionedThroughputExceededException" if self._last_hot else "ThrottlingException"
        if after is not None:
            self.table.put(self._shared(after))
            self.due.put(key, _due_entry(after))
        self._consume(charge, int(now_s), writing=True)
        return None

    def stand_in_read(self, key: KEY, now_s: float) -> str | None:
        """A stand-in's consistent GetItem of `key` (the store's look after a failed write), charged
        and refused as through `answer`: the throttle's error code, or None."""
        self.calls["GetItem"] += 1
        units = _read_units(size(self.table.item(key)), consistent=True)
        charge = Charge(table=units, partitions={("pk", key[0]): units})
        if self._refused(charge, int(now_s), writing=False) is not None:
            return "ProvisionedThroughputExceededException" if self._last_hot else "ThrottlingException"
        self._consume(charge, int(now_s), writing=False)
        return None

    # --- reads ------------------------------------------------------------------------------------

    def _read(self, operation: str, body: dict[str, Any], request: Any, now_s: float) -> Answer:
        # A read changes nothing: answered first, so that its charge is the size of what it found.
        status, headers, raw = self.table.answer(operation, body, request)
        if status != 200:
            return status, headers, raw
        charge = _read_charge(operation, body, json.loads(raw))
        throttled = self._refused(charge, int(now_s), writing=False)
        if throttled:
            return throttled
        self._consume(charge, int(now_s), writing=False)
        return status, headers, raw

    def _due_query(self, body: dict[str, Any], request: Any, now_s: float) -> Answer:
        values = body["ExpressionAttributeValues"]
        shard = values[":shard"]["S"]
        bound = values[":bound"]["S"] if ":bound" in values else None
        start = body.get("ExclusiveStartKey")
        after = None
        if start:
            after = (start[c.DUE_KEY_ATTRIBUTE]["S"], start[c.PARTITION_KEY]["S"], start[c.SORT_KEY]["S"])
        # Keys-only entries: a 1 MB page holds about this many.
        page = int(limits.QUERY_PAGE_BYTES.value // limits.INDEX_ENTRY_BYTES.value)
        limit = int(body.get("Limit", page))
        rows = self.due.query(shard, bound, after, min(limit, page))
        # An index is read eventually consistent: half a unit per 4 KB of the entries returned.
        units = _read_units(len(rows) * int(limits.INDEX_ENTRY_BYTES.value), consistent=False)
        charge = Charge(indexes={c.DUE_INDEX_NAME: units}, partitions={(c.DUE_SHARD_ATTRIBUTE, shard): units})
        throttled = self._refused(charge, int(now_s), writing=False)
        if throttled:
            return throttled
        self._consume(charge, int(now_s), writing=False)
        items = [
            {
                c.PARTITION_KEY: {"S": pk},
                c.SORT_KEY: {"S": sk},
                c.DUE_SHARD_ATTRIBUTE: {"S": shard},
                c.DUE_KEY_ATTRIBUTE: {"S": due_key},
            }
            for due_key, pk, sk in rows
        ]
        answer: dict[str, Any] = {"Items": items, "Count": len(items), "ScannedCount": len(items)}
        if rows and len(rows) == min(limit, page):
            answer["LastEvaluatedKey"] = dict(items[-1])
        if "Limit" in body or len(rows) < page:
            # A page cut at 1 MB holds as many entries as their sizes allow, which moto counts exactly
            # and the model by its figure per entry: only whole answers compare.
            self._compare_due_query(body, request, items)
        if hasattr(request, ANSWERED):
            # The direct path (bench/scale/direct.py) takes the page as it is: a tick's due rows,
            # up to a megabyte a page, were encoded to JSON here only to be decoded there.
            setattr(request, ANSWERED, answer)
            return 200, {}, b""
        return 200, {}, json.dumps(answer).encode()

    def _compare_due_query(self, body: dict[str, Any], request: Any, items: list[dict[str, Any]]) -> None:
        """With both tables, moto answers a sample of the due-index queries over the same items: the
        rows must be the same, in the same order of due key."""
        if not isinstance(self.table, CrossChecked):
            return
        self.due_queries += 1
        if (self.due_queries - 1) % DUE_QUERY_SAMPLE_EVERY:
            return
        self.table.compare_index_query(body, request, items, c.DUE_KEY_ATTRIBUTE)

    # --- capacity ---------------------------------------------------------------------------------

    def _refused(self, charge: Charge, second: int, writing: bool) -> Answer | None:
        """The throttle AWS answers when `charge` does not fit this second, or None when it does."""
        self._last_hot = False
        if charge.table and not self._table_allows(charge.table, second, writing):
            self.throttles.table += 1
            return _error("ThrottlingException", "Throughput exceeds the current capacity of your table")
        for name, units in charge.indexes.items():
            if not self._index_allows(name, units, second, writing):
                self.throttles.index_over(name)
                return _error(
                    "ThrottlingException",
                    f"Throughput exceeds the current capacity of the global secondary index {name}",
                )
        for partition, units in charge.partitions.items():
            reads = self.reads.at(partition, second) + (0.0 if writing else units)
            writes = self.writes.at(partition, second) + (units if writing else 0.0)
            if not partition_has_room(reads, writes):
                self.throttles.hot(partition)
                self._last_hot = True
                return _error(
                    "ProvisionedThroughputExceededException",
                    "The level of configured provisioned throughput for the table was exceeded",
                )
        return None

    def _table_allows(self, units: float, second: int, writing: bool) -> bool:
        used = self.writes if writing else self.reads
        warm = self.warm.write if writing else self.warm.read
        return used.at(TABLE, second) + units <= self._ceiling(TABLE, warm, second, writing)

    def _index_allows(self, name: str, units: float, second: int, writing: bool) -> bool:
        """An index's own warm throughput (raised by its own peaks, capped at the quota): a write
        whose index entries do not fit is refused on the table (index back-pressure)."""
        used = self.writes if writing else self.reads
        warm = self.index_warm[name].write if writing else self.index_warm[name].read
        return used.at(("index", name), second) + units <= self._ceiling(
            ("index", name), warm, second, writing
        )

    def _ceiling(self, bucket: Any, warm: float, second: int, writing: bool) -> float:
        used = self.writes if writing else self.reads
        peak = used.peak(bucket, second - int(limits.PEAK_WINDOW_S.value))
        quota = self.quota.write if writing else self.quota.read
        return within_quota(max(warm, limits.PEAK_MULTIPLE.value * peak), quota)

    def _consume(self, charge: Charge, second: int, writing: bool) -> None:
        used = self.writes if writing else self.reads
        if self.on_consume is not None:
            self.on_consume(charge, writing)
        if charge.table:
            used.charge(TABLE, second, charge.table)
        for name, units in charge.indexes.items():
            used.charge(("index", name), second, units)
        for partition, units in charge.partitions.items():
            used.charge(partition, second, units)

    # --- items ------------------------------------------------------------------------------------

    def seed(self, item: dict[str, Any]) -> None:
        """Stores an item as a write would have, without a request (jobs placed before the run)."""
        item = self._shared(item)
        self.table.put(item)
        self.due.put(key_of(item), _due_entry(item))

    def _shared(self, item: dict[str, Any]) -> dict[str, Any]:
        """The item with each value that other items hold too (a status, a policy, the instant of a
        burst) replaced by one shared copy, which no write changes in place (an update builds new
        values): a million jobs' items would not fit in memory otherwise. An attribute found with
        many values (ids, tokens) is left alone."""
        shared = {}
        for name, value in item.items():
            if name in self._distinct:
                continue
            seen = self._values.setdefault(name, {})
            raw = value.get("S", value.get("N"))
            if raw is None:
                continue
            found = seen.setdefault(raw, value)
            if found is not value:
                shared[name] = found
            elif len(seen) > SHARED_VALUES:
                self._distinct.add(name)
                del self._values[name]
        return {**item, **shared} if shared else item


def _predicted(operation: str, body: dict[str, Any], before: Any) -> Any:
    """The item as the write will leave it, for its charge before it is answered; when the native
    expressions cannot tell (a request they do not answer), the item as it is."""
    try:
        return native.written(operation, body, before)
    except (Unsupported, Invalid):
        return before


def _holds(part: dict[str, Any], before: Any) -> bool:
    try:
        return native.condition_holds(part, before)
    except (Unsupported, Invalid):
        return True


def _write_charge(key: KEY, before: Any, after: Any, multiple: float = 1.0) -> Charge:
    """A write's units: a unit per KB of the larger of the item before and after, on the table and
    on the item's partition; and a unit per KB of each index entry removed or added (a change of an
    entry's key is both), on that index and on the entry's index partition."""
    units = multiple * _write_units(max(size(before), size(after)))
    charge = Charge(table=units, partitions={("pk", key[0]): units})
    old, new = _index_entries(before), _index_entries(after)
    entry = multiple * _write_units(int(limits.INDEX_ENTRY_BYTES.value))
    for name in INDEX_KEYS:
        if old.get(name) == new.get(name):
            continue
        for changed in (old.get(name), new.get(name)):
            if changed is not None:
                partition = (INDEX_KEYS[name][0], changed[0])
                charge.indexes[name] = charge.indexes.get(name, 0.0) + entry
                charge.partitions[partition] = charge.partitions.get(partition, 0.0) + entry
    return charge


def _read_charge(operation: str, body: dict[str, Any], answer: dict[str, Any]) -> Charge:
    """GetItem and each key of a BatchGetItem: a unit per 4 KB of its item (an absent one still
    reads a unit); a Query: a unit per 4 KB of all its items together; eventually consistent, half."""
    charge = Charge()
    if operation == "GetItem":
        consistent = bool(body.get("ConsistentRead"))
        units = _read_units(size(answer.get("Item")), consistent)
        charge.table = units
        charge.partitions[("pk", body["Key"][c.PARTITION_KEY]["S"])] = units
    elif operation == "BatchGetItem":
        for wanted in body["RequestItems"].values():
            consistent = bool(wanted.get("ConsistentRead"))
            found = {key_of(item): item for items in answer.get("Responses", {}).values() for item in items}
            for key in wanted["Keys"]:
                units = _read_units(size(found.get(key_of(key))), consistent)
                charge.table += units
                partition = ("pk", key[c.PARTITION_KEY]["S"])
                charge.partitions[partition] = charge.partitions.get(partition, 0.0) + units
    else:  # a Query of the table, or of a listing index (read eventually consistent)
        items = answer.get("Items", [])
        index = body.get("IndexName")
        units = _read_units(sum(size(item) for item in items), bool(body.get("ConsistentRead")) and not index)
        if index in INDEX_KEYS:
            charge.indexes[index] = units
        elif not index:
            charge.table = units
            if items:
                charge.partitions[("pk", items[0][c.PARTITION_KEY]["S"])] = units
    return charge


def _strip_conditions(body: dict[str, Any]) -> None:
    """Drops each write's condition, and the names and values only the condition used (DynamoDB,
    and moto, refuse a request that provides one its expressions do not use)."""
    for part in [body, *(next(iter(e.values())) for e in body.get("TransactItems", []))]:
        if part.pop("ConditionExpression", None) is None:
            continue
        used = used_placeholders(part.get("UpdateExpression"))
        for kind in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            kept = {k: v for k, v in part.get(kind, {}).items() if k in used}
            if kept:
                part[kind] = kept
            else:
                part.pop(kind, None)


def _write_units(size: int) -> float:
    return float(max(1, math.ceil(size / limits.WRITE_UNIT_BYTES.value)))


def _read_units(size: int, consistent: bool) -> float:
    units = float(max(1, math.ceil(size / limits.READ_UNIT_BYTES.value)))
    return units if consistent else units * limits.EVENTUALLY_CONSISTENT_SHARE.value


def _due_entry(item: Any) -> tuple[str, str] | None:
    shard, due_key = attr(item, c.DUE_SHARD_ATTRIBUTE), attr(item, c.DUE_KEY_ATTRIBUTE)
    return None if shard is None or due_key is None else (shard, due_key)


def _index_entries(item: Any) -> dict[str, tuple[str, str]]:
    """The item's entry in each index it is in (an index holds the items with both its keys):
    (partition value, sort value)."""
    if item is None:
        return {}
    entries = {}
    for name, (partition, sort) in INDEX_KEYS.items():
        value, order = attr(item, partition), attr(item, sort)
        if value is not None and order is not None:
            entries[name] = (value, order)
    return entries


def _error(code: str, message: str) -> Answer:
    body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}
    return 400, {"x-amzn-ErrorType": code}, json.dumps(body).encode()
