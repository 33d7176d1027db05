"""DynamoDB as the model answers it. A table (bench/scale/tables.py: moto's own request handling,
the native table, or both compared) decides every item (conditions, update expressions, ALL_OLD
answers, transactions), so each item the run touches is as DynamoDB would leave it. Around it the
model adds what those leave out:

- capacity: write and read units per virtual second, for the table (its warm throughput, raised
  only by a peak older than the doubling window) and per partition key value of the table and of
  each index (1,000 WCU/s, 3,000 RCU/s). A request over any of them is throttled, as AWS answers it
  (ProvisionedThroughputExceededException for a partition, ThrottlingException for the table), and
  changes nothing; a write charges each index its entries change (index back-pressure).
- the due index: kept sorted beside the table's items, so that a tick's Query reads its rows in
  O(log n) instead of a scan of the whole table.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from bench.scale import limits, tables
from bench.scale.expressions import used_placeholders
from bench.scale.tables import attr, key_of, size
from sundial.shared import constants as c

WRITES = frozenset({"UpdateItem", "PutItem", "DeleteItem"})
KEY = tuple[str, str]


@dataclass
class Buckets:
    """Units used per virtual second, per key."""

    used: defaultdict[Any, dict[int, float]] = field(default_factory=lambda: defaultdict(dict))

    def room(self, key: Any, second: int, units: float, limit: float) -> bool:
        return self.used[key].get(second, 0.0) + units <= limit

    def charge(self, key: Any, second: int, units: float) -> None:
        seconds = self.used[key]
        seconds[second] = seconds.get(second, 0.0) + units

    def peak(self, key: Any, before: int) -> float:
        return max((u for s, u in self.used[key].items() if s < before), default=0.0)


@dataclass
class Throttles:
    partition: int = 0
    table: int = 0
    # The partition throttles by where they fell: "table" (an item's own key) or an index's key.
    by_key: dict[str, int] = field(default_factory=dict)

    def hot(self, partition: tuple[str, str]) -> None:
        self.partition += 1
        where = "table" if partition[0] == "pk" else partition[0]
        self.by_key[where] = self.by_key.get(where, 0) + 1


class DueIndex:
    """The due index's entries, per shard value, sorted by due key: (due_key, pk, sk)."""

    def __init__(self) -> None:
        self.shards: defaultdict[str, list[tuple[str, str, str]]] = defaultdict(list)
        self.of_item: dict[KEY, tuple[str, str]] = {}

    def put(self, key: KEY, entry: tuple[str, str] | None) -> None:
        old = self.of_item.pop(key, None)
        if old is not None:
            rows = self.shards[old[0]]
            at = bisect.bisect_left(rows, (old[1], *key))
            if at < len(rows) and rows[at] == (old[1], *key):
                rows.pop(at)
        if entry is not None:
            self.of_item[key] = entry
            bisect.insort(self.shards[entry[0]], (entry[1], *key))

    def query(self, shard: str, bound: str, after: tuple[str, str, str] | None, limit: int) -> list[Any]:
        rows = self.shards.get(shard, [])
        start = 0 if after is None else bisect.bisect_right(rows, after)
        end = bisect.bisect_right(rows, (bound, "\uffff", "\uffff"))
        return rows[start : min(end, start + limit)]


