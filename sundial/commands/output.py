"""What the commands print: `-o table` for people, `json`, `jsonl` and `yaml` for scripts, and `--watch`."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import click
import yaml
from pydantic import BaseModel

from sundial.contract.jobs import JobView, RunView

FORMATS = ("table", "json", "jsonl", "yaml")
# How a shell reports a command that SIGINT stopped: 128 + 2.
INTERRUPTED = 130
T = TypeVar("T")
ERROR_WIDTH = 60

output_option = click.option(
    "-o",
    "--output",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table for people; json or yaml (one document) or jsonl (one object a line) for scripts",
)


def watch_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option(
        "--count", type=click.IntRange(min=1), help="with --watch: stop after this many refreshes"
    )(command)
    command = click.option(
        "--interval",
        type=click.FloatRange(min=0.1),
        default=2.0,
        show_default=True,
        help="seconds between refreshes",
    )(command)
    return click.option(
        "-w",
        "--watch",
        is_flag=True,
        help="show it again every --interval seconds; a job's, until it is succeeded, dead or "
        "cancelled. Ctrl-C exits 130",
    )(command)


def watch(
    show: Callable[[], T],
    enabled: bool,
    interval: float,
    count: int | None,
    output: str,
    final: Callable[[T], bool] = lambda _shown: False,
) -> T | None:
    """Shows once, or again every `interval` seconds until `final` holds for what was shown (`count`
    times at most). Returns what was shown last when watching ended at `final`, else None. On a
    terminal each refresh says when it was read. Ctrl-C exits 130, as a shell reports a command that
    SIGINT stopped."""
    if not enabled:
        show()
        return None
    shown = 0
    terminal = sys.stdout.isatty()
    try:
        while count is None or shown < count:
            if shown:
                time.sleep(interval)
            if terminal and output == "table":
                click.clear()
            if terminal:
                click.echo(_refreshed(interval), err=output != "table")
            shown += 1
            last = show()
            if final(last):
                return last
    except KeyboardInterrupt:
        raise SystemExit(INTERRUPTED) from None
    return None


def _refreshed(interval: float) -> str:
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return f"refreshed {now}, every {interval:g} s (Ctrl-C stops)"


def print_items(items: Sequence[BaseModel], output: str, table: Callable[[Sequence[Any]], str]) -> None:
    if output in ("json", "yaml"):
        echo_document([item.model_dump(mode="json") for item in items], output)
    elif output == "jsonl":
        for item in items:
            click.echo(item.model_dump_json())
    else:
        click.echo(table(items))


def print_page(
    key: str,
    items: Sequence[BaseModel],
    next_token: str | None,
    output: str,
    table: Callable[[Sequence[Any]], str],
    extra: Mapping[str, Any] | None = None,
) -> None:
    """A listing: `-o json` prints the API's page object, `{key: [...], "next_token": ...}`, whose
    token `--starting-token` goes on from; a table says on stderr how to go on."""
    if output not in ("json", "yaml"):
        print_items(items, output, table)
        if next_token and output == "table":
            click.echo(f"more {key}: --starting-token {next_token}", err=True)
        return
    document = {key: [item.model_dump(mode="json") for item in items], "next_token": next_token}
    echo_document({**document, **(extra or {})}, output)


def print_one(item: BaseModel, output: str, table: Callable[[Any], str]) -> None:
    if output == "json":
        click.echo(item.model_dump_json(indent=2))
    elif output == "yaml":
        echo_document(item.model_dump(mode="json"), output)
    elif output == "jsonl":
        click.echo(item.model_dump_json())
    else:
        click.echo(table(item))


def echo_document(document: Any, output: str) -> None:
    """One JSON or YAML document; YAML keeps the API's key order and starts with `---`, so that
    the documents of a --watch stay apart."""
    if output == "yaml":
        click.echo(
            yaml.safe_dump(document, sort_keys=False, explicit_start=True, allow_unicode=True), nl=False
        )
    else:
        click.echo(json.dumps(document, indent=2))


def jobs_table(jobs: Sequence[JobView]) -> str:
    # Most jobs miss nothing: as `jobs get` shows `missed` and `jobs runs` its LIMIT WAIT, the column is
    # there only when a job of the page missed an instant, last so the others keep their places.
    missed = any(job.missed > 0 for job in jobs)
    rows = [
        (
            job.id,
            job.name or "",
            job.status.value + (" (paused)" if job.paused else "") + _held(job),
            job.priority.value,
            job.schedule or f"at {job.run_at}",
            job.next_run_at or "",
            str(job.attempt),
            _health(job),
            *([str(job.missed)] if missed else []),
        )
        for job in jobs
    ]
    headers = ("ID", "NAME", "STATUS", "PRIORITY", "SCHEDULE", "NEXT RUN", "ATTEMPT", "HEALTH")
    return table((*headers, *(["MISSED"] if missed else [])), rows)


def _held(job: JobView) -> str:
    return f" (waiting on {job.limit_key})" if job.waiting_on_limit_since else ""


def _health(job: JobView) -> str:
    """A recurring job's status is its next occurrence's: the health says how the last ones ended."""
    if job.consecutive_failures > 1:
        return f"{job.health.value} ({job.consecutive_failures} in a row)"
    return job.health.value


def job_details(job: JobView) -> str:
    data = job.model_dump(mode="json")
    # Missed instants (misfire or overlap) are shown only when there are some, with where to see them.
    missed = data.pop("missed", 0)
    rows = [(name, _cell(value)) for name, value in data.items()]
    if missed:
        rows.append(("missed", f"{missed} (skipped by misfire or overlap: `sundial jobs occurrences`)"))
    if job.waiting_on_limit_since:
        # A bare instant reads as an event; this says the occurrence is due and held back still.
        at = [name for name, _ in rows].index("waiting_on_limit_since")
        rows[at] = (
            "waiting_on_limit_since",
            f"{job.waiting_on_limit_since} (due, held back by {job.limit_key})",
        )
    # The answer's ETag, for `jobs update --if-match`; not a field of the job, so only this view shows it.
    etag = getattr(job, "etag", None)
    if etag is not None:
        rows.append(("etag", etag))
    return table(("FIELD", "VALUE"), rows)


def runs_table(runs: Sequence[RunView]) -> str:
    # Only jobs with a limit key wait on one: the column is left out for a history without a wait.
    waited = any(run.limit_wait_ms is not None for run in runs)
    rows = [
        (
            run.scheduled_at,
            str(run.attempt),
            run.status,
            *([_millis(run.limit_wait_ms)] if waited else []),
            run.started_at or "",
            run.finished_at or "",
            run.worker or "",
            run.trace_id or "",
            _short(run.error or ""),
        )
        for run in runs
    ]
    headers = (
        "SCHEDULED",
        "ATTEMPT",
        "STATUS",
        *(["LIMIT WAIT"] if waited else []),
        "STARTED",
        "FINISHED",
        "WORKER",
        "TRACE",
        "ERROR",
    )
    return table(headers, rows)


def _millis(value: int | None) -> str:
    return "" if value is None else f"{value} ms"


def instants_table(instants: Sequence[str], timezone: str, notes: Sequence[str] | None = None) -> str:
    """UTC and local times; `notes`, when given, a third column (a preview's excluded instants)."""
    zone = ZoneInfo(timezone)
    rows = [
        (instant, datetime.fromisoformat(instant.replace("Z", "+00:00")).astimezone(zone).isoformat())
        for instant in instants
    ]
    if notes is None:
        return table(("UTC", f"LOCAL ({timezone})"), rows)
    return table(
        ("UTC", f"LOCAL ({timezone})", "CALENDAR"),
        [(*row, note) for row, note in zip(rows, notes, strict=True)],
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    lines = [headers, *rows]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_WIDTH else text[: ERROR_WIDTH - 1] + "…"
