"""Retry timing as a pure strategy: the job's backoff list, the last entry repeating, with jitter."""

from __future__ import annotations

import random
from collections.abc import Sequence

JITTER = 0.10


def retry_delay_seconds(backoff: Sequence[int], retry_number: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry `retry_number` (1 for the first retry), jittered by ±10 %.

    Jitter spreads retries of jobs that failed together (a target outage) so they do not return as a
    thundering herd. Raises ValueError for an empty backoff or a retry number below 1.
    """
    if not backoff or retry_number < 1:
        raise ValueError("backoff must be non-empty and retry_number at least 1")
    base = backoff[min(retry_number, len(backoff)) - 1]
    spread = (rng or random).uniform(-JITTER, JITTER)
    return max(0.0, base * (1 + spread))
