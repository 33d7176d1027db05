"""Counts what an in-process engine's AWS calls would cost, from the calls it actually makes.

botocore hooks on the engine's own clients see every request and response. Each write's item is
sized before and after (read through a second, unmetered client), so write units and index writes
come from real item sizes and real key changes, not from a table of guesses. A filtered query is
billed for the items it evaluated, not the ones its filter kept: those are read again, unfiltered.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import cost_model as m
from sundial.shared import constants as c
from sundial.shared import store

TABLE_KEYS = (c.PARTITION_KEY, c.SORT_KEY)
INDEXES = (
    m.Index(c.DUE_INDEX_NAME, (c.DUE_SHARD_ATTRIBUTE, c.DUE_KEY_ATTRIBUTE)),
    *(m.Index(name, (key, c.LIST_SORT_ATTRIBUTE)) for name, key in c.LIST_INDEX_KEYS.items()),
)
ITEM_WRITES = ("PutItem", "UpdateItem", "DeleteItem")
TRANSACT_WRITES = ("Put", "Update", "Delete")
SQS_SENDS = ("SendMessage", "SendMessageBatch")
STORE_PACKAGE = str(Path(store.__file__).parent)


class Meter:
    """Bills and call counts per Lambda function ("phase"), from hooks on the given clients."""

    def __init__(self, dynamodb: Any, sqs: Any, raw_dynamodb: Any, table: str) -> None:
        self._raw = raw_dynamodb
        self._table = table
        self._lock = threading.Lock()
        self.phase = "none"
        self.bills: dict[str, m.Bill] = {}
        self.calls: dict[str, Counter[str]] = {}
        self.item_sizes: Counter[str] = Counter()
        # Write requests per function: an item written alone is one, a transaction one per item.
        self.item_writes: Counter[str] = Counter()
        # Items written per function, by kind (JOB, RUN, SKIP, ...): those a write that succeeded wrote.
        self.items_written: dict[str, Counter[str]] = {}
        # Write units per function by cause: "<store call> <item kind>" for the item's own units,
        # "<store call> index <name>" for an index's, so a new write shows where it comes from.
        self.units_by_cause: dict[str, Counter[str]] = {}
        self.read_units_by_cause: dict[str, Counter[str]] = {}
        dynamodb.meta.events.register("before-parameter-build.dynamodb", self._before)
        dynamodb.meta.events.register("after-call.dynamodb", self._after_dynamodb)
        sqs.meta.events.register("before-parameter-build.sqs", self._before_sqs)
        sqs.meta.events.register("after-call.sqs", self._after_sqs)

    @contextlib.contextmanager
    def acting_as(self, function: str) -> Iterator[None]:
        """Attributes the calls made inside to one Lambda function (threads of a tick included)."""
        previous, self.phase = self.phase, function
        try:
            yield
        finally:
            self.phase = previous

    def bill(self, function: str) -> m.Bill:
        with self._lock:
            return self.bills.setdefault(function, m.Bill())

    def call_count(self, function: str) -> int:
        return sum(self.calls.get(function, Counter()).values())

    # --- hooks ------------------------------------------------------------------------------------

    def _before(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        context["bench_params"] = params
        if model.name in ITEM_WRITES:
            context["bench_before"] = self._current(
                params["Key"] if "Key" in params else _key(params["Item"])
            )
        elif model.name == "TransactWriteItems":
            context["bench_before"] = [self._current(_transact_key(op)) for op in params["TransactItems"]]

    def _after_dynamodb(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        params = context.get("bench_params", {})
        failed = "Error" in parsed
        units = 0.0
        reads = 0.0
        writes = 0
        if model.name in ITEM_WRITES:
            units = self._item_write(params, context.get("bench_before"), failed, model.name)
            writes = 1
        elif model.name == "TransactWriteItems":
            units = self._transaction(params, context.get("bench_before", []), failed)
            writes = len(params.get("TransactItems", []))
        if writes:
            kinds = [] if failed else _kinds_written(model.name, params)
            with self._lock:
                self.item_writes[self.phase] += writes
                self.items_written.setdefault(self.phase, Counter()).update(kinds)
        elif model.name == "GetItem":
            size = m.item_size(parsed.get("Item"))
            reads = m.read_units(size, bool(params.get("ConsistentRead")))
        elif model.name == "Query":
            found = parsed.get("Items", [])
            if "FilterExpression" in params and not failed:
                found = self._evaluated(params, int(parsed.get("ScannedCount", 0)))
            size = sum(m.item_size(item) for item in found)
            reads = m.read_units(size, bool(params.get("ConsistentRead")))
        elif model.name == "BatchGetItem":
            for found in parsed.get("Responses", {}).values():
                reads += sum(m.read_units(m.item_size(item), False) for item in found)
        if reads:
            # Read units by cause, as writes: the store call and what it read, the table or an index.
            self._charge_reads(f"{model.name} {params.get('IndexName', 'table')}", reads)
        self._record(model.name, lambda bill: _add_units(bill, units, reads))

    def _charge_reads(self, what: str, units: float) -> None:
        entry = _store_entry()
        with self._lock:
            self.read_units_by_cause.setdefault(self.phase, Counter())[f"{entry} {what}"] += units

    def _before_sqs(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        entries = params.get("Entries") or [params]
        context["bench_sqs_bytes"] = sum(len(str(entry.get("MessageBody", "")).encode()) for entry in entries)

    def _after_sqs(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        requests = 1.0
        if model.name in SQS_SENDS:
            # Billed per 64 KB chunk of payload; our messages are far smaller, so this stays 1.
            requests = max(1.0, math.ceil(int(context.get("bench_sqs_bytes", 0)) / m.SQS_REQUEST_CHUNK_BYTES))
        self._record(model.name, lambda bill: setattr(bill, "sqs_requests", bill.sqs_requests + requests))

    # --- units ------------------------------------------------------------------------------------

    def _item_write(self, params: dict[str, Any], before: Any, failed: bool, operation: str) -> float:
        key = params.get("Key") or _key(params["Item"])
        if failed:
            # A failed condition still consumes the units of the item it was checked against.
            units = m.write_units(m.item_size(before))
            self._charge({f"{_kind(key)} (refused)": units})
            return float(units)
        after = None if operation == "DeleteItem" else self._current(key)
        units = m.write_units(max(m.item_size(before), m.item_size(after)))
        self.item_sizes[f"{operation} {_kind(after or before)}"] = max(
            self.item_sizes[f"{operation} {_kind(after or before)}"], m.item_size(after)
        )
        charges = {_kind(key): units, **_index_charges(before, after)}
        self._charge(charges)
        return float(sum(charges.values()))

    def _transaction(self, params: dict[str, Any], befores: list[Any], failed: bool) -> float:
        """Twice the units of each item, and (an upper bound: AWS does not say) twice its index writes."""
        total = 0.0
        for op, before in zip(params["TransactItems"], befores, strict=True):
            key = _transact_key(op)
            after = None if failed else self._current(key)
            charges = {
                f"{_kind(key)} (transaction)": 2 * m.write_units(max(m.item_size(before), m.item_size(after)))
            }
            if not failed:
                charges |= {name: 2 * n for name, n in _index_charges(before, after).items()}
                self.item_sizes[f"TransactWriteItems {_kind(after)}"] = m.item_size(after)
            self._charge(charges)
            total += sum(charges.values())
        return total

    def _charge(self, charges: dict[str, int]) -> None:
        entry = _store_entry()
        with self._lock:
            causes = self.units_by_cause.setdefault(self.phase, Counter())
            for what, units in charges.items():
                if units:
                    causes[f"{entry} {what}"] += units

    def _evaluated(self, params: dict[str, Any], scanned: int) -> list[dict[str, Any]]:
        """The items a filtered query evaluated (DynamoDB bills them all, whatever its filter kept,
        and whole, whatever it projected): the same query from the same start, without its filter
        or projection, limited to the count it scanned."""
        if scanned == 0:
            return []
        request = {
            name: value
            for name, value in params.items()
            if name not in ("FilterExpression", "ProjectionExpression", "Select", "Limit")
        }
        used = set(_PLACEHOLDER.findall(str(params["KeyConditionExpression"])))
        for field in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            kept = {name: value for name, value in params.get(field, {}).items() if name in used}
            request.pop(field, None)
            if kept:
                request[field] = kept
        found: list[dict[str, Any]] = self._raw.query(**request, Limit=scanned).get("Items", [])
        return found

    def _current(self, key: dict[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._raw.get_item(
            TableName=self._table, Key=key, ConsistentRead=True
        ).get("Item")
        return item

    def _record(self, operation: str, apply: Any) -> None:
        with self._lock:
            function = self.phase
            apply(self.bills.setdefault(function, m.Bill()))
            self.calls.setdefault(function, Counter())[operation] += 1


def _add_units(bill: m.Bill, writes: float, reads: float) -> None:
    bill.write_units += writes
    bill.read_units += reads


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {name: item[name] for name in TABLE_KEYS}


def _transact_key(op: dict[str, Any]) -> dict[str, Any]:
    (_, body), *_ = op.items()
    return dict(body["Key"]) if "Key" in body else _key(body["Item"])


def _index_charges(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, int]:
    return {f"index {index.name}": m.index_writes(before, after, index) for index in INDEXES}


def _store_entry() -> str:
    """The store call this write was made for (JobStore.fence, .complete...): the outermost frame of
    the store package on this thread's stack, which the botocore hook runs on."""
    frame = sys._getframe(1)
    entry = "?"
    while frame is not None:
        if frame.f_code.co_filename.startswith(STORE_PACKAGE):
            entry = frame.f_code.co_name
        elif entry != "?":
            break
        frame = frame.f_back  # type: ignore[assignment]
    return entry


_PLACEHOLDER = re.compile(r"[#:][A-Za-z0-9_]+")


def _kinds_written(operation: str, params: dict[str, Any]) -> list[str]:
    """The kind of each item a write request wrote (a transaction's condition checks write none)."""
    if operation == "TransactWriteItems":
        return [
            _kind(body["Key"] if "Key" in body else _key(body["Item"]))
            for op in params.get("TransactItems", [])
            for name, body in op.items()
            if name in TRANSACT_WRITES
        ]
    return [_kind(params["Key"] if "Key" in params else _key(params["Item"]))]


def _kind(item: dict[str, Any] | None) -> str:
    """The kind of item by its sort key: JOB, RUN#..., PAYLOAD, IDEM."""
    if not item:
        return "?"
    return str(item[c.SORT_KEY]["S"]).split("#", 1)[0]
