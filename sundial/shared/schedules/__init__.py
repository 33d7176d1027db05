"""Schedule expressions, time zones and the instants they produce.

Every instant is UTC epoch milliseconds. Forms (docs/schedules.md): EventBridge
cron(m h dom mon dow year), plain five-field cron and @macros, rate(N unit) and
at(YYYY-MM-DDThh:mm:ss), each read in an IANA time zone under the DST rule of docs/schedules.md.
"""

from __future__ import annotations

from sundial.contract.bounds import EARLIEST_MS, LATEST_MS, MAX_WINDOW_SECONDS, RANGE_TEXT, in_range
from sundial.contract.vocabulary import MisfirePolicy
from sundial.shared.schedules.instants import parse_instant
from sundial.shared.schedules.occurrences import (
    MAX_COUNT,
    check_window,
    first_occurrence,
    following_occurrence,
    next_runs,
)
from sundial.shared.schedules.schedule import Schedule, parse_schedule
from sundial.shared.schedules.windows import start_instant
from sundial.shared.schedules.zones import parse_timezone

__all__ = [
    "EARLIEST_MS",
    "LATEST_MS",
    "MAX_COUNT",
    "MAX_WINDOW_SECONDS",
    "RANGE_TEXT",
    "MisfirePolicy",
    "Schedule",
    "check_window",
    "first_occurrence",
    "following_occurrence",
    "in_range",
    "next_runs",
    "parse_instant",
    "parse_schedule",
    "parse_timezone",
    "start_instant",
]
