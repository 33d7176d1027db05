"""Where the model keeps the table's items and decides each request on them: moto's own handler
(exact, and slow: several milliseconds of CPU a request here), the native table
(bench/scale/native.py), or both at once, answered by moto and compared with the native table's
answer, request by request."""

from __future__ import annotations

import copy
import json
from typing import Any, Protocol

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.core.request import normalize_request
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.responses import DynamoHandler

from bench.scale import native
from bench.scale.native import NativeTable
from sundial.local_stack import index_partitions
from sundial.shared import constants as c

Item = dict[str, Any]
KEY = tuple[str, str]
Answer = tuple[int, dict[str, str], bytes]
KINDS = ("moto", "native", "both")


class Table(Protocol):
    def answer(self, operation: str, body: dict[str, Any], request: Any) -> Answer: ...
    def item(self, key: KEY) -> Item | None: ...
    def put(self, item: Item) -> None: ...


class MotoTable:
    def __init__(self, name: str, region: str) -> None:
        self.name = name
        self._backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
        self._backend.tables.pop(name, None)  # an earlier run's, in this process

    def answer(self, operation: str, body: dict[str, Any], request: Any) -> Answer:
        request.body = json.dumps(body).encode()
        request.headers["Content-Length"] = str(len(request.body))
        normalized = normalize_request(request)
        status, headers, answer = DynamoHandler.dispatch(normalized, normalized.raw_url, normalized.headers)
        if operation not in index_partitions.READS:
            # The local emulator, when loaded in this process, answers moto's index queries from a
            # grouping of the items that only a write moves on: this write is one.
            index_partitions.moved_on()
        return status, dict(headers), answer.encode() if isinstance(answer, str) else answer

    def item(self, key: KEY) -> Item | None:
        table = self._backend.get_table(self.name)
        found = table.items.get(DynamoType({"S": key[0]}), {}).get(DynamoType({"S": key[1]}))
        return None if found is None else dict(found.to_json()["Attributes"])

    def put(self, item: Item) -> None:
        self._backend.get_table(self.name).put_item(item)

    def keys(self) -> set[KEY]:
        table = self._backend.get_table(self.name)
        return {(str(h.value), str(r.value)) for h, by_range in table.items.items() for r in by_range}


class CrossChecked:
    """Both tables answer every request; moto's answer is the one given, and each request whose two
    answers differ is kept in `differences`."""

    def __init__(self, name: str, region: str) -> None:
        self.moto = MotoTable(name, region)
        self.native = NativeTable(name)
        self.compared = 0
        self.index_queries_compared = 0
        self.differences: list[str] = []

    def answer(self, operation: str, body: dict[str, Any], request: Any) -> Answer:
        mine = self.native.answer(operation, copy.deepcopy(body))
        exact = self.moto.answer(operation, body, request)
        self.compared += 1
        if operation != "CreateTable" and _essence(mine) != _essence(exact):
            self.differences.append(
                f"{operation} {json.dumps(body)[:300]}: native {mine[2][:300]!r} moto {exact[2][:300]!r}"
            )
        return exact

    def item(self, key: KEY) -> Item | None:
        return self.moto.item(key)

    def put(self, item: Item) -> None:
        self.moto.put(item)
        self.native.put(copy.deepcopy(item))

    def compare_index_query(
        self, body: dict[str, Any], request: Any, rows: list[Item], sort_attribute: str
    ) -> None:
        """An index Query the model answered from its own sorted copy of the index, answered again
        by moto over the same items: the same rows, in the same order of the index's sort key (rows
        with equal sort keys in any order, as DynamoDB leaves them)."""
        status, _, raw = self.moto.answer("Query", copy.deepcopy(body), request)
        self.compared += 1
        self.index_queries_compared += 1
        exact = json.loads(raw).get("Items", []) if status == 200 else None

        def essence(items: list[Item]) -> tuple[list[str], list[tuple[str, str]]]:
            order = [item[sort_attribute]["S"] for item in items]
            return order, sorted(key_of(item) for item in items)

        if exact is None or essence(rows) != essence(exact):
            self.differences.append(
                f"index Query {json.dumps(body)[:300]}: model {len(rows)} rows {json.dumps(rows)[:600]}, "
                f"moto {raw[:600]!r}"
            )

    def item_differences(self) -> list[str]:
        """Items the two tables hold differently at the end of a run."""
        native_keys = {(pk, sk) for pk, rows in self.native.items.items() for sk in rows}
        keys = native_keys | self.moto.keys()
        return [f"{key}" for key in sorted(keys) if self.native.item(key) != self.moto.item(key)]


def make(kind: str, name: str, region: str) -> Table:
    if kind == "moto":
        return MotoTable(name, region)
    if kind == "native":
        return NativeTable(name)
    if kind == "both":
        return CrossChecked(name, region)
    raise ValueError(f"table kind {kind!r} is none of {KINDS}")


def _essence(answer: Answer) -> tuple[int, Any]:
    """What a client reads of an answer: its status, error code and content (not messages)."""
    status, _, raw = answer
    body = json.loads(raw or b"{}")
    if status == 200:
        body.pop("ScannedCount", None)
        for unasked in ("ConsumedCapacity", "ItemCollectionMetrics"):  # moto adds them; the store never asks
            body.pop(unasked, None)
        if body.get("UnprocessedKeys") == {}:
            body.pop("UnprocessedKeys")
        return status, body
    code = str(body.get("__type", "")).rsplit("#", 1)[-1]
    reasons = [(r.get("Code"), r.get("Item")) for r in body.get("CancellationReasons", [])]
    return status, (code, body.get("Item"), reasons)


def size(item: Item | None) -> int:
    return native.size(item)


def attr(item: Item | None, name: str) -> str | None:
    value = None if item is None else item.get(name)
    return None if value is None else str(next(iter(value.values())))


def key_of(item: dict[str, Any]) -> KEY:
    return item[c.PARTITION_KEY]["S"], item[c.SORT_KEY]["S"]
