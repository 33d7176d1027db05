"""`--max-items`, `--starting-token` and `--all`, as the AWS CLI pages: the items asked for, and
the token that goes on after the last one printed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import click
from click.core import ParameterSource

# The API's largest page (docs/api.md).
PAGE_LIMIT = 100
DEFAULT_MAX_ITEMS = 50

T = TypeVar("T")


class Page(Protocol):
    @property
    def next_token(self) -> str | None: ...


P = TypeVar("P", bound=Page)


@dataclass(frozen=True)
class Collected(Generic[T, P]):
    items: list[T]
    next_token: str | None
    first: P


def paging_options(noun: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def add(command: Callable[..., Any]) -> Callable[..., Any]:
        options = (
            click.option(
                "--max-items",
                "--limit",
                "max_items",
                type=click.IntRange(min=1),
                default=DEFAULT_MAX_ITEMS,
                show_default=True,
                help=f"at most this many {noun}; -o json then gives the next_token to go on from",
            ),
            click.option(
                "--starting-token",
                metavar="TOKEN",
                help="go on from the next_token an earlier listing printed, with the same filters",
            ),
            click.option(
                "--all", "every", is_flag=True, help=f"every {noun[:-1]} that matches, page after page"
            ),
        )
        for option in reversed(options):
            command = option(command)
        return command

    return add


def wanted(max_items: int, every: bool) -> int | None:
    """How many items to collect (None: all of them)."""
    if not every:
        return max_items
    if click.get_current_context().get_parameter_source("max_items") is ParameterSource.COMMANDLINE:
        raise click.UsageError("give --all or --max-items, not both")
    return None


def collect(
    fetch: Callable[[str | None, int], P],
    items_of: Callable[[P], Sequence[T]],
    max_items: int | None,
    token: str | None,
    keep: Callable[[T], bool] = lambda _item: True,
) -> Collected[T, P]:
    """Pages from `token` until `max_items` items are kept or the listing ends. Each page asks for
    no more than are still wanted, so no page is cut short and its token goes on exactly after the
    last item kept, even when `keep` filters on this side."""
    found: list[T] = []
    first: P | None = None
    while True:
        size = PAGE_LIMIT if max_items is None else min(PAGE_LIMIT, max_items - len(found))
        page = fetch(token, size)
        first = page if first is None else first
        found += [item for item in items_of(page) if keep(item)]
        token = page.next_token
        if not token or (max_items is not None and len(found) >= max_items):
            return Collected(found, token, first)
