"""The alert route's flags of `jobs create` and `jobs update` (docs/api.md, "Alert route")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import click

from sundial.commands.spec import read_json

# flag → (route type, its field)
_ROUTE_FLAGS = {
    "on_dead_url": ("http", "url"),
    "on_dead_sqs": ("sqs", "queue_url"),
    "on_dead_sns": ("sns", "topic_arn"),
}


def alert_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    options = (
        click.option(
            "--on-dead",
            metavar="JSON",
            help="the alert route as a target object (http, sqs or sns), or @file; null removes it",
        ),
        click.option("--on-dead-url", metavar="URL", help="an http alert route (POSTed the summary, signed)"),
        click.option("--on-dead-sqs", metavar="QUEUE_URL", help="an SQS queue as the alert route"),
        click.option("--on-dead-sns", metavar="ARN", help="an SNS topic as the alert route"),
        click.option(
            "--on-failure-streak",
            type=int,
            metavar="N",
            help="recurring: the route hears only of the death that makes N in a row (once a streak)",
        ),
        click.option(
            "--alert-on-missed/--no-alert-on-missed",
            default=None,
            help="recurring: the route also hears of instants missed for a misfire or an overlap "
            "(one notice a stretch); --no-alert-on-missed turns it off",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command


def alert_fields(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The alert route fields the flags give; nothing for flags not given."""
    given = [name for name in ("on_dead", *_ROUTE_FLAGS) if flags.get(name) is not None]
    if len(given) > 1:
        raise click.UsageError(
            f"give one alert route, not {', '.join('--' + n.replace('_', '-') for n in given)}"
        )
    fields: dict[str, Any] = {}
    if given == ["on_dead"]:
        route = read_json(flags["on_dead"], "--on-dead")
        if route is not None and not isinstance(route, dict):
            raise click.BadParameter("must be a JSON object or null", param_hint="--on-dead")
        fields["on_dead"] = route
    elif given:
        kind, field = _ROUTE_FLAGS[given[0]]
        fields["on_dead"] = {"type": kind, field: flags[given[0]]}
    if flags.get("on_failure_streak") is not None:
        fields["on_failure_streak"] = flags["on_failure_streak"]
    if flags.get("alert_on_missed") is not None:
        fields["alert_on_missed"] = flags["alert_on_missed"]
    return fields
