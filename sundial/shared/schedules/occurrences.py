"""When a job runs: previews, the first occurrence of a new job, and the one after each run.

All instants are UTC epoch milliseconds. The active window is half-open: an occurrence runs when
start_at <= occurrence < end_at. A schedule ends where the range of instants ends (instants.py): an
occurrence that would lie past it is none, and an instant outside it (only data stored before the
range was checked holds one) has no occurrence after it.
"""

from __future__ import annotations

from collections.abc import Callable

from sundial.contract.bounds import in_range
from sundial.contract.vocabulary import MisfirePolicy
from sundial.shared.errors import InvalidInput
from sundial.shared.schedules.rule import Rule
from sundial.shared.schedules.schedule import Schedule

MAX_COUNT = 100


def next_runs(
    schedule: Schedule,
    after_ms: int,
    count: int,
    start_at_ms: int | None = None,
    end_at_ms: int | None = None,
) -> list[int]:
    """The next `count` occurrences strictly after `after_ms`, within the window; fewer if it ends.

    This is POST /schedules/preview. When start_at_ms lies ahead, the series starts there as for a
    new job (a rate's first run is one period after start_at_ms). Raises InvalidInput with field
    "count" unless 1 <= count <= 100, and field "end_at" when end_at_ms is not after start_at_ms.
    """
    check_window(start_at_ms, end_at_ms)
    if not 1 <= count <= MAX_COUNT:
        raise InvalidInput(f"count must be 1-{MAX_COUNT}", field="count")
    rule = schedule.rule
    start = after_ms if start_at_ms is None else max(after_ms, start_at_ms)
    if not in_range(start):
        return []
    if start_at_ms is not None and start_at_ms > after_ms:
        upcoming = _kept(rule.first_when_active(start_at_ms))
    else:
        upcoming = _kept(rule.next_after(after_ms))
    runs: list[int] = []
    while upcoming is not None and _before_end(upcoming, end_at_ms):
        runs.append(upcoming)
        if len(runs) == count:
            break
        upcoming = _kept(rule.next_after(upcoming))
    return runs


def first_occurrence(
    schedule: Schedule, now_ms: int, start_at_ms: int | None, end_at_ms: int | None
) -> int | None:
    """The first occurrence a job created at `now_ms` runs: the first at or after max(now, start_at).

    For rate(N unit) that is one period after max(now, start_at). Returns None when there is none
    in the window, including an at(...) in the past: the caller decides whether that is an error.
    Raises InvalidInput (field "end_at") when end_at_ms is not after start_at_ms.
    """
    check_window(start_at_ms, end_at_ms)
    active = now_ms if start_at_ms is None else max(now_ms, start_at_ms)
    if not in_range(active):
        return None
    return _in_window(_kept(schedule.rule.first_when_active(active)), end_at_ms)


# Positional parameters: the scheduler and the store call it with this signature.
def following_occurrence(
    schedule: Schedule,
    previous_scheduled_ms: int,
    now_ms: int,
    policy: MisfirePolicy,
    start_at_ms: int | None,
    end_at_ms: int | None,
    grace_ms: int,
    start: Callable[[int], int] | None = None,
) -> int | None:
    """The occurrence to run after the one scheduled at `previous_scheduled_ms`, given it is `now_ms`.

    Computed from the previous scheduled time, not from when it ran (docs/schedules.md). An
    occurrence is missed when it starts earlier than now_ms - grace_ms. run_all: the next one even if
    missed; run_once: the latest missed one when any are missed, else the next; skip: the first
    one not missed. None when the schedule has no more within the window (at(), end_at passed).
    `start` maps an instant to the one it starts at (a spread window, windows.py): it must keep
    the order of instants and stay before the next one. Raises InvalidInput (field "end_at") when
    end_at_ms is not after start_at_ms.
    """
    starts = start or _at_instant
    check_window(start_at_ms, end_at_ms)
    rule = schedule.rule
    floor = previous_scheduled_ms + 1 if start_at_ms is None else max(previous_scheduled_ms + 1, start_at_ms)
    if not (in_range(previous_scheduled_ms) and in_range(floor)):
        return None
    upcoming = _kept(rule.first_from(previous_scheduled_ms, floor))
    if upcoming is None or not _before_end(upcoming, end_at_ms):
        return None
    missed_before = now_ms - grace_ms
    if starts(upcoming) >= missed_before or policy is MisfirePolicy.RUN_ALL:
        return upcoming
    # Only the last instant before the cutoff can start after it: every earlier one starts before
    # the instant that follows it.
    last_before = rule.latest_before(previous_scheduled_ms, missed_before)
    late = None
    if last_before is not None and last_before > upcoming and starts(last_before) >= missed_before:
        late = last_before
    if policy is MisfirePolicy.SKIP:
        if late is not None and _before_end(late, end_at_ms):
            return late
        return _in_window(_kept(rule.first_from(previous_scheduled_ms, max(floor, missed_before))), end_at_ms)
    cutoff = missed_before if end_at_ms is None else min(missed_before, end_at_ms)
    if late is not None and late < cutoff:
        cutoff = late  # it is not missed: the latest missed one comes before it
    return _latest_missed(rule, previous_scheduled_ms, cutoff, upcoming)


def _latest_missed(rule: Rule, previous_ms: int, cutoff_ms: int, upcoming: int) -> int:
    latest = rule.latest_before(previous_ms, cutoff_ms)
    # `upcoming` is itself missed and in the window, so the search cannot come back empty.
    return upcoming if latest is None else max(latest, upcoming)


def _at_instant(instant_ms: int) -> int:
    return instant_ms


def check_window(start_at_ms: int | None, end_at_ms: int | None) -> None:
    """Raises InvalidInput (field "end_at") unless end_at is after start_at (when both are given)."""
    if start_at_ms is not None and end_at_ms is not None and end_at_ms <= start_at_ms:
        raise InvalidInput("end_at must be after start_at", field="end_at")


def _kept(instant_ms: int | None) -> int | None:
    """The occurrence, or None past the range's end: there the schedule has no more."""
    return instant_ms if instant_ms is not None and in_range(instant_ms) else None


def _before_end(instant_ms: int, end_at_ms: int | None) -> bool:
    return end_at_ms is None or instant_ms < end_at_ms


def _in_window(instant_ms: int | None, end_at_ms: int | None) -> int | None:
    return instant_ms if instant_ms is not None and _before_end(instant_ms, end_at_ms) else None
