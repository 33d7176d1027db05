"""at(YYYY-MM-DDThh:mm:ss): one occurrence, at a local time in the schedule's time zone.

The local time is placed by the same DST rule as cron: in a gap it runs at the first instant
after the gap; when a fall-back repeats it, at the first of its two instants.
"""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

from sundial.contract.bounds import RANGE_TEXT, in_range
from sundial.shared.schedules.messages import bad_schedule, shown
from sundial.shared.schedules.rule import Rule
from sundial.shared.schedules.zones import place

_AT = re.compile(
    r"at\(\s*(?P<local>[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\s*\)", re.IGNORECASE
)


class AtRule(Rule):
    recurring = False

    def __init__(self, instant_ms: int) -> None:
        self.instant_ms = instant_ms

    def next_after(self, after_ms: int) -> int | None:
        return self.instant_ms if self.instant_ms > after_ms else None


def is_at(expression: str) -> bool:
    return expression.strip()[:3].lower() == "at("


def compile_at(expression: str, zone: ZoneInfo) -> AtRule:
    """The rule for at(...). Raises InvalidInput (field "schedule") when the date or time is invalid, or
    when it falls outside the range of instants Sundial keeps."""
    match = _AT.fullmatch(expression.strip())
    if match is None:
        raise bad_schedule(f"at expression '{shown(expression)}': expected at(YYYY-MM-DDThh:mm:ss)")
    try:
        local = datetime.strptime(match.group("local").upper(), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        raise bad_schedule(f"at expression '{shown(expression)}': no such date or time") from None
    first, _ = place(local, zone)
    if not in_range(first * 1000):
        raise bad_schedule(
            f"at expression '{shown(expression)}' in {zone.key} does not lie between {RANGE_TEXT}"
        )
    return AtRule(first * 1000)
