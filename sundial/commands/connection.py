"""Which API a command talks to: `--api`, `SUNDIAL_API_URL`, or a deployed stack's `ApiUrl` output.

The options go before the command or after it (`sundial --api URL jobs list`, as with the AWS CLI):
one given after the command wins over the same one before it, which wins over the environment.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
from click.core import ParameterSource

from sundial.client import LOCAL_API_URL, SundialClient, api_url_of_stack

API_URL_ENV = "SUNDIAL_API_URL"


@dataclass(frozen=True)
class Connection:
    api: str | None
    stack: str | None
    profile: str | None
    region: str | None
    timeout: float

    def client(self) -> SundialClient:
        """Signed for an execute-api URL (a stack's always is), unsigned for the local stack."""
        if self.api and self.stack:
            raise click.UsageError(f"give --api (or ${API_URL_ENV}) or --stack, not both")
        url = self.api or LOCAL_API_URL
        if self.stack:
            url = api_url_of_stack(self.stack, profile=self.profile, region=self.region)
        return SundialClient(url, timeout=self.timeout, profile=self.profile, region=self.region)


NAMES = ("api", "stack", "profile", "region", "timeout")
GIVEN_BEFORE = "sundial.connection"


def connection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds --api, --stack, --profile, --region and --timeout; the command receives `connection`."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: given_value(name, kwargs.pop(name)) for name in NAMES}
        return command(*args, connection=Connection(**values), **kwargs)

    for option in reversed(_options()):
        wrapper = option(wrapper)
    return wrapper


def global_connection_options(group: click.Group) -> click.Group:
    """The same options on the group itself, kept for whichever command runs below it."""

    def keep(context: click.Context, parameter: click.Parameter, value: Any) -> None:
        if context.get_parameter_source(str(parameter.name)) is ParameterSource.COMMANDLINE:
            context.meta.setdefault(GIVEN_BEFORE, {})[parameter.name] = value

    for option in _options():
        group = option(group)  # appended to the group's parameters, in order
        group.params[-1].callback, group.params[-1].expose_value = keep, False
    return group


def given_value(name: str, value: Any) -> Any:
    """The value a command option holds, unless it was left unset here and given before the command."""
    context = click.get_current_context()
    before: dict[str, Any] = context.meta.get(GIVEN_BEFORE, {})
    if context.get_parameter_source(name) is ParameterSource.COMMANDLINE or name not in before:
        return value
    return before[name]


def _options() -> tuple[Callable[[Any], Any], ...]:
    return (
        click.option(
            "--api",
            envvar=API_URL_ENV,
            metavar="URL",
            help=f"the API's base URL: an execute-api URL with its stage (SigV4-signed), or the local "
            f"stack's [default: {LOCAL_API_URL}; env {API_URL_ENV}]",
        ),
        click.option(
            "--stack", metavar="NAME", help="use the ApiUrl output of this deployed stack (Sundial-<stage>)"
        ),
        click.option(
            "--profile", metavar="NAME", help="the AWS profile to sign with (default: botocore's chain)"
        ),
        click.option("--region", metavar="REGION", help="the region to sign for (default: the URL's)"),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=30.0,
            show_default=True,
            help="seconds per request",
        ),
    )