class DynamoModel:
    def __init__(
        self, table_name: str, warm_wcu: float, warm_rcu: float, region: str = "us-east-1", kind: str = "moto"
    ) -> None:
        self.table_name = table_name
        self.warm_wcu = warm_wcu
        self.warm_rcu = warm_rcu
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

    # --- answering ------------------------------------------------------------------------------

    def answer(self, operation: str, request: Any, now_s: float) -> tuple[int, dict[str, str], bytes]:
        self.calls[operation] += 1
        body = json.loads(request.body or b"{}")
        if self.break_conditions:
            _strip_conditions(body)
        if operation == "Query" and body.get("IndexName") == c.DUE_INDEX_NAME:
            return self._due_query(body, now_s)
        if operation in WRITES:
            return self._write(operation, body, request, now_s)
        if operation == "TransactWriteItems":
            return self._transaction(body, request, now_s)
        if operation in ("GetItem", "Query", "BatchGetItem"):
            throttled = self._read_throttle(body, now_s)
            if throttled:
                return throttled
        return self.table.answer(operation, body, request)

    # --- writes -----------------------------------------------------------------------------------

    def _write(
        self, operation: str, body: dict[str, Any], request: Any, now_s: float
    ) -> tuple[int, dict[str, str], bytes]:
        key = key_of(body["Item"] if operation == "PutItem" else body["Key"])
        before = self.table.item(key)
        put_size = size(body["Item"]) if operation == "PutItem" else 0
        units = _write_units(max(put_size, size(before)))
        incoming = body["Item"] if operation == "PutItem" else None  # a create's index entries
        throttled = self._write_throttle(key, before, units, now_s, incoming)
        if throttled:
            return throttled
        answer = self.table.answer(operation, body, request)
        self._after_write(key, before, now_s)
        return answer

    def _transaction(
        self, body: dict[str, Any], request: Any, now_s: float
    ) -> tuple[int, dict[str, str], bytes]:
        keys = []
        for entry in body["TransactItems"]:
            kind, part = next(iter(entry.items()))
            keys.append(key_of(part["Item"] if kind == "Put" else part["Key"]))
        befores = [self.table.item(key) for key in keys]
        for key, before in zip(keys, befores, strict=True):
            # A transaction costs two units per item written (prepare and commit).
            throttled = self._write_throttle(key, before, 2 * _write_units(size(before)), now_s)
            if throttled:
                return throttled
        answer = self.table.answer("TransactWriteItems", body, request)
        for key, before in zip(keys, befores, strict=True):
            self._after_write(key, before, now_s)
        return answer

    def _write_throttle(
        self, key: KEY, before: Any, units: float, now_s: float, incoming: Any = None
    ) -> tuple[int, dict[str, str], bytes] | None:
        second = int(now_s)
        if not self.writes.room("table", second, units, self._allowed("table", second, self.warm_wcu)):
            self.throttles.table += 1
            return _error("ThrottlingException", "Throughput exceeds the current capacity of your table")
        partitions = [("pk", key[0]), *dict.fromkeys([*_index_keys(before), *_index_keys(incoming)])]
        for partition in partitions:
            if not self.writes.room(partition, second, units, limits.PARTITION_WCU.value):
                self.throttles.hot(partition)
                return _error(
                    "ProvisionedThroughputExceededException",
                    "The level of configured provisioned throughput for the table was exceeded",
                )
        return None

    def _after_write(self, key: KEY, before: Any, now_s: float) -> None:
        after = self.table.item(key)
        second = int(now_s)
        units = _write_units(max(size(before), size(after)))
        self.writes.charge("table", second, units)
        self.writes.charge(("pk", key[0]), second, units)
        old_keys, new_keys = set(_index_keys(before)), set(_index_keys(after))
        for changed in old_keys ^ new_keys:
            self.writes.charge(changed, second, 1)  # each index entry added or removed: a unit
        self.due.put(key, _due_entry(after))

    def _allowed(self, bucket: str, second: int, warm: float) -> float:
        window = int(limits.PEAK_WINDOW_S.value)
        peak = self.writes.peak(bucket, second - window) if bucket == "table" else 0.0
        return max(warm, limits.PEAK_MULTIPLE.value * peak)

    # --- reads ------------------------------------------------------------------------------------

    def _read_throttle(self, body: dict[str, Any], now_s: float) -> tuple[int, dict[str, str], bytes] | None:
        second = int(now_s)
        if not self.reads.room("table", second, 1, self.warm_rcu):
            self.throttles.table += 1
            return _error("ThrottlingException", "Throughput exceeds the current capacity of your table")
        self.reads.charge("table", second, 1)
        return None

    def _due_query(self, body: dict[str, Any], now_s: float) -> tuple[int, dict[str, str], bytes]:
        values = body["ExpressionAttributeValues"]
        shard, bound = values[":shard"]["S"], values[":bound"]["S"]
        start = body.get("ExclusiveStartKey")
        after = None
        if start:
            after = (start[c.DUE_KEY_ATTRIBUTE]["S"], start[c.PARTITION_KEY]["S"], start[c.SORT_KEY]["S"])
        # KEYS_ONLY entries of about 100 bytes: a 1 MB page holds about this many.
        rows = self.due.query(shard, bound, after, int(body.get("Limit", 10_000)))
        units = max(1.0, math.ceil(len(rows) * 100 / limits.READ_UNIT_BYTES.value) / 2)
        second = int(now_s)
        if not self.reads.room(("due", shard), second, units, limits.PARTITION_RCU.value):
            self.throttles.hot((c.DUE_SHARD_ATTRIBUTE, shard))
            return _error("ProvisionedThroughputExceededException", "The level of throughput was exceeded")
        self.reads.charge(("due", shard), second, units)
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
        if len(rows) == 10_000 or (body.get("Limit") and len(rows) == body["Limit"]):
            last = items[-1]
            answer["LastEvaluatedKey"] = last
        return 200, {}, json.dumps(answer).encode()

    # --- items ------------------------------------------------------------------------------------

    def seed(self, item: dict[str, Any]) -> None:
        """Stores an item as a write would have, without a request (jobs placed before the run)."""
        self.table.put(item)
        self.due.put(key_of(item), _due_entry(item))


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


def _due_entry(item: Any) -> tuple[str, str] | None:
    shard, due_key = attr(item, c.DUE_SHARD_ATTRIBUTE), attr(item, c.DUE_KEY_ATTRIBUTE)
    return None if shard is None or due_key is None else (shard, due_key)


def _index_keys(item: Any) -> list[tuple[str, str]]:
    """The index partition key values the item is in: each a partition the item's writes load."""
    if item is None:
        return []
    names = [c.DUE_SHARD_ATTRIBUTE, *c.LIST_INDEX_KEYS.values()]
    return [(name, value) for name in names if (value := attr(item, name)) is not None]


def _error(code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}
    return 400, {"x-amzn-ErrorType": code}, json.dumps(body).encode()
