"""What `sundial local` can be told, and how its worker threads are split between the queues."""

from __future__ import annotations

from dataclasses import dataclass

from shared import constants as c

DEFAULT_PORT = 8000
DEFAULT_WORKERS = 14
# Worker threads per queue, in these proportions (as the deployed MaximumConcurrency: high gets most).
POOL_WEIGHTS = {c.Priority.HIGH: 4, c.Priority.MEDIUM: 2, c.Priority.LOW: 1}


@dataclass(frozen=True)
class LocalOptions:
    port: int = DEFAULT_PORT
    endpoint_url: str | None = None  # None: start an emulator of our own
    tick_seconds: float = c.TICK_SECONDS
    workers: int = DEFAULT_WORKERS
    allow_private: bool = True


def pool_sizes(workers: int) -> dict[c.Priority, int]:
    """Splits `workers` threads between the queues by POOL_WEIGHTS, at least one each."""
    total = sum(POOL_WEIGHTS.values())
    return {priority: max(1, workers * weight // total) for priority, weight in POOL_WEIGHTS.items()}
