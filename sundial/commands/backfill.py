"""`sundial jobs backfill`: run the occurrences a job's schedule had before the job existed
(POST /jobs/{id}/backfill), or, with --dry-run, list them."""

from __future__ import annotations

import click

from sundial.commands.completion import job_id_argument
from sundial.commands.connection import Connection, connection_options
from sundial.commands.output import output_option, print_one, table
from sundial.contract.jobs import BackfillView


@click.command()
@job_id_argument
@click.option("--from", "start", required=True, metavar="INSTANT", help="the window's start, RFC 3339")
@click.option(
    "--to",
    "end",
    required=True,
    metavar="INSTANT",
    help="the window's end (excluded), RFC 3339; it ends at the job's creation at the latest",
)
@click.option("--dry-run", is_flag=True, help="list the instants that would run; record and run nothing")
@output_option
@connection_options
def backfill(connection: Connection, output: str, job_id: str, start: str, end: str, dry_run: bool) -> None:
    """Run the occurrences the job's schedule had in [--from, --to) before the job was created, each
    at most once however often asked, one after another (overlap_policy buffer) or only the latest
    (skip). Each carries its own scheduled instant and idempotency key."""
    answer = connection.client().backfill_job(job_id, start, end, dry_run=dry_run)
    print_one(answer, output, backfill_table)


def backfill_table(answer: BackfillView) -> str:
    verb = "would run" if answer.dry_run else "runs"
    rows = [(instant, verb) for instant in answer.instants]
    rows += [(instant, "skipped (overlap_policy skip)") for instant in answer.skipped]
    rows += [(instant, "backfilled before") for instant in answer.already]
    rows.sort()
    window = f"{answer.from_} to {answer.to}: {len(answer.instants)} {verb}"
    return f"{window}\n{table(('SCHEDULED_AT', 'WHAT'), rows)}" if rows else f"{window}\nno occurrences"
