"""`sundial limits ...`: limits per key (docs/api.md, "Limits"), through sundial.client."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from sundial.commands.completion import limit_key_argument
from sundial.commands.connection import Connection, connection_options
from sundial.commands.output import output_option, print_one, print_page, table, watch_options
from sundial.commands.output import watch as repeat
from sundial.commands.paging import collect, paging_options, wanted
from sundial.contract.limits import LimitList, LimitView


@click.group()
def limits() -> None:
    """Limit how many attempts of the jobs naming a key run at once, and how fast they start.

    A job names its key with `jobs create --limit-key KEY`; a key with no limit is unlimited.
    """


@limits.command()
@limit_key_argument
@click.option(
    "--max-concurrent", type=int, metavar="N", help="at most N attempts of the key's jobs at once (1-10000)"
)
@click.option(
    "--per-second",
    type=float,
    metavar="RATE",
    help="attempts start at most RATE a second on average (0.01-10000)",
)
@click.option(
    "--burst",
    type=int,
    metavar="N",
    help="with --per-second: how many may start at once (default: RATE rounded up, at least 1)",
)
@output_option
@connection_options
def put(
    connection: Connection,
    output: str,
    key: str,
    max_concurrent: int | None,
    per_second: float | None,
    burst: int | None,
) -> None:
    """Set KEY's limit, replacing the one it had: a bound left out is no bound."""
    if max_concurrent is None and per_second is None:
        raise click.UsageError("give --max-concurrent, --per-second or both")
    if burst is not None and per_second is None:
        raise click.UsageError("--burst goes with --per-second: it is the rate's")
    client = connection.client()
    limit = client.put_limit(key, max_concurrent=max_concurrent, per_second=per_second, burst=burst)
    print_one(limit, output, limit_details)


@limits.command()
@limit_key_argument
@output_option
@watch_options
@connection_options
def get(
    connection: Connection, output: str, key: str, watch: bool, interval: float, count: int | None
) -> None:
    """Show KEY's limit, and what runs and waits on it now (exit 2 when it has none)."""
    client = connection.client()
    repeat(lambda: print_one(client.get_limit(key), output, limit_details), watch, interval, count, output)


@limits.command(name="list")
@paging_options("limits")
@output_option
@watch_options
@connection_options
def list_limits(
    connection: Connection,
    output: str,
    max_items: int,
    starting_token: str | None,
    every: bool,
    watch: bool,
    interval: float,
    count: int | None,
) -> None:
    """List every key's limit, by key."""
    client = connection.client()
    wanted_items = wanted(max_items, every)

    def page(token: str | None, size: int) -> LimitList:
        return client.list_limits(limit=size, next_token=token)

    def show() -> None:
        found = collect(page, lambda answer: answer.limits, wanted_items, starting_token)
        print_page("limits", found.items, found.next_token, output, limits_table)

    repeat(show, watch, interval, count, output)


@limits.command()
@limit_key_argument
@click.option("--yes", is_flag=True, help="delete without asking (needed without a terminal)")
@output_option
@connection_options
def delete(connection: Connection, output: str, key: str, yes: bool) -> None:
    """Remove KEY's limit: the jobs naming KEY then run unlimited. Prints the limit as it was."""
    if not yes:
        if not _at_terminal():
            raise click.ClickException(f"not deleted: without a terminal, give --yes to delete {key}'s limit")
        click.confirm(f"delete the limit of {key}? Its jobs then run unlimited", abort=True, err=True)
    print_one(connection.client().delete_limit(key), output, limit_details)


def _at_terminal() -> bool:
    return sys.stdin.isatty()


def limits_table(found: Sequence[LimitView]) -> str:
    rows = [
        (
            limit.key,
            _bound(limit.max_concurrent),
            _rate(limit),
            str(limit.running),
            _waiting(limit),
            _seconds(limit.oldest_wait_seconds),
            limit.updated_at,
        )
        for limit in found
    ]
    headers = ("KEY", "MAX CONCURRENT", "PER SECOND", "RUNNING", "WAITING", "OLDEST WAIT", "UPDATED")
    return table(headers, rows)


def limit_details(limit: LimitView) -> str:
    rows = [
        ("key", limit.key),
        ("max_concurrent", _bound(limit.max_concurrent)),
        ("per_second", "-" if limit.per_second is None else f"{limit.per_second:g}"),
        ("burst", "-" if limit.per_second is None else str(limit.burst)),
        ("running", str(limit.running)),
        ("waiting", _waiting(limit)),
        ("oldest_wait_seconds", _seconds(limit.oldest_wait_seconds)),
        ("shards", str(limit.shards)),
        ("updated_at", limit.updated_at),
    ]
    return table(("FIELD", "VALUE"), rows)


def _bound(value: int | None) -> str:
    return "-" if value is None else str(value)


def _rate(limit: LimitView) -> str:
    if limit.per_second is None:
        return "-"
    return f"{limit.per_second:g} (burst {limit.burst})"


def _waiting(limit: LimitView) -> str:
    # The key keeps only so many waiters in line: past that the count is a floor.
    return f"{limit.waiting}+" if limit.waiting_is_estimate else str(limit.waiting)


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f} s"
