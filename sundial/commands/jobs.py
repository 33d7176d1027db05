"""`sundial jobs ...`: every job operation of the API, through sundial.client."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import click

from shared.api.models import JobCreate, JobUpdate
from shared.constants import Priority
from shared.models import Health, JobStatus, OverlapPolicy
from shared.schedules import MisfirePolicy
from sundial.client.bodies import validated
from sundial.commands import bulk, spec
from sundial.commands.connection import Connection, connection_options
from sundial.commands.output import (
    job_details,
    jobs_table,
    output_option,
    print_items,
    print_one,
    runs_table,
    watch_options,
)
from sundial.commands.output import watch as repeat


@click.group()
def jobs() -> None:
    """Create, read, change and run jobs."""


def _choice(values: Any) -> click.Choice[str]:
    return click.Choice([value.value for value in values])


def job_fields(command: Callable[..., Any]) -> Callable[..., Any]:
    """The flags of the fields both a create and an update may set."""
    options = (
        click.option(
            "--file", "file", metavar="PATH", help="a JSON object of fields (- for stdin); flags win"
        ),
        click.option("--name", help="a label (not unique)"),
        click.option(
            "--schedule", help="cron(...), plain 5-field cron, rate(...) or at(...): docs/schedules.md"
        ),
        click.option(
            "--at", "run_at", metavar="INSTANT", help="a one-off's instant, RFC 3339 with an offset"
        ),
        click.option("--in", "run_in", metavar="DURATION", help="a one-off due in 90s, 10m, 1h30m, 2d"),
        click.option(
            "--tz", "--timezone", "timezone", metavar="ZONE", help="IANA zone the schedule is read in"
        ),
        click.option("--payload", metavar="JSON", help="JSON handed to the target, or @file (@- for stdin)"),
        click.option("--priority", type=_choice(Priority)),
        click.option("--max-retries", type=int, help="retries after an occurrence's first attempt (0-20)"),
        click.option("--backoff", metavar="SECONDS,...", help="waits before each retry, e.g. 5,30,120"),
        click.option("--timeout-seconds", type=int, help="one attempt's limit (1-900)"),
        click.option("--misfire-policy", type=_choice(MisfirePolicy)),
        click.option("--overlap-policy", type=_choice(OverlapPolicy)),
        click.option("--start-at", metavar="INSTANT", help="recurring: first instant of the active window"),
        click.option("--end-at", metavar="INSTANT", help="recurring: end of the active window (exclusive)"),
    )
    for option in reversed(options):
        command = option(command)
    return command


def target_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    options = (
        click.option("--target", metavar="JSON", help="the whole target object, or @file"),
        click.option("--target-url", metavar="URL", help="an http target"),
        click.option(
            "--method", type=click.Choice(["GET", "POST", "PUT", "PATCH", "DELETE"]), help="its method"
        ),
        click.option("--header", multiple=True, metavar="'NAME: VALUE'", help="its headers (repeat)"),
        click.option("--target-lambda", metavar="ARN", help="a Lambda function"),
        click.option("--target-sqs", metavar="QUEUE_URL", help="an SQS queue"),
        click.option("--target-sns", metavar="ARN", help="an SNS topic"),
        click.option("--target-eventbridge", metavar="BUS", help="an EventBridge bus"),
        click.option("--detail-type", help="the EventBridge event's detail-type"),
        click.option("--source", help="the EventBridge event's source"),
        click.option("--target-python", metavar="HANDLER", help="a registered python handler"),
    )
    for option in reversed(options):
        command = option(command)
    return command


def _now() -> datetime:
    return datetime.now(UTC)


@jobs.command()
@job_fields
@target_flags
@click.option(
    "--idempotency-key", metavar="KEY", help="the create's key (default: a new one, kept on retries)"
)
@output_option
@connection_options
def create(
    connection: Connection, output: str, file: str | None, idempotency_key: str | None, **flags: Any
) -> None:
    """Create a job from flags, a JSON file, or both (flags override the file's fields)."""
    body = {**spec.read_object_file(file), **spec.fields_from_flags(flags, _now)}
    target = spec.target_from_flags(flags)
    if target is not None:
        body["target"] = target
    job = validated(JobCreate, body)
    print_one(connection.client().create_job(job, idempotency_key=idempotency_key), output, job_details)


@jobs.command()
@click.argument("job_id")
@job_fields
@output_option
@connection_options
def update(connection: Connection, output: str, job_id: str, file: str | None, **flags: Any) -> None:
    """Change only the fields given (PATCH): every other field keeps its value."""
    body = {**spec.read_object_file(file), **spec.fields_from_flags(flags, _now)}
    if not body:
        raise click.UsageError("give at least one field to change (see --help)")
    patch = validated(JobUpdate, body)
    print_one(connection.client().update_job(job_id, patch), output, job_details)


@jobs.command()
@click.argument("job_id")
@output_option
@watch_options
@connection_options
def get(
    connection: Connection, output: str, job_id: str, watch: bool, interval: float, count: int | None
) -> None:
    """Show one job."""
    client = connection.client()
    repeat(lambda: print_one(client.get_job(job_id), output, job_details), watch, interval, count, output)


@jobs.command(name="list")
@click.option("--status", type=_choice(JobStatus))
@click.option("--priority", type=_choice(Priority))
@click.option("--name", help="only jobs whose name contains this text (any case)")
@click.option(
    "--name-prefix", help="only jobs whose name starts with this text (any case; 3 characters or more)"
)
@click.option(
    "--health",
    type=_choice(Health),
    help="failing: the last attempt failed or the last occurrence died; dead: the last occurrence died",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="at most this many jobs"
)
@click.option("--all", "every", is_flag=True, help="every job that matches, page after page")
@output_option
@watch_options
@connection_options
def list_jobs(
    connection: Connection,
    output: str,
    status: str | None,
    priority: str | None,
    name: str | None,
    name_prefix: str | None,
    health: str | None,
    limit: int,
    every: bool,
    watch: bool,
    interval: float,
    count: int | None,
) -> None:
    """List jobs, newest first; the filters combine."""
    client = connection.client()

    def show() -> None:
        found = client.iter_jobs(
            status=status,
            priority=priority,
            name=name,
            page_size=min(limit, 100),
            health=health,
            name_prefix=name_prefix,
        )
        print_items(list(found if every else itertools.islice(found, limit)), output, jobs_table)

    repeat(show, watch, interval, count, output)


@jobs.command()
@click.argument("job_id")
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="at most this many runs"
)
@output_option
@watch_options
@connection_options
def runs(
    connection: Connection,
    output: str,
    job_id: str,
    limit: int,
    watch: bool,
    interval: float,
    count: int | None,
) -> None:
    """A job's attempt history, newest first."""
    client = connection.client()

    def show() -> None:
        found = client.iter_runs(job_id, page_size=min(limit, 100))
        print_items(list(itertools.islice(found, limit)), output, runs_table)

    repeat(show, watch, interval, count, output)


for _command in bulk.COMMANDS:
    jobs.add_command(_command)
