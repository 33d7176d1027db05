"""DynamoDB as the model answers it: moto's own request handling, in this process, decides every
item (conditions, update expressions, ALL_OLD answers, transactions), so each item the run touches
is exactly as DynamoDB would leave it. Around it the model adds what moto leaves out:

- capacity: write and read units per virtual second, for the table (its warm throughput, raised
  only by a peak older than the doubling window) and per partition key value of the table and of
  each index (1,000 WCU/s, 3,000 RCU/s). A request over any of them is throttled, as AWS answers it
  (ProvisionedThroughputExceededException for a partition, ThrottlingException for the table), and
  changes nothing; a write charges each index its entries change (index back-pressure).
- the due index: kept sorted beside moto's items, so that a tick's Query reads its rows in
  O(log n) instead of moto's scan of the whole table.
"""

from __future__ import annotations

import bisect
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.request import normalize_request
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoHandler

from bench.scale import limits
from shared import constants as c

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
    def __init__(self, table_name: str, warm_wcu: float, warm_rcu: float, region: str = "us-east-1") -> None:
        self.table_name = table_name
        self.warm_wcu = warm_wcu
        self.warm_rcu = warm_rcu
        self._backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
        self._backend.tables.pop(table_name, None)  # an earlier run's, in this process
        self.due = DueIndex()
        self.writes = Buckets()
        self.reads = Buckets()
        self.throttles = Throttles()
        self.calls: defaultdict[str, int] = defaultdict(int)
        self.stored_bytes_extra = 0.0  # active jobs the run does not materialise
        self.break_conditions = False  # for the honest-model test: a model that lies must be caught

    # --- answering ------------------------------------------------------------------------------

    def answer(self, operation: str, request: Any, now_s: float) -> tuple[int, dict[str, str], bytes]:
        self.calls[operation] += 1
        body = json.loads(request.body or b"{}")
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
        return self._moto(request, body)

    def _moto(self, request: Any, body: dict[str, Any] | None = None) -> tuple[int, dict[str, str], bytes]:
        if body is not None and self.break_conditions:
            body.pop("ConditionExpression", None)
            request.body = json.dumps(body).encode()
        normalized = normalize_request(request)
        status, headers, answer = DynamoHandler.dispatch(normalized, normalized.raw_url, normalized.headers)
        return status, dict(headers), answer.encode() if isinstance(answer, str) else answer

    # --- writes -----------------------------------------------------------------------------------

    def _write(
        self, operation: str, body: dict[str, Any], request: Any, now_s: float
    ) -> tuple[int, dict[str, str], bytes]:
        key = _key(body["Item"] if operation == "PutItem" else body["Key"])
        before = self._item(key)
        put_size = _json_size(body["Item"]) if operation == "PutItem" else 0
        units = _write_units(max(put_size, _size(before)))
        throttled = self._write_throttle(key, before, units, now_s)
        if throttled:
            return throttled
        answer = self._moto(request, body)
        self._after_write(key, before, now_s)
        return answer

    def _transaction(
        self, body: dict[str, Any], request: Any, now_s: float
    ) -> tuple[int, dict[str, str], bytes]:
        keys = []
        for entry in body["TransactItems"]:
            kind, part = next(iter(entry.items()))
            keys.append(_key(part["Item"] if kind == "Put" else part["Key"]))
        befores = [self._item(key) for key in keys]
        for key, before in zip(keys, befores, strict=True):
            # A transaction costs two units per item written (prepare and commit).
            throttled = self._write_throttle(key, before, 2 * _write_units(_size(before)), now_s)
            if throttled:
                return throttled
        answer = self._moto(request)
        for key, before in zip(keys, befores, strict=True):
            self._after_write(key, before, now_s)
        return answer

    def _write_throttle(
        self, key: KEY, before: Any, units: float, now_s: float
    ) -> tuple[int, dict[str, str], bytes] | None:
        second = int(now_s)
        if not self.writes.room("table", second, units, self._allowed("table", second, self.warm_wcu)):
            self.throttles.table += 1
            return _error("ThrottlingException", "Throughput exceeds the current capacity of your table")
        partitions = [("pk", key[0]), *(_index_keys(before))]
        for partition in partitions:
            if not self.writes.room(partition, second, units, limits.PARTITION_WCU.value):
                self.throttles.partition += 1
                return _error(
                    "ProvisionedThroughputExceededException",
                    "The level of configured provisioned throughput for the table was exceeded",
                )
        return None

    def _after_write(self, key: KEY, before: Any, now_s: float) -> None:
        after = self._item(key)
        second = int(now_s)
        units = _write_units(max(_size(before), _size(after)))
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
            self.throttles.partition += 1
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

    def table(self) -> Any:
        return self._backend.get_table(self.table_name)

    def _item(self, key: KEY) -> Any:
        return self.table().items.get(DynamoType({"S": key[0]}), {}).get(DynamoType({"S": key[1]}))

    def seed(self, item: dict[str, Any]) -> None:
        """Stores an item as a write would have, without a request (jobs placed before the run)."""
        self.table().put_item(item)
        self.due.put(_key(item), _due_entry(self._item(_key(item))))


def _key(item: dict[str, Any]) -> KEY:
    return item[c.PARTITION_KEY]["S"], item[c.SORT_KEY]["S"]


def _size(item: Any) -> int:
    return 0 if item is None else int(item.size())


def _json_size(item: dict[str, Any]) -> int:
    return len(json.dumps(item)) // 2  # DynamoDB's size of names and values, about half the JSON


def _write_units(size: int) -> float:
    return float(max(1, math.ceil(size / limits.WRITE_UNIT_BYTES.value)))


def _attr(item: Any, name: str) -> str | None:
    value = item.attrs.get(name) if item is not None else None
    return None if value is None else str(value.value)


def _due_entry(item: Any) -> tuple[str, str] | None:
    shard, due_key = _attr(item, c.DUE_SHARD_ATTRIBUTE), _attr(item, c.DUE_KEY_ATTRIBUTE)
    return None if shard is None or due_key is None else (shard, due_key)


def _index_keys(item: Any) -> list[tuple[str, str]]:
    """The index partition key values the item is in: each a partition the item's writes load."""
    if item is None:
        return []
    names = [c.DUE_SHARD_ATTRIBUTE, *c.LIST_INDEX_KEYS.values()]
    return [(name, value) for name in names if (value := _attr(item, name)) is not None]


def _error(code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message}
    return 400, {"x-amzn-ErrorType": code}, json.dumps(body).encode()
