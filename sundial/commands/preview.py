"""`sundial preview`: what a schedule will do, DST included, as the scheduler computes it."""

from __future__ import annotations

from typing import Any

import click

from sundial.client.bodies import validated
from sundial.commands.calendars import calendar_fields, calendar_flags
from sundial.commands.completion import complete_zone
from sundial.commands.connection import Connection, connection_options
from sundial.commands.output import instants_table, output_option, print_one
from sundial.contract.jobs import PreviewRequest, PreviewResponse


@click.command()
@click.argument("schedule")
@click.option(
    "--tz",
    "--timezone",
    "timezone",
    default="UTC",
    show_default=True,
    metavar="ZONE",
    shell_complete=complete_zone,
)
@click.option("-n", "--count", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--after", metavar="INSTANT", help="RFC 3339 with an offset [default: now]")
@calendar_flags()
@click.option(
    "--explain", is_flag=True, help="also list the occurrences the calendar excluded on the way (at most 100)"
)
@output_option
@connection_options
def preview(
    connection: Connection,
    output: str,
    schedule: str,
    timezone: str,
    count: int,
    after: str | None,
    explain: bool,
    **flags: Any,
) -> None:
    """The next occurrences of SCHEDULE, in UTC and in its zone; with a calendar, those it keeps."""
    body = {"schedule": schedule, "timezone": timezone, "count": count, "after": after}
    body |= calendar_fields(flags) | ({"explain": True} if explain else {})
    request = validated(PreviewRequest, {name: value for name, value in body.items() if value is not None})
    answer = connection.client().preview(request)
    print_one(answer, output, lambda found: _table(found, timezone))


def _table(answer: PreviewResponse, timezone: str) -> str:
    """The runs; with `excluded`, every instant in order, the excluded ones marked so."""
    if answer.excluded is None:
        return instants_table(answer.next_runs, timezone)
    marks = {instant: "" for instant in answer.next_runs} | dict.fromkeys(answer.excluded, "excluded")
    instants = sorted(marks)  # RFC 3339 in UTC: text order is time order
    return instants_table(instants, timezone, [marks[instant] for instant in instants])
