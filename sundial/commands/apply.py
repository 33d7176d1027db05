"""`sundial apply -f schedules.yaml`: make a namespace's jobs on the stage match a reviewed file
(docs/schedules-as-code.md). The file is read and checked whole, then the stage, then the diff is
printed; only then, once confirmed, does anything change."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click

from sundial.client import SundialClient
from sundial.client.errors import ApiError, Conflict, InvalidInput, NotFound
from sundial.commands import plan as planning
from sundial.commands.connection import Connection, connection_options
from sundial.commands.exits import CHANGES_PENDING, CONFLICT, OK, USAGE, describe, exit_code
from sundial.commands.schedules_file import Entry, FileRefused, LimitEntry, Problem, SchedulesFile, read
from sundial.contract.calendar import Calendar
from sundial.contract.jobs import PreviewRequest
from sundial.contract.limits import LimitView
from sundial.contract.vocabulary import JobStatus

# `--dry-run --exit-code` when the stage differs from the file, as `terraform plan -detailed-exitcode`
# does with 2, which this command line already gives to "not found".
# Refusals of one change: the others still go. Any other error (credentials, throttling, the network,
# the server) would refuse the rest as well, so apply stops there.
ENTRY_ERRORS = (InvalidInput, Conflict, NotFound)


@click.command()
@click.option(
    "-f",
    "--file",
    "path",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="the schedules file (YAML): a namespace and its jobs",
)
@click.option("--dry-run", is_flag=True, help="print the changes and make none")
@click.option(
    "--exit-code",
    is_flag=True,
    help=f"with --dry-run: exit {CHANGES_PENDING} when there are changes, 0 when there are none",
)
@click.option("--prune", is_flag=True, help="cancel the namespace's jobs that the file no longer lists")
@click.option("--yes", is_flag=True, help="apply without asking (needed without a terminal)")
@connection_options
def apply(connection: Connection, path: Path, dry_run: bool, exit_code: bool, prune: bool, yes: bool) -> int:
    """Make the jobs of the file's namespace match the file: create, update (PATCH only the fields
    that differ), replace (a target change) and, with --prune, cancel.

    Exit codes: 0 the stage matches the file (after applying, or already); 1 the file was refused
    (nothing changed) or not confirmed; 3 some changes failed (the others were applied: run again
    to resume), or two live jobs carry one key's name; 10 --dry-run --exit-code found changes; the
    codes of `sundial --help` for an error of the API that stopped it."""
    if exit_code and not dry_run:
        raise click.UsageError("--exit-code goes with --dry-run")
    try:
        schedules = read(path)
    except FileRefused as refused:
        return _refused(path, refused.problems)
    client = connection.client()
    try:
        jobs = client.iter_jobs(name_prefix=schedules.prefix)
        plan = planning.plan(schedules, jobs, prune=prune, limits=_limits_now(client, schedules))
    except planning.DuplicateJobs as exc:
        click.echo(f"error: {exc}", err=True)
        return CONFLICT
    problems = list(_schedule_problems(client, plan))
    if problems:
        return _refused(path, problems)
    for line in planning.render(plan, str(path)):
        click.echo(line)
    if not plan.changes:
        return OK
    if dry_run:
        return CHANGES_PENDING if exit_code else OK
    _confirm(yes)
    return _applied(_Applier(client, str(path)).run(plan), plan)


def _limits_now(client: SundialClient, schedules: SchedulesFile) -> dict[str, LimitView | None]:
    """The limit of each key the file sets, None for a key that has none. Only those: a key is
    shared by every namespace, so apply neither lists nor removes the others."""
    found: dict[str, LimitView | None] = {}
    for entry in schedules.limits:
        try:
            found[entry.key] = client.get_limit(entry.key)
        except NotFound:
            found[entry.key] = None
    return found


def _refused(path: Path, problems: list[Problem]) -> int:
    for problem in problems:
        click.echo(problem.text(str(path)), err=True)
    click.echo(f"{path}: refused ({len(problems)} problem(s)); nothing was changed", err=True)
    return USAGE


def _schedule_problems(client: SundialClient, plan: planning.Plan) -> Iterator[Problem]:
    """The API's own reading of each schedule, time zone and calendar about to be written (POST
    /schedules/preview changes nothing), so that a bad one refuses the file before any change."""
    written = [*(c.entry for c in plan.creates), *(u.entry for u in plan.updates)]
    written += [r.entry for r in plan.replaces]
    answers: dict[tuple[str, str, str], InvalidInput | None] = {}
    for entry in written:
        schedule, zone, calendar = entry.body.schedule, entry.body.timezone, entry.body.calendar
        if schedule is None:
            continue
        key = (schedule, zone, calendar.model_dump_json() if calendar is not None else "")
        if key not in answers:
            answers[key] = _previewed(client, schedule, zone, calendar)
        refusal = answers[key]
        if refusal is not None:
            where = refusal.field or "schedule"
            yield Problem(entry.line_of(where), f"{entry.key}: {where}", refusal.message)


def _previewed(
    client: SundialClient, schedule: str, zone: str, calendar: Calendar | None
) -> InvalidInput | None:
    try:
        client.preview(PreviewRequest(schedule=schedule, timezone=zone, count=1, calendar=calendar))
    except InvalidInput as refusal:
        return refusal
    return None


def _at_terminal() -> bool:
    return sys.stdin.isatty()


def _confirm(yes: bool) -> None:
    """As `jobs cancel --filter` asks; a script (no terminal) must say --yes, since nobody answers."""
    if yes:
        return
    if not _at_terminal():
        raise click.ClickException("not applied: without a terminal, give --yes (or --dry-run)")
    click.confirm("apply these changes?", abort=True, err=True)


@dataclass
class _Outcome:
    done: int = 0
    failed: list[str] = field(default_factory=list)
    stopped: ApiError | None = None
    left: int = 0


class _Applier:
    """Carries out a plan step by step, saying what each step did; a step refused by the API is
    reported with the line of the file at fault, and the others go on."""

    def __init__(self, client: SundialClient, source: str) -> None:
        self.client, self.source = client, source

    def run(self, plan: planning.Plan) -> _Outcome:
        # Limits first: a job created below then starts under its key's limit from its first attempt.
        steps: list[tuple[Entry | LimitEntry | None, Callable[[], str]]] = [
            *((s.entry, lambda s=s: self._limit(s)) for s in plan.limits),
            *((u.entry, lambda u=u: self._update(u)) for u in plan.updates),
            *((c.entry, lambda c=c: self._create(c.entry, c.idempotency_key)) for c in plan.creates),
            *((r.entry, lambda r=r: self._replace(r)) for r in plan.replaces),
            *((None, lambda s=s: self._cancel(s)) for s in plan.cancels),
        ]
        outcome = _Outcome()
        for number, (entry, step) in enumerate(steps):
            try:
                click.echo(step())
                outcome.done += 1
            except ENTRY_ERRORS as error:
                outcome.failed.append(self._where(entry, error))
            except ApiError as error:
                outcome.failed.append(self._where(entry, error))
                outcome.stopped, outcome.left = error, len(steps) - number - 1
                break
        return outcome

    def _limit(self, limit: planning.SetLimit) -> str:
        body = limit.entry.body
        self.client.put_limit(
            limit.entry.key, max_concurrent=body.max_concurrent, per_second=body.per_second, burst=body.burst
        )
        fields = ", ".join(change.field for change in limit.changes)
        return f"{'set' if limit.old is None else 'changed'} limit {limit.entry.key}: {fields}"

    def _update(self, update: planning.Update) -> str:
        self.client.update_job(update.job.id, update.patch())
        fields = ", ".join(change.field for change in update.changes)
        return f"updated {update.entry.key} ({update.job.id}): {fields}"

    def _create(self, entry: Entry, key: str) -> str:
        job = self.client.create_job(entry.body, idempotency_key=key)
        if job.status is JobStatus.CANCELLED:  # the key answered a job made earlier and cancelled since
            raise Conflict(f"the create was answered with job {job.id}, which is cancelled; run apply again")
        return f"created {entry.key} ({job.id})"

    def _replace(self, replace: planning.Replace) -> str:
        created = self._create(replace.entry, replace.idempotency_key)
        try:
            self.client.cancel_job(replace.job.id)
        except ApiError as error:
            kind = Conflict if isinstance(error, ENTRY_ERRORS) else ApiError
            raise kind(
                f"{created}, but the old job {replace.job.id} is still live ({error.message}): cancel it "
                f"with `sundial jobs cancel {replace.job.id}`",
                status=error.status,
            ) from error
        return f"replaced {replace.entry.key}: {created}, cancelled {replace.job.id}"

    def _cancel(self, stray: planning.Stray) -> str:
        self.client.cancel_job(stray.job.id)
        return f"cancelled {stray.key} ({stray.job.id})"

    def _where(self, entry: Entry | LimitEntry | None, error: ApiError) -> str:
        what = describe(error).removeprefix("error: ")
        return what if entry is None else f"{self.source}:{entry.line_of(error.field)}: {entry.key}: {what}"


def _applied(outcome: _Outcome, plan: planning.Plan) -> int:
    if not outcome.failed:
        click.echo(f"applied {outcome.done} change(s); the stage matches the file")
        return OK
    for failure in outcome.failed:
        click.echo(f"failed: {failure}", err=True)
    untried = f", {outcome.left} not tried" if outcome.left else ""
    click.echo(
        f"applied {outcome.done} of {plan.changes} change(s), {len(outcome.failed)} failed{untried}. "
        "Run apply again to resume: it compares the stage again and does only what is left",
        err=True,
    )
    return exit_code(outcome.stopped) if outcome.stopped is not None else CONFLICT
