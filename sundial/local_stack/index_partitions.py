"""A query on one of moto's global secondary indexes reads only the partition it names.

moto answers such a query by sorting the whole table and testing every item against the index's
key. The listing pages through its sharded indexes with a query per shard (and a count per shard for
the total), so a first page of 10,000 jobs cost about 33 passes over every item, and the page took
seconds where DynamoDB reads only the partitions. Here each index's items are grouped by their
partition key once, and moto's query runs on the named partition's items alone: the same items it
would have kept, so its answer is the same.

The grouping is rebuilt after any write: every DynamoDB request that is not a read moves the
version on (the emulator serialises DynamoDB's requests, so none lands during a query), as does a
restore that puts items back without a request.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, cast

from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table

# Requests that change nothing; any other DynamoDB request may, and moves the version on.
READS = frozenset(
    {
        "BatchGetItem",
        "DescribeContinuousBackups",
        "DescribeTable",
        "DescribeTimeToLive",
        "GetItem",
        "ListTables",
        "ListTagsOfResource",
        "Query",
        "Scan",
    }
)

_Partitions = dict[tuple[Any, ...], list[Item]]


class _Versions:
    def __init__(self) -> None:
        self.version = 0
        self.built: dict[tuple[int, str], tuple[int, _Partitions]] = {}
        self.scope = threading.local()

    def moved_on(self) -> None:
        self.version += 1
        self.built.clear()


_versions = _Versions()


def moved_on() -> None:
    """Items changed without a request (a restore): every grouping is stale."""
    _versions.moved_on()


def after_request(action: str) -> None:
    """Called after each DynamoDB request with its action (`PutItem`, `Query`, ...)."""
    if action not in READS:
        _versions.moved_on()


def _value(value: DynamoType | None) -> Any:
    if value is None:
        return None
    cast = value.cast_value
    # Numbers compare by value (1 and 1.0 are one key), as DynamoDB and moto compare them.
    return (value.type, cast if isinstance(cast, int | float | str) else repr(cast))


def _every_item(table: Table) -> list[Item]:
    """The table's items in no particular order: moto sorts a query's answer itself."""
    if table.range_key_attr:
        return [item for slot in table.items.values() for item in slot.values()]
    return [item for item in table.items.values() if isinstance(item, Item)]


def _partitions(table: Table, index: Any, names: list[str]) -> _Partitions:
    key = (id(table), str(index.name))
    kept = _versions.built.get(key)
    if kept is not None and kept[0] == _versions.version:
        return kept[1]
    keys_only = (index.projection or {}).get("ProjectionType") == "KEYS_ONLY"
    kept_names = [*index.table_key_attrs, *(part["AttributeName"] for part in index.schema)]
    grouped: _Partitions = {}
    for item in _every_item(table):
        values = tuple(_value(item.attrs.get(name)) for name in names)
        if None not in values:
            grouped.setdefault(values, []).append(_keys_of(item, kept_names) if keys_only else item)
    for partition in grouped.values():
        _in_index_order(partition, kept_names)
    _versions.built[key] = (_versions.version, grouped)
    return grouped


def _in_index_order(partition: list[Item], names: list[str]) -> None:
    """Sorts by plain values once, so that moto's own sort of a query's items, which compares
    DynamoTypes, meets them in order. Left as they are where values of two types share a key."""
    order = [*names[2:], *names[:2]]  # the index's keys, then the table's
    with contextlib.suppress(TypeError):
        partition.sort(key=lambda item: tuple(_plain(item.attrs.get(name)) for name in order))


def _plain(value: DynamoType | None) -> Any:
    return () if value is None else (value.cast_value,)


def _keys_of(item: Item, names: list[str]) -> Item:
    """The item as a KEYS_ONLY index holds it. moto would project it after reading it whole, sizing
    and copying every attribute of each item it passes on the way; its answer is the same."""
    projected = cast(Item, Item.__new__(Item))
    projected.hash_key, projected.range_key = item.hash_key, item.range_key
    attributes = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.__init__(attributes)
    for name in names:
        if name in item.attrs:
            dict.__setitem__(attributes, name, item.attrs[name])
    projected.attrs = attributes
    return projected


class _Patched:
    """moto's Table.all_items and Table.query as they were before install()."""

    all_items: Any = None
    query: Any = None


def _all_items(self: Table) -> list[Item]:
    partition: list[Item] | None = getattr(_versions.scope, "items", None)
    return list(partition) if partition is not None else _Patched.all_items(self)


def _query(self: Table, *args: Any, **kwargs: Any) -> Any:
    index_name = args[7] if len(args) > 7 else kwargs.get("index_name")
    index = next((i for i in self.global_indexes or [] if i.name == index_name), None)
    if index is None:
        return _Patched.query(self, *args, **kwargs)
    names = [key["AttributeName"] for key in index.schema if key["KeyType"] == "HASH"]
    conditions = dict(kwargs.get("hash_key_conditions") or [])
    if not conditions and args and args[0] is not None and len(names) == 1:
        conditions = {names[0]: args[0]}
    if set(conditions) != set(names):
        return _Patched.query(self, *args, **kwargs)
    wanted = tuple(_value(conditions[name]) for name in names)
    _versions.scope.items = _partitions(self, index, names).get(wanted, [])
    try:
        return _Patched.query(self, *args, **kwargs)
    finally:
        _versions.scope.items = None


def install() -> None:
    """Puts the partition reads in front of whatever moto's Table methods are now (once)."""
    if _Patched.query is None:
        _Patched.all_items, _Patched.query = Table.all_items, Table.query
        Table.all_items = _all_items  # type: ignore[method-assign]
        Table.query = _query  # type: ignore[method-assign]
