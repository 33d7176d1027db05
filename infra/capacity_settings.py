"""Capacity choices read from CDK context: the table's billing mode, its provisioned capacity and
warm throughput, and the queues' event sources' provisioned pollers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from constructs import Node

from sundial.contract.vocabulary import Priority

PROVISIONED_POLLERS_HIGH_KEY = "sundial:provisionedPollersHigh"
PROVISIONED_POLLERS_KEYS: Mapping[Priority, str] = {
    Priority.HIGH: PROVISIONED_POLLERS_HIGH_KEY,
    Priority.MEDIUM: "sundial:provisionedPollersMedium",
    Priority.LOW: "sundial:provisionedPollersLow",
}
BILLING_MODE_KEY = "sundial:billingMode"
CAPACITY_KEY = "sundial:provisionedCapacity"
WARM_THROUGHPUT_KEY = "sundial:warmThroughput"

ON_DEMAND, PROVISIONED = "on-demand", "provisioned"
# Lambda's bounds for an SQS event source's provisioned pollers.
_SQS_MINIMUM_POLLERS, _SQS_MAXIMUM_POLLERS = range(2, 201), range(2, 2001)
# DynamoDB's warm throughput: a new table or index already serves 4,000 write and 12,000 read units a
# second, and a table's on-demand throughput stops at the per-table quota, 40,000 each by default.
_WARM_WRITE, _WARM_READ = range(4000, 40001), range(12000, 40001)
# Application Auto Scaling's bounds for a DynamoDB target utilisation.
_TARGET_UTILIZATION = range(20, 91)


@dataclass(frozen=True)
class Capacity:
    """Provisioned mode: each of the table and its two indexes scales its reads and its writes
    between these bounds, towards the target utilisation. The defaults carry a steady 10,000
    executions a minute (about 170 a second at 4 to 5 write units each; docs/operations.md) and
    cost about $15 a month when idle."""

    read_min: int = 5
    read_max: int = 1000
    write_min: int = 5
    write_max: int = 2000
    target_utilization: int = 70


@dataclass(frozen=True)
class WarmThroughput:
    """Units a second the table and each of its indexes serve at once, from the first request."""

    write: int
    read: int


@dataclass(frozen=True)
class Pollers:
    """Provisioned mode for an SQS event source: pollers kept warm, and the most it may scale to."""

    minimum: int
    maximum: int


def pollers_from_context(node: Node) -> dict[Priority, Pollers]:
    """`sundial:provisionedPollersHigh` (and `...Medium`, `...Low`): "MIN,MAX" or {"minimum": MIN,
    "maximum": MAX}, provisioned mode for that queue's event source."""
    chosen = {priority: _queue_pollers(node, key) for priority, key in PROVISIONED_POLLERS_KEYS.items()}
    return {priority: pollers for priority, pollers in chosen.items() if pollers is not None}


def _queue_pollers(node: Node, key: str) -> Pollers | None:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.lstrip().startswith("{") else raw.split(",")
    pair: Any = [raw.get("minimum"), raw.get("maximum")] if isinstance(raw, dict) else raw
    try:
        minimum, maximum = (int(value) for value in pair)
    except (TypeError, ValueError):
        raise ValueError(
            f'context {key}={raw!r}: must be \'MIN,MAX\' or {{"minimum": MIN, "maximum": MAX}}'
        ) from None
    if minimum not in _SQS_MINIMUM_POLLERS or maximum not in _SQS_MAXIMUM_POLLERS or minimum > maximum:
        raise ValueError(
            f"context {key}={raw!r}: need a minimum of 2-200 and a maximum "
            "of 2-2000, not below the minimum (SQS provisioned pollers)"
        )
    return Pollers(minimum, maximum)


def warm_throughput_from_context(node: Node) -> WarmThroughput | None:
    """`sundial:warmThroughput`: "WRITE" or "WRITE,READ" units a second, or {"write": W, "read": R}."""
    raw: Any = node.try_get_context(WARM_THROUGHPUT_KEY)
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.lstrip().startswith("{") else raw.split(",")
    elif isinstance(raw, int):
        raw = [raw]
    values: Any = [raw.get("write"), raw.get("read", _WARM_READ.start)] if isinstance(raw, dict) else raw
    try:
        write, read = (int(value) for value in [*values, _WARM_READ.start][:2])
    except (TypeError, ValueError):
        raise ValueError(
            f'context {WARM_THROUGHPUT_KEY}={raw!r}: must be "WRITE", "WRITE,READ" or '
            '{"write": WRITE, "read": READ} (units a second)'
        ) from None
    if write not in _WARM_WRITE or read not in _WARM_READ:
        raise ValueError(
            f"context {WARM_THROUGHPUT_KEY}={raw!r}: need 4,000-40,000 write and 12,000-40,000 read units "
            "a second (less is what DynamoDB serves already; more is past the per-table quota of 40,000, "
            "which a Service Quotas increase raises: then raise the warm throughput with "
            "`aws dynamodb update-table --warm-throughput`)"
        )
    return WarmThroughput(write=write, read=read)


def _billing_mode(node: Node) -> str:
    raw: Any = node.try_get_context(BILLING_MODE_KEY)
    if raw is None or raw == "":
        return ON_DEMAND
    value = str(raw)
    if value not in (ON_DEMAND, PROVISIONED):
        raise ValueError(f"context {BILLING_MODE_KEY}={value!r}: must be one of {ON_DEMAND}, {PROVISIONED}")
    return value


def capacity_from_context(node: Node) -> Capacity | None:
    """`sundial:billingMode` provisioned, with `sundial:provisionedCapacity` (a JSON object of any of
    readMin, readMax, writeMin, writeMax, targetUtilization) overriding the defaults."""
    if _billing_mode(node) == ON_DEMAND:
        if node.try_get_context(CAPACITY_KEY) not in (None, ""):
            raise ValueError(f"context {CAPACITY_KEY} needs {BILLING_MODE_KEY}={PROVISIONED}")
        return None
    raw: Any = node.try_get_context(CAPACITY_KEY)
    if raw is None or raw == "":
        raw = {}
    if isinstance(raw, str):
        raw = json.loads(raw)
    names = {
        "readMin": "read_min",
        "readMax": "read_max",
        "writeMin": "write_min",
        "writeMax": "write_max",
        "targetUtilization": "target_utilization",
    }
    if not isinstance(raw, dict) or not set(raw) <= set(names):
        raise ValueError(
            f"context {CAPACITY_KEY}={raw!r}: must be an object with keys among {', '.join(names)}"
        )
    try:
        capacity = Capacity(**{names[k]: int(v) for k, v in raw.items()})
    except (TypeError, ValueError):
        raise ValueError(f"context {CAPACITY_KEY}={raw!r}: every value must be an integer") from None
    if not 1 <= capacity.read_min <= capacity.read_max or not 1 <= capacity.write_min <= capacity.write_max:
        raise ValueError(f"context {CAPACITY_KEY}={raw!r}: need 1 <= min <= max for reads and writes")
    if capacity.target_utilization not in _TARGET_UTILIZATION:
        raise ValueError(f"context {CAPACITY_KEY}={raw!r}: targetUtilization must be 20-90 (percent)")
    return capacity
