"""Spread windows: where inside [instant, instant + window) an occurrence starts (docs/schedules.md,
"Spread windows").

The point is a keyed hash of the job id and the scheduled instant, so every replay, every reader
and every writer finds the same one, and a fan-out of many jobs at one instant spreads evenly over
the window. The window never reaches the schedule's next instant: when that comes sooner, the
window is the gap to it, so occurrences keep their order and a start never passes the next
occurrence's instant.
"""

from __future__ import annotations

import hashlib

from sundial.shared.schedules.schedule import Schedule

_KEY = b"sundial spread window v1"
_SECOND_MS = 1000


def spread_ms(job_id: str, instant_ms: int, window_ms: int) -> int:
    """The offset in [0, window_ms) of the occurrence of `job_id` at `instant_ms`; 0 without a window."""
    if window_ms <= 0:
        return 0
    digest = hashlib.blake2b(f"{job_id}#{instant_ms}".encode(), key=_KEY, digest_size=8).digest()
    return int.from_bytes(digest, "big") % window_ms


def start_instant(job_id: str, instant_ms: int, window_seconds: int, schedule: Schedule | None = None) -> int:
    """The instant the occurrence scheduled at `instant_ms` starts at: never before it, always before
    `instant_ms + window_seconds`, and before the schedule's next instant when `schedule` is given."""
    window_ms = window_seconds * _SECOND_MS
    if window_ms <= 0:
        return instant_ms
    if schedule is not None:
        following = schedule.rule.next_after(instant_ms)
        if following is not None:
            window_ms = min(window_ms, following - instant_ms)
    return instant_ms + spread_ms(job_id, instant_ms, window_ms)
