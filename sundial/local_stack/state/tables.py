"""The one place that reaches into moto's DynamoDB backend: an item's image after a write, every
item for a snapshot, and items put back at start-up.

Items are kept as the DynamoDB JSON images moto answers with, keyed by account, region and table;
a table's definition is kept as the requests that made it (see local_stack.state.app).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from moto.dynamodb.exceptions import ResourceNotFoundException
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table

from sundial.local_stack import index_partitions

Attributes = dict[str, Any]
DEFAULT_REGION = "us-east-1"
_REGION = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/")


def request_region(authorization: str) -> str:
    """The region a signed request names, as moto picks its backend by it."""
    match = _REGION.search(authorization)
    return match.group(1) if match else DEFAULT_REGION


@dataclass(frozen=True)
class TableRef:
    account: str
    region: str
    name: str

    def record(self) -> dict[str, str]:
        return {"a": self.account, "r": self.region, "t": self.name}

    @classmethod
    def of(cls, record: dict[str, Any]) -> TableRef:
        return cls(str(record["a"]), str(record["r"]), str(record["t"]))


def find(region: str, name: str) -> tuple[TableRef, Table] | None:
    """The table of that name in that region, in whichever account holds it (without making any)."""
    for account, regions in dict.items(dynamodb_backends):
        backend = dict.get(regions, region)
        if backend is not None and name in backend.tables:
            return TableRef(account, region, name), backend.tables[name]
    return None


def key_of(table: Table, attributes: Attributes) -> Attributes:
    """The key attributes of an item (or of a request's Key)."""
    names = [table.hash_key_attr, *([table.range_key_attr] if table.range_key_attr else [])]
    return {name: attributes[name] for name in names}


def image(table: Table, key: Attributes) -> Attributes | None:
    """The item as it now is, or None when there is none."""
    hash_value = DynamoType(key[table.hash_key_attr])
    if table.range_key_attr:
        item = table.items.get(hash_value, {}).get(DynamoType(key[table.range_key_attr]))
    else:
        item = table.items.get(hash_value)
    return None if item is None else dict(item.to_json()["Attributes"])


def put_image(ref: TableRef, key: Attributes | None, attributes: Attributes | None) -> None:
    """Sets one item as an image says (None: absent), without moto's checks: it passed them once.
    Without `key`, the image's own key attributes say which item."""
    try:
        table: Table = dynamodb_backends[ref.account][ref.region].get_table(ref.name)
    except ResourceNotFoundException:
        raise LookupError(f"an item of table {ref.name}, which no earlier record creates") from None
    index_partitions.moved_on()
    if key is None:
        assert attributes is not None
        key = key_of(table, attributes)
    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    if range_value is None:
        _place(table.items, hash_value, attributes, hash_value, None)
    else:
        _place(table.items[hash_value], range_value, attributes, hash_value, range_value)


def _place(
    slots: dict[Any, Any],
    slot: DynamoType,
    attributes: Attributes | None,
    hash_value: DynamoType,
    range_value: DynamoType | None,
) -> None:
    if attributes is None:
        slots.pop(slot, None)
    else:
        slots[slot] = _item(hash_value, range_value, attributes)


def _item(hash_value: DynamoType, range_value: DynamoType | None, attributes: Attributes) -> Item:
    """An Item as moto's own deepcopy makes one: Item() checks the size on each attribute it adds
    (quadratic in attributes, most of a restore's time), and this image passed that check once."""
    item = cast(Item, Item.__new__(Item))
    item.hash_key, item.range_key = hash_value, range_value
    values = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.__init__(values)
    for name, value in attributes.items():
        dict.__setitem__(values, name, DynamoType(value))
    item.attrs = values
    return item


def _tables() -> Iterator[tuple[TableRef, Table]]:
    for account, regions in dict.items(dynamodb_backends):
        for region, backend in dict.items(regions):
            for name, table in backend.tables.items():
                yield TableRef(account, region, name), table


def every_item() -> Iterator[tuple[TableRef, Attributes]]:
    """Every item of every table, as images."""
    for ref, table in _tables():
        for slot in table.items.values():
            found: list[Any] = list(slot.values()) if table.range_key_attr else [slot]
            for item in found:
                yield ref, dict(item.to_json()["Attributes"])


def count() -> int:
    """How many items every table holds together."""
    return sum(len(table) for _, table in _tables())
