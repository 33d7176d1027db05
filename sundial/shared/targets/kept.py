"""What the worker read from AWS at delivery, kept for a minute per execution environment.

A worker delivering the same job's retries, or many jobs that share one credential, reads a value
once a minute instead of once a delivery (each read costs money and adds a round trip), and a value
put anew is in use within that minute. Referenced secrets (sundial/shared/targets/secrets.py), sealed
values (sundial/shared/targets/sealing.py) and the signing secret (sundial/shared/targets/signing.py)
are kept this way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

CACHE_SECONDS = 60.0

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Kept(Generic[K, V]):
    """Values by key, each read when missing or older than `seconds`; `reads` counts the reads."""

    def __init__(
        self, *, seconds: float = CACHE_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._seconds = seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._values: dict[K, tuple[float, V]] = {}
        self.reads = 0  # calls to AWS, for the cost figures (bench)
        self.hits = 0

    def get(self, key: K, read: Callable[[], V]) -> V:
        """The value kept for `key`, else `read()`'s (kept from now). What `read` raises goes
        through, and nothing is kept then."""
        now = self._clock()
        with self._lock:
            kept = self._values.get(key)
            if kept is not None and now - kept[0] < self._seconds:
                self.hits += 1
                return kept[1]
            self.reads += 1
        value = read()
        with self._lock:
            self._values[key] = (now, value)
        return value

    def values(self) -> list[V]:
        """Every value kept, fresh or not: a value read a while ago may still be in a text."""
        with self._lock:
            return [value for _, value in self._values.values()]
