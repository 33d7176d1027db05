"""What every schedule form provides, and the defaults for forms that are a fixed set of instants."""

from __future__ import annotations

from abc import ABC, abstractmethod

# The search for the latest occurrence before an instant starts with this window and doubles it.
_FIRST_WINDOW_MS = 2 * 60_000


class Rule(ABC):
    """The occurrences of one schedule expression in one time zone, as UTC epoch milliseconds.

    The defaults suit cron and at(): their occurrences are a fixed set, so "the first one after t"
    depends on t alone. rate() counts from an anchor and overrides them.
    """

    recurring: bool = True

    @abstractmethod
    def next_after(self, after_ms: int) -> int | None:
        """The first occurrence strictly after `after_ms`, or None when there is none."""

    def first_when_active(self, active_ms: int) -> int | None:
        """The first occurrence of a schedule that becomes active at `active_ms`."""
        return self.next_after(active_ms - 1)

    def first_from(self, anchor_ms: int, at_ms: int) -> int | None:
        """The first occurrence at or after `at_ms` of the series that continues after `anchor_ms`."""
        return self.next_after(max(anchor_ms, at_ms - 1))

    def latest_before(self, anchor_ms: int, before_ms: int) -> int | None:
        """The last occurrence earlier than `before_ms` of the series after `anchor_ms`, if any.

        Searched backwards in doubling windows, so a long downtime costs a few dozen steps, not
        one step per missed occurrence.
        """
        width = _FIRST_WINDOW_MS
        while True:
            floor = max(anchor_ms, before_ms - width)
            latest = self._last_between(floor, before_ms)
            if latest is not None or floor == anchor_ms:
                return latest
            width *= 2

    def _last_between(self, floor_ms: int, before_ms: int) -> int | None:
        latest = None
        candidate = self.next_after(floor_ms)
        while candidate is not None and candidate < before_ms:
            latest = candidate
            candidate = self.next_after(candidate)
        return latest
