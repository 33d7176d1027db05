"""Limits per key: how a key's limit is spread over shards, and who may start now (pure rules)."""

from sundial.shared.limits.gate import (
    HOLD_MAX_MS,
    HOLD_MIN_MS,
    WAITERS_KEPT,
    Admission,
    Booking,
    LimitConfig,
    ShardShare,
    ShardState,
    Waiter,
    admit,
    booked,
    rank_of,
    shard_count,
    share_of,
)

__all__ = [
    "HOLD_MAX_MS",
    "HOLD_MIN_MS",
    "WAITERS_KEPT",
    "Admission",
    "Booking",
    "LimitConfig",
    "ShardShare",
    "ShardState",
    "Waiter",
    "admit",
    "booked",
    "rank_of",
    "shard_count",
    "share_of",
]
