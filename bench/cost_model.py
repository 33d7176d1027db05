"""DynamoDB capacity units from item sizes, and list prices: pure arithmetic, tested on its own.

Sizes follow DynamoDB's published rules: an attribute is its name's UTF-8 bytes plus its value's
size; a number takes about one byte per two significant digits plus one; lists and maps add three
bytes plus one per element; an index entry is its keys, the table's keys and 100 bytes of overhead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

KB = 1024
READ_UNIT_BYTES = 4 * KB
INDEX_ENTRY_OVERHEAD = 100

# List prices, us-east-1 (DynamoDB on-demand and provisioned standard table class; Lambda arm64).
PRICE_PER_WRITE_UNIT = 0.625 / 1e6
PRICE_PER_READ_UNIT = 0.125 / 1e6
PRICE_PER_WCU_HOUR = 0.00065
PRICE_PER_RCU_HOUR = 0.00013
PRICE_PER_SQS_REQUEST = 0.40 / 1e6
PRICE_PER_LAMBDA_REQUEST = 0.20 / 1e6
PRICE_PER_GB_SECOND = 0.0000133334
# Amazon API Gateway pricing: a REST API's first 333 million requests a month, and an HTTP API's
# first 300 million (`sundial:api=http`).
PRICE_PER_API_REQUEST = 3.50 / 1e6
PRICE_PER_HTTP_API_REQUEST = 1.00 / 1e6
EVENTBRIDGE_SCHEDULER_PER_MILLION = 1.00
SECONDS_PER_MONTH = 730 * 3600  # AWS prices a month as 730 hours
SQS_REQUEST_CHUNK_BYTES = 64 * KB  # each 64 KB of a request is billed as one request

Item = dict[str, Any]


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one attribute value in DynamoDB's wire form ({"S": ...}, {"N": ...}, ...)."""
    (kind, body), *_ = value.items()
    if kind == "S":
        return len(str(body).encode())
    if kind == "N":
        return number_size(str(body))
    if kind == "B":
        return len(body)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(value_size(element) + 1 for element in body)
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in body.items())
    if kind == "SS":
        return sum(len(str(element).encode()) for element in body)
    if kind == "NS":
        return sum(number_size(str(element)) for element in body)
    if kind == "BS":
        return sum(len(element) for element in body)
    raise ValueError(f"unknown attribute type {kind}")


def number_size(text: str) -> int:
    digits = format(abs(Decimal(text)), "f").replace(".", "").strip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def item_size(item: Item | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(size_bytes: int) -> int:
    """Write units for one write of an item of this size: 1 per KB, at least 1."""
    return max(1, math.ceil(size_bytes / KB))


def read_units(size_bytes: int, consistent: bool) -> float:
    """Read units for reading this many bytes in one request: 1 (strong) or 0.5 (eventual) per 4 KB,
    at least one 4 KB unit even when nothing comes back."""
    units = max(1, math.ceil(size_bytes / READ_UNIT_BYTES))
    return units * (1.0 if consistent else 0.5)


@dataclass(frozen=True)
class Index:
    """A global secondary index with a KEYS_ONLY projection: only key changes write to it."""

    name: str
    keys: tuple[str, ...]


def index_writes(before: Item | None, after: Item | None, index: Index) -> int:
    """Index writes caused by one table write: 2 when the entry's key changes (delete and put),
    1 when the entry appears or disappears, 0 when its keys are untouched (nothing else is projected)."""
    had = before is not None and all(key in before for key in index.keys)
    has = after is not None and all(key in after for key in index.keys)
    if had and has:
        assert before is not None and after is not None
        return 0 if all(before[key] == after[key] for key in index.keys) else 2
    return int(had) + int(has)


def index_entry_size(item: Item, index: Index, table_keys: tuple[str, ...]) -> int:
    names = {*index.keys, *table_keys}
    return item_size({name: item[name] for name in names if name in item}) + INDEX_ENTRY_OVERHEAD


@dataclass
class Bill:
    """What a set of calls costs, counted in units and requests before any price is applied."""

    write_units: float = 0.0
    read_units: float = 0.0
    sqs_requests: float = 0.0
    lambda_requests: dict[str, float] = field(default_factory=dict)
    gb_seconds: dict[str, float] = field(default_factory=dict)
    api_requests: float = 0.0

    def add_lambda(self, function: str, invocations: float, gb_seconds: float) -> None:
        self.lambda_requests[function] = self.lambda_requests.get(function, 0.0) + invocations
        self.gb_seconds[function] = self.gb_seconds.get(function, 0.0) + gb_seconds

    def scaled(self, factor: float) -> Bill:
        return Bill(
            self.write_units * factor,
            self.read_units * factor,
            self.sqs_requests * factor,
            {k: v * factor for k, v in self.lambda_requests.items()},
            {k: v * factor for k, v in self.gb_seconds.items()},
            self.api_requests * factor,
        )

    def plus(self, other: Bill) -> Bill:
        total = Bill(
            self.write_units + other.write_units,
            self.read_units + other.read_units,
            self.sqs_requests + other.sqs_requests,
            dict(self.lambda_requests),
            dict(self.gb_seconds),
            self.api_requests + other.api_requests,
        )
        for function in other.lambda_requests:
            total.add_lambda(function, other.lambda_requests[function], other.gb_seconds.get(function, 0.0))
        return total

    def dollars(self, api_price: float = PRICE_PER_API_REQUEST) -> dict[str, float]:
        """Dollars for these counts, by service, with API requests at `api_price` (the REST API's
        unless another is given)."""
        return {
            "dynamodb": self.write_units * PRICE_PER_WRITE_UNIT + self.read_units * PRICE_PER_READ_UNIT,
            "sqs": self.sqs_requests * PRICE_PER_SQS_REQUEST,
            "lambda_requests": sum(self.lambda_requests.values()) * PRICE_PER_LAMBDA_REQUEST,
            "lambda_gb_seconds": sum(self.gb_seconds.values()) * PRICE_PER_GB_SECOND,
            "api_gateway": self.api_requests * api_price,
        }

    def total_dollars(self, api_price: float = PRICE_PER_API_REQUEST) -> float:
        return sum(self.dollars(api_price).values())


def provisioned_dynamodb_per_execution(
    write_units: float, read_units: float, executions_per_second: float, target_utilization: float
) -> float:
    """Dollars per execution of a provisioned table carrying a steady load: auto scaling holds the
    capacity at the load over the target utilisation, billed by the hour whether used or not. Read
    units are counted as read_units() counts them: an eventual read of 4 KB takes half of one."""
    wcu = write_units * executions_per_second / target_utilization
    rcu = read_units * executions_per_second / target_utilization
    dollars_per_second = (wcu * PRICE_PER_WCU_HOUR + rcu * PRICE_PER_RCU_HOUR) / 3600
    return dollars_per_second / executions_per_second
