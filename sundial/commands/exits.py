"""Exit codes scripts can rely on (docs/client.md), and errors on stderr that name the field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from sundial.client import (
    ApiError,
    Conflict,
    InvalidInput,
    NotFound,
    PreconditionFailed,
    ServerError,
    Throttled,
    Unauthorized,
    Unreachable,
)

OK, USAGE, NOT_FOUND, CONFLICT, AUTH, UNAVAILABLE = 0, 1, 2, 3, 4, 5
# The job changed since the ETag a change was conditional on (HTTP 412): read it again, decide again.
STALE = 8
# `sundial apply --dry-run --exit-code`: the stage differs from the file (2 already means not found).
CHANGES_PENDING = 10
# How a job that `jobs wait` or a `--watch` followed ended when it did not succeed, and a wait that
# ran out of time (124, as timeout(1) reports one).
ENDED_DEAD, ENDED_CANCELLED, WAIT_TIMED_OUT = 6, 7, 124

_CODES: tuple[tuple[type[ApiError], int], ...] = (
    (InvalidInput, USAGE),
    (NotFound, NOT_FOUND),
    (Conflict, CONFLICT),
    (PreconditionFailed, STALE),
    (Unauthorized, AUTH),
    (Throttled, UNAVAILABLE),
    (ServerError, UNAVAILABLE),
    (Unreachable, UNAVAILABLE),
)


def exit_code(error: ApiError) -> int:
    for kind, code in _CODES:
        if isinstance(error, kind):
            return code
    # Another 4xx is a request this version should not have sent; anything else, the server's.
    return USAGE if error.status is not None and 400 <= error.status < 500 else UNAVAILABLE


def describe(error: ApiError) -> str:
    """`error: schedule: cron expression '61 * * * *': minute must be 0-59 (field schedule, HTTP 400)`."""
    facts = [f"field {error.field}"] if error.field else []
    facts += [f"HTTP {error.status}"] if error.status is not None else []
    if isinstance(error, Unreachable) and error.sent:
        facts.append("it may have been applied: check before trying again")
    message = error.message
    if error.field and not message.startswith(f"{error.field}:"):
        message = f"{error.field}: {message}"
    return f"error: {message}" + (f" ({', '.join(facts)})" if facts else "")


class SundialGroup(click.Group):
    """A group whose every failure ends with one of the exit codes above: click's own usage errors
    (which click ends with 2, this CLI's "not found") become 1, and API errors their code."""

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> None:
        extra.pop("standalone_mode", None)
        try:
            result = super().main(args, prog_name, standalone_mode=False, **extra)
        except click.UsageError as exc:
            exc.show()
            raise SystemExit(USAGE) from None
        except click.ClickException as exc:
            exc.show()
            raise SystemExit(exc.exit_code) from None
        except click.Abort:
            click.echo("Aborted.", err=True)
            raise SystemExit(130) from None
        except ApiError as exc:
            click.echo(describe(exc), err=True)
            raise SystemExit(exit_code(exc)) from None
        raise SystemExit(result if isinstance(result, int) else OK)
