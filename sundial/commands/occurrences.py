"""`sundial jobs occurrences`: every instant of a job's schedule in a range and what became of it
(GET /jobs/{id}/occurrences), paged as `jobs runs` is."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import click
from pydantic import TypeAdapter, ValidationError

from sundial.commands.completion import job_id_argument
from sundial.commands.connection import Connection, connection_options
from sundial.commands.exits import OK
from sundial.commands.output import output_option, print_page, table, watch_options
from sundial.commands.output import watch as repeat
from sundial.commands.paging import collect, paging_options, wanted
from sundial.commands.spec import duration, rfc3339
from sundial.commands.wait import FINAL_CODES
from sundial.contract.jobs import Instant, JobView
from sundial.contract.occurrences import OccurrenceList, OccurrenceView

# The API's range when none is given (docs/api.md, "Occurrences"); one bound alone takes the other
# from it: --from alone ends now, --to alone starts this long before.
DEFAULT_RANGE = timedelta(hours=24)
_RELATIVE = re.compile(r"([+-])(\S+)")
_INSTANT: TypeAdapter[datetime] = TypeAdapter(Instant)
INSTANT_HELP = "an RFC 3339 instant with an offset, `now`, or a time from now such as -6h, -1d12h or +30m"


@click.command()
@job_id_argument
@click.option("--from", "start", metavar="INSTANT", help=f"the range's start (included): {INSTANT_HELP}")
@click.option(
    "--to",
    "end",
    metavar="INSTANT",
    help="the range's end (excluded), as --from. Default: the 24 hours before now; --from alone ends "
    "now, --to alone starts 24 hours before it",
)
@paging_options("occurrences")
@output_option
@watch_options
@connection_options
def occurrences(
    connection: Connection,
    output: str,
    job_id: str,
    start: str | None,
    end: str | None,
    max_items: int,
    starting_token: str | None,
    every: bool,
    watch: bool,
    interval: float,
    count: int | None,
) -> int:
    """Every instant of the job's schedule in [--from, --to), oldest first, and what became of it:
    ran, running, waiting or skipped (with the reason: paused, overlap, misfire, calendar, cancelled
    or not_owed). With --watch it stops once the job is final, exiting as `jobs wait` does."""
    client = connection.client()
    wanted_items = wanted(max_items, every)
    # Checked once before any call, so that a bad flag fails at once, even with --watch.
    _range(start, end, datetime.now(UTC))

    def show() -> JobView | None:
        # Relative bounds are read again at each refresh: a --watch of -1h follows the last hour.
        begin, finish = _range(start, end, datetime.now(UTC))
        job = client.get_job(job_id) if watch else None

        def page(token: str | None, size: int) -> OccurrenceList:
            return client.list_occurrences(job_id, from_=begin, to=finish, limit=size, next_token=token)

        found = collect(page, lambda answer: answer.occurrences, wanted_items, starting_token)
        print_page("occurrences", found.items, found.next_token, output, occurrences_table)
        return job

    last = repeat(
        show, watch, interval, count, output, final=lambda job: job is not None and job.status in FINAL_CODES
    )
    return OK if last is None else FINAL_CODES[last.status]


def _range(start: str | None, end: str | None, now: datetime) -> tuple[str | None, str | None]:
    """The bounds to send: both as given (relative ones from `now`), --from alone ending now, --to
    alone starting a day before it, or neither (the API's own default, the 24 hours before now)."""
    begin = None if start is None else parse_instant(start, "--from", now)
    finish = None if end is None else parse_instant(end, "--to", now)
    if begin is not None and finish is None:
        if begin >= now:
            raise click.BadParameter(
                f"{_text(begin)} is not in the past: give --to as well", param_hint="--from"
            )
        finish = now
    elif finish is not None and begin is None:
        begin = finish - DEFAULT_RANGE
    if begin is not None and finish is not None and begin >= finish:
        raise click.BadParameter(
            f"{_text(finish)} does not come after --from {_text(begin)}", param_hint="--to"
        )
    return (None if begin is None else _text(begin)), (None if finish is None else _text(finish))


def parse_instant(text: str, option: str, now: datetime) -> datetime:
    """An RFC 3339 instant with an offset (as the API takes one), `now`, or a signed duration from now."""
    value = text.strip()
    if value.lower() == "now":
        return now
    relative = _RELATIVE.fullmatch(value)
    if relative is None:  # an RFC 3339 instant starts with its year's digits
        return _absolute(value, option)
    sign, length = relative.groups()
    try:
        offset = duration(length)
    except click.BadParameter:
        raise click.BadParameter(f"'{text}' is not {INSTANT_HELP}", param_hint=option) from None
    return now + offset if sign == "+" else now - offset


def _absolute(text: str, option: str) -> datetime:
    try:
        return _INSTANT.validate_python(text).astimezone(UTC)
    except ValidationError as exc:
        problem = exc.errors()[0]
        if problem["type"] == "instant_form":
            raise click.BadParameter(f"'{text}' is not {INSTANT_HELP}", param_hint=option) from None
        raise click.BadParameter(f"'{text}' {problem['msg']}", param_hint=option) from None


def _text(instant: datetime) -> str:
    # Milliseconds kept: instants of the API are that precise, and a range ends exactly where asked.
    if instant.microsecond:
        return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return rfc3339(instant)


def occurrences_table(rows: Sequence[OccurrenceView]) -> str:
    # The start is a column only when one differs from its instant (a job with a spread window).
    moved = any(row.start_at != row.scheduled_at for row in rows)
    cells = [
        (
            row.scheduled_at,
            *([row.start_at if row.start_at != row.scheduled_at else ""] if moved else []),
            row.state.value,
            row.reason.value if row.reason is not None else "",
            str(row.attempts),
            row.last_status or "",
            _flags(row),
        )
        for row in rows
    ]
    headers = (
        "SCHEDULED",
        *(["START"] if moved else []),
        "STATE",
        "REASON",
        "ATTEMPTS",
        "LAST STATUS",
        "FLAGS",
    )
    return table(headers, cells)


def _flags(row: OccurrenceView) -> str:
    return ",".join(name for name, on in (("extra", row.extra), ("backfilled", row.backfilled)) if on)
