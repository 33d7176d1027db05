"""Deployment choices read from CDK context (`cdk.json` or `cdk deploy -c key=value`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from constructs import Node

from shared.constants import Priority

PREFIX = "sundial:"
MAX_CONCURRENCY_KEYS: Mapping[Priority, str] = {
    Priority.HIGH: PREFIX + "maxConcurrencyHigh",
    Priority.MEDIUM: PREFIX + "maxConcurrencyMedium",
    Priority.LOW: PREFIX + "maxConcurrencyLow",
}
TARGET_ARNS_KEY = PREFIX + "targetArns"
ALARM_EMAIL_KEY = PREFIX + "alarmEmail"
SCHEDULER_CONCURRENCY_KEY = PREFIX + "schedulerReservedConcurrency"
LATENESS_P99_KEY = PREFIX + "startLatenessP99ThresholdMs"
API_RATE_LIMIT_KEY = PREFIX + "apiRateLimit"
API_BURST_LIMIT_KEY = PREFIX + "apiBurstLimit"

DEFAULT_MAX_CONCURRENCY: Mapping[Priority, int] = {Priority.HIGH: 50, Priority.MEDIUM: 20, Priority.LOW: 5}
# Two overlapping ticks are harmless (claims are conditional writes); more would only mean ticks
# take longer than two minutes, which the duration alarm reports.
DEFAULT_SCHEDULER_CONCURRENCY = 2
DEFAULT_LATENESS_P99_MS = 1000
DEFAULT_API_RATE_LIMIT = 100
DEFAULT_API_BURST_LIMIT = 200

# Lambda's bounds for an SQS event source's MaximumConcurrency.
_ESM_CONCURRENCY = range(2, 1001)


@dataclass(frozen=True)
class Settings:
    max_concurrency: Mapping[Priority, int]
    target_arns: tuple[str, ...] = ()
    alarm_email: str | None = None
    scheduler_reserved_concurrency: int = DEFAULT_SCHEDULER_CONCURRENCY
    start_lateness_p99_threshold_ms: int = DEFAULT_LATENESS_P99_MS
    api_rate_limit: int = DEFAULT_API_RATE_LIMIT
    api_burst_limit: int = DEFAULT_API_BURST_LIMIT

    @classmethod
    def from_context(cls, node: Node) -> Settings:
        """Raises ValueError naming the context key when a value is unusable."""
        return cls(
            max_concurrency={
                priority: _concurrency(node, key, DEFAULT_MAX_CONCURRENCY[priority])
                for priority, key in MAX_CONCURRENCY_KEYS.items()
            },
            target_arns=_string_list(node, TARGET_ARNS_KEY),
            alarm_email=_optional_string(node, ALARM_EMAIL_KEY),
            scheduler_reserved_concurrency=_integer(
                node, SCHEDULER_CONCURRENCY_KEY, DEFAULT_SCHEDULER_CONCURRENCY, minimum=1
            ),
            start_lateness_p99_threshold_ms=_integer(
                node, LATENESS_P99_KEY, DEFAULT_LATENESS_P99_MS, minimum=1
            ),
            api_rate_limit=_integer(node, API_RATE_LIMIT_KEY, DEFAULT_API_RATE_LIMIT, minimum=1),
            api_burst_limit=_integer(node, API_BURST_LIMIT_KEY, DEFAULT_API_BURST_LIMIT, minimum=1),
        )


def _concurrency(node: Node, key: str, default: int) -> int:
    value = _integer(node, key, default, minimum=_ESM_CONCURRENCY.start)
    if value not in _ESM_CONCURRENCY:
        raise ValueError(f"context {key}={value}: must be 2-1000 (SQS event source MaximumConcurrency)")
    return value


def _integer(node: Node, key: str, default: int, *, minimum: int) -> int:
    # `-c key=value` on the command line always arrives as a string; cdk.json gives JSON values.
    raw: Any = node.try_get_context(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"context {key}={raw!r}: must be an integer") from None
    if value < minimum:
        raise ValueError(f"context {key}={value}: must be at least {minimum}")
    return value


def _optional_string(node: Node, key: str) -> str | None:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return None
    return str(raw)


def _string_list(node: Node, key: str) -> tuple[str, ...]:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return ()
    if isinstance(raw, str):
        # From the command line: a JSON list or comma-separated values.
        raw = json.loads(raw) if raw.lstrip().startswith("[") else raw.split(",")
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ValueError(f"context {key}: must be a list of strings, got {raw!r}")
    return tuple(item.strip() for item in raw if item.strip())
