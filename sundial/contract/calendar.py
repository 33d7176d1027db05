"""A recurring job's calendar: the local dates on which its schedule does not run (docs/api.md,
"Calendars"). Which holiday codes exist is the service's to check: the contract imports nothing but
pydantic."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

MAX_EXCLUDED_DATES = 366
HOLIDAYS_MAX_LENGTH = 64
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SHOWN = 40


def _dates(value: Any) -> Any:
    """A list of YYYY-MM-DD strings (or dates, from Python code) as sorted, distinct dates."""
    if not isinstance(value, (list, tuple)):
        raise PydanticCustomError("dates_form", "must be a list of dates, each YYYY-MM-DD")
    if len(value) > MAX_EXCLUDED_DATES:
        raise PydanticCustomError(
            "too_many_dates", f"holds {len(value)} dates; a calendar excludes at most {MAX_EXCLUDED_DATES}"
        )
    days: set[date] = set()
    for index, item in enumerate(value):
        days.add(_day(index, item))
    return tuple(sorted(days))


def _day(index: int, item: Any) -> date:
    if isinstance(item, date) and not isinstance(item, datetime):
        return item
    if not isinstance(item, str) or not _DATE.fullmatch(item):
        shown = repr(item) if not isinstance(item, str) else f"'{item[:_SHOWN]}'"
        raise PydanticCustomError("date_form", f"item {index}, {shown}, is not a date YYYY-MM-DD")
    try:
        return date.fromisoformat(item)
    except ValueError:
        raise PydanticCustomError("no_such_date", f"item {index}, '{item}', is no such date") from None


ExcludedDates = Annotated[
    tuple[date, ...],
    BeforeValidator(_dates),
    Field(
        # Checked by the validator, whose message counts them; the schema still states it.
        json_schema_extra={"maxItems": MAX_EXCLUDED_DATES},
        description=f"Dates (YYYY-MM-DD, at most {MAX_EXCLUDED_DATES}) in the job's time zone on which "
        "no occurrence runs; answered sorted, each once.",
    ),
]
HolidayCode = Annotated[
    str,
    Field(
        min_length=1,
        max_length=HOLIDAYS_MAX_LENGTH,
        description="An ISO 3166-1 country code, optionally with a subdivision (`DE`, `DE-BY`, `US-CA`): "
        "its public holidays, as the `holidays` package lists them, are excluded too.",
    ),
]


class Calendar(BaseModel):
    """The dates, in the job's `timezone`, on which a recurring job's schedule does not run: each
    occurrence whose local date is excluded is skipped."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exclude_dates: ExcludedDates = ()
    holidays: HolidayCode | None = None
