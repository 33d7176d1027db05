"""`sundial preview`: what a schedule will do, DST included, as the scheduler computes it."""

from __future__ import annotations

import click

from sundial.client.bodies import validated
from sundial.commands.completion import complete_zone
from sundial.commands.connection import Connection, connection_options
from sundial.commands.output import instants_table, output_option, print_one
from sundial.contract.jobs import PreviewRequest


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
@output_option
@connection_options
def preview(
    connection: Connection, output: str, schedule: str, timezone: str, count: int, after: str | None
) -> None:
    """The next occurrences of SCHEDULE, in UTC and in its zone."""
    body = {"schedule": schedule, "timezone": timezone, "count": count, "after": after}
    request = validated(PreviewRequest, {name: value for name, value in body.items() if value is not None})
    answer = connection.client().preview(request)
    print_one(answer, output, lambda found: instants_table(found.next_runs, timezone))
