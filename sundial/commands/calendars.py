"""The calendar flags of `jobs create`, `jobs update` and `preview` (docs/api.md, "Calendars")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import click


def calendar_flags(removable: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--exclude-date (repeat) and --holidays; with `removable`, --no-calendar too (an update's)."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        options = [
            click.option(
                "--exclude-date",
                "exclude_dates",
                multiple=True,
                metavar="YYYY-MM-DD",
                help="recurring: a date, in the schedule's zone, with no occurrence (repeat, up to 366)",
            ),
            click.option(
                "--holidays",
                metavar="CC[-SUB]",
                help="recurring: no occurrence on the public holidays of a country (DE) or of a "
                "subdivision of one (DE-BY, US-CA)"
                + (
                    ". Either flag sets the whole calendar: what it leaves out is cleared"
                    if removable
                    else ""
                ),
            ),
        ]
        if removable:
            options.append(
                click.option(
                    "--no-calendar", is_flag=True, help="remove the job's calendar: it runs on every date"
                )
            )
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def calendar_fields(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The `calendar` field the flags give: nothing when none was given. The calendar is one field, so
    an update that gives either flag sends the whole of it (what it leaves out, it clears)."""
    dates = list(flags.get("exclude_dates") or ())
    holidays = flags.get("holidays")
    if flags.get("no_calendar"):
        if dates or holidays is not None:
            raise click.UsageError("give --exclude-date/--holidays or --no-calendar, not both")
        return {"calendar": None}
    if not dates and holidays is None:
        return {}
    calendar: dict[str, Any] = {"exclude_dates": dates}
    if holidays is not None:
        calendar["holidays"] = holidays
    return {"calendar": calendar}
