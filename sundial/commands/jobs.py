"""`sundial jobs ...`: every job operation of the API, through sundial.client."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import click

from sundial.client import LOCAL_API_URL
from sundial.client.bodies import validated
from sundial.commands import bulk, spec
from sundial.commands.alerts import alert_fields, alert_flags
from sundial.commands.backfill import backfill
from sundial.commands.calendars import calendar_fields, calendar_flags
from sundial.commands.completion import complete_limit_key, complete_zone, job_id_argument
from sundial.commands.connection import Connection, connection_options
from sundial.commands.exits import OK
from sundial.commands.occurrences import occurrences
from sundial.commands.output import (
    job_details,
    jobs_table,
    output_option,
    print_one,
    print_page,
    runs_table,
    watch_options,
)
from sundial.commands.output import watch as repeat
from sundial.commands.paging import collect, paging_options, wanted
from sundial.commands.remembered import run_at_for_key, state_file
from sundial.commands.wait import FINAL_CODES, wait
from sundial.contract.jobs import JobCreate, JobList, JobUpdate, JobView, RunList
from sundial.contract.vocabulary import Health, JobStatus, MisfirePolicy, OverlapPolicy, Priority, RunStatus

# A job in one of these runs no more: a recurring job's status is its next occurrence's until then.
FINAL_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED})


@click.group()
def jobs() -> None:
    """Create, read, change and run jobs."""


# What the API accepts: `allow` is a value of the model that it refuses (docs/api.md).
OVERLAP_POLICIES = [policy for policy in OverlapPolicy if policy is not OverlapPolicy.ALLOW]


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
        click.option(
            "--in",
            "run_in",
            metavar="DURATION",
            help="a one-off due in 90s, 10m, 1h30m, 2d (with --idempotency-key: from the key's first use)",
        ),
        click.option(
            "--tz",
            "--timezone",
            "timezone",
            metavar="ZONE",
            help="IANA zone the schedule is read in",
            shell_complete=complete_zone,
        ),
        click.option("--payload", metavar="JSON", help="JSON handed to the target, or @file (@- for stdin)"),
        click.option("--priority", type=_choice(Priority)),
        click.option("--max-retries", type=int, help="retries after an occurrence's first attempt (0-20)"),
        click.option("--backoff", metavar="SECONDS,...", help="waits before each retry, e.g. 5,30,120"),
        click.option("--timeout-seconds", type=int, help="one attempt's limit in seconds (1-867)"),
        click.option("--misfire-policy", type=_choice(MisfirePolicy)),
        click.option("--overlap-policy", type=_choice(OVERLAP_POLICIES)),
        click.option("--start-at", metavar="INSTANT", help="recurring: first instant of the active window"),
        click.option("--end-at", metavar="INSTANT", help="recurring: end of the active window (exclusive)"),
        click.option(
            "--window-seconds",
            type=int,
            help="start each occurrence at a point of [instant, instant + N s) fixed by the job (0-3600)",
        ),
        click.option(
            "--limit-key",
            metavar="KEY",
            help="share the limit of KEY (`sundial limits put`): its attempts start only as it allows",
            shell_complete=complete_limit_key,
        ),
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
@calendar_flags()
@alert_flags
@target_flags
@click.option(
    "--idempotency-key",
    metavar="KEY",
    help="the create's key (default: a new one, kept on retries). Running the command again with it "
    "answers the first job; --in then means the instant of the key's first use, remembered for 24 h in "
    "$XDG_STATE_HOME/sundial (default ~/.local/state/sundial)",
)
@click.option(
    "--traceparent",
    metavar="HEADER",
    help="a W3C traceparent: the job's deliveries carry its trace (default: the API starts one)",
)
@output_option
@connection_options
def create(
    connection: Connection,
    output: str,
    file: str | None,
    idempotency_key: str | None,
    traceparent: str | None,
    **flags: Any,
) -> None:
    """Create a job from flags, a JSON file, or both (flags override the file's fields)."""
    if idempotency_key and flags.get("run_in") is not None and flags.get("run_at") is None:
        where = connection.stack or connection.api or LOCAL_API_URL
        instant = run_at_for_key(where, idempotency_key, flags["run_in"], _now(), state_file())
        flags = {**flags, "run_in": None, "run_at": spec.rfc3339(instant)}
    body = {**spec.read_object_file(file), **spec.fields_from_flags(flags, _now), **alert_fields(flags)}
    body |= calendar_fields(flags)
    target = spec.target_from_flags(flags)
    if target is not None:
        body["target"] = target
    job = validated(JobCreate, body)
    created = connection.client().create_job(job, idempotency_key=idempotency_key, traceparent=traceparent)
    print_one(created, output, job_details)


@jobs.command()
@job_id_argument
@job_fields
@calendar_flags(removable=True)
@alert_flags
@click.option(
    "--if-match",
    metavar="ETAG",
    help="change the job only while it is as the answer with this ETag showed it (`jobs get` shows "
    'the ETag; "*" for any), else exit 8 with nothing changed',
)
@click.option("--no-limit-key", is_flag=True, help="remove the job's limit key: it then runs unlimited")
@output_option
@connection_options
def update(
    connection: Connection,
    output: str,
    job_id: str,
    file: str | None,
    if_match: str | None,
    no_limit_key: bool,
    **flags: Any,
) -> None:
    """Change only the fields given (PATCH): every other field keeps its value."""
    body = {**spec.read_object_file(file), **spec.fields_from_flags(flags, _now), **alert_fields(flags)}
    body |= calendar_fields(flags)
    if no_limit_key:
        if flags.get("limit_key") is not None:
            raise click.UsageError("give --limit-key or --no-limit-key, not both")
        # Any key is a valid name, "null" included, so removal is a flag of its own.
        body["limit_key"] = None
    if not body:
        raise click.UsageError("give at least one field to change (see --help)")
    patch = validated(JobUpdate, body)
    print_one(connection.client().update_job(job_id, patch, if_match=if_match), output, job_details)


@jobs.command()
@job_id_argument
@output_option
@watch_options
@connection_options
def get(
    connection: Connection, output: str, job_id: str, watch: bool, interval: float, count: int | None
) -> int:
    """Show one job. With --watch it stops once the job is final, exiting as `jobs wait` does."""
    client = connection.client()

    def show() -> JobView:
        job = client.get_job(job_id)
        print_one(job, output, job_details)
        return job

    return _ended(repeat(show, watch, interval, count, output, final=_is_final))


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
@paging_options("jobs")
@output_option
@watch_options
@connection_options
def list_jobs(
    connection: Connection,
    output: str,
    max_items: int,
    starting_token: str | None,
    every: bool,
    watch: bool,
    interval: float,
    count: int | None,
    **filters: str | None,
) -> None:
    """List jobs, newest first; the filters combine."""
    client = connection.client()
    wanted_items = wanted(max_items, every)

    def page(token: str | None, size: int) -> JobList:
        return client.list_jobs(**filters, limit=size, next_token=token)

    def show() -> None:
        found = collect(page, lambda answer: answer.jobs, wanted_items, starting_token)
        totals = {"total": found.first.total, "total_is_estimate": found.first.total_is_estimate}
        print_page("jobs", found.items, found.next_token, output, jobs_table, totals)

    repeat(show, watch, interval, count, output)


@jobs.command()
@job_id_argument
@click.option("--status", type=_choice(RunStatus), help="only the runs that ended so")
@paging_options("runs")
@output_option
@watch_options
@connection_options
def runs(
    connection: Connection,
    output: str,
    job_id: str,
    status: str | None,
    max_items: int,
    starting_token: str | None,
    every: bool,
    watch: bool,
    interval: float,
    count: int | None,
) -> int:
    """A job's attempt history, newest first. With --watch it stops once the job is final, exiting
    as `jobs wait` does."""
    client = connection.client()
    wanted_items = wanted(max_items, every)

    def page(token: str | None, size: int) -> RunList:
        return client.list_runs(job_id, limit=size, next_token=token)

    def show() -> JobView | None:
        # Read first: a run that ends between the two reads is then in the history printed.
        job = client.get_job(job_id) if watch else None
        keep = (lambda run: run.status == status) if status else (lambda _run: True)
        found = collect(page, lambda answer: answer.runs, wanted_items, starting_token, keep)
        print_page("runs", found.items, found.next_token, output, runs_table)
        return job

    last = repeat(show, watch, interval, count, output, final=lambda job: job is not None and _is_final(job))
    return _ended(last)


def _is_final(job: JobView) -> bool:
    return job.status in FINAL_STATUSES


def _ended(job: JobView | None) -> int:
    """A --watch that saw the job end exits as it ended (0, or 6 dead, 7 cancelled): a script that
    watches learns the outcome without reading the output."""
    return OK if job is None else FINAL_CODES[job.status]


for _command in bulk.COMMANDS:
    jobs.add_command(_command)
jobs.add_command(backfill)
jobs.add_command(occurrences)
jobs.add_command(wait)
