"""Which API a command talks to, and how: the connection options every command takes.

`--api`, `--stack`, `--profile` (the AWS profile), `--region`, `--timeout`, `--sundial-profile` and
`--debug` go before the command or after it (`sundial --api URL jobs list`, as with the AWS CLI).
Each value comes from the first of: the option after the command, the option before it, its
environment variable, the Sundial profile (sundial/commands/profiles.py), the default. A command for
which an option means nothing refuses it when it is given, instead of ignoring it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import click
from click.core import ParameterSource

from sundial.client import LOCAL_API_URL, SundialClient, api_url_of_stack
from sundial.commands.debug import debug_transport
from sundial.commands.output import FORMATS
from sundial.commands.profiles import NO_PROFILE, PROFILE_ENV, Profile, config_path, load_profile

API_URL_ENV = "SUNDIAL_API_URL"
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class Connection:
    api: str | None
    stack: str | None
    profile: str | None
    region: str | None
    timeout: float
    debug: bool = False

    def client(self) -> SundialClient:
        """Signed for an execute-api URL (a stack's always is), unsigned for the local stack."""
        if self.api and self.stack:
            raise click.UsageError(f"give --api (or ${API_URL_ENV}) or --stack, not both")
        url = self.api or LOCAL_API_URL
        if self.stack:
            url = api_url_of_stack(self.stack, profile=self.profile, region=self.region)
        extra: dict[str, Any] = {"transport": debug_transport()} if self.debug else {}
        return SundialClient(url, timeout=self.timeout, profile=self.profile, region=self.region, **extra)


NAMES = ("api", "stack", "profile", "region", "timeout")
# Options that say how to connect rather than where: the profile's name and --debug.
SETTINGS = ("sundial_profile", "debug")
EVERY_NAME = (*NAMES, *SETTINGS)
GIVEN_BEFORE = "sundial.connection"


def connection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds every connection option; the command receives `connection`."""
    return some_connection_options(EVERY_NAME)(command)


def some_connection_options(
    takes: Iterable[str], why: str = "", own: Iterable[str] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The connection options, of which only those named in `takes` mean something to the command:
    the others are hidden from its help and refused when given (`why` says what it does instead).
    Those named in `own` are options of the command's own with another meaning (`jobs wait
    --timeout`): taken only from before the command, the profile or the default. The command
    receives `connection` (the fields it does not take hold their defaults)."""
    taken, owned = frozenset(takes), frozenset(own)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in EVERY_NAME if name not in owned}
            _refuse_given(set(EVERY_NAME) - taken, why)
            profile = _profile(given["sundial_profile"]) if "sundial_profile" in taken else NO_PROFILE
            values = {
                name: _before_the_command(name, profile)
                if name in owned
                else resolved(name, given[name], profile)
                for name in NAMES
            }
            if "output" in kwargs:
                kwargs["output"] = _output(kwargs["output"], profile)
            connection = Connection(**values, debug=bool(resolved("debug", given["debug"], NO_PROFILE)))
            return command(*args, connection=connection, **kwargs)

        for name, option in reversed(_options(taken)):
            if name not in owned:
                wrapper = option(wrapper)
        return wrapper

    return decorate


def global_connection_options(group: click.Group) -> click.Group:
    """The same options on the group itself, kept for whichever command runs below it."""

    def keep(context: click.Context, parameter: click.Parameter, value: Any) -> None:
        if context.get_parameter_source(str(parameter.name)) is ParameterSource.COMMANDLINE:
            context.meta.setdefault(GIVEN_BEFORE, {})[parameter.name] = value

    for _name, option in _options(frozenset(EVERY_NAME)):
        group = option(group)  # appended to the group's parameters, in order
        group.params[-1].callback, group.params[-1].expose_value = keep, False
    return group


def given_before() -> dict[str, Any]:
    """The connection options given before the command, by name."""
    before: dict[str, Any] = click.get_current_context().meta.get(GIVEN_BEFORE, {})
    return before


def given_value(name: str, value: Any) -> Any:
    """The value a command option holds, unless it was left unset here and given before the command."""
    return resolved(name, value, NO_PROFILE)


def resolved(name: str, value: Any, profile: Profile) -> Any:
    """After the command, before it, the environment, the profile, the default: the first given."""
    context = click.get_current_context()
    source = context.get_parameter_source(name)
    before = given_before()
    if source is ParameterSource.COMMANDLINE or (
        name not in before and source is ParameterSource.ENVIRONMENT
    ):
        return value
    if name in before:
        return before[name]
    return value if profile.get(name) is None else profile.get(name)


def _before_the_command(name: str, profile: Profile) -> Any:
    before = given_before()
    if name in before:
        return before[name]
    return profile.get(name) if profile.get(name) is not None else DEFAULTS.get(name)


DEFAULTS: dict[str, Any] = {"timeout": DEFAULT_TIMEOUT}


def option_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def _refuse_given(names: Iterable[str], why: str) -> None:
    context = click.get_current_context()
    before = given_before()
    for name in names:
        if name in before or context.get_parameter_source(name) is ParameterSource.COMMANDLINE:
            what = f"sundial {context.command_path.split(' ', 1)[-1]}"
            raise click.UsageError(
                f"{option_name(name)} means nothing for `{what}`" + (f": {why}" if why else "")
            )


def _profile(given: str | None) -> Profile:
    return load_profile(resolved("sundial_profile", given, NO_PROFILE), config_path())


def _output(value: str, profile: Profile) -> str:
    if click.get_current_context().get_parameter_source("output") is not ParameterSource.DEFAULT:
        return value
    chosen = profile.get("output")
    if chosen is None:
        return value
    if chosen not in FORMATS:
        raise click.UsageError(f"profile '{profile.name}': output must be one of {', '.join(FORMATS)}")
    return str(chosen)


def _options(taken: frozenset[str]) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    def hidden(name: str) -> bool:
        return name not in taken

    options = (
        click.option(
            "--api",
            envvar=API_URL_ENV,
            metavar="URL",
            hidden=hidden("api"),
            help=f"the API's base URL: an execute-api URL with its stage (SigV4-signed), or the local "
            f"stack's [default: {LOCAL_API_URL}; env {API_URL_ENV}]",
        ),
        click.option(
            "--stack",
            metavar="NAME",
            hidden=hidden("stack"),
            help="use the ApiUrl output of this deployed stack (Sundial-<stage>)",
        ),
        click.option(
            "--profile",
            metavar="NAME",
            hidden=hidden("profile"),
            help="the AWS profile to sign with (default: botocore's chain); see --sundial-profile",
        ),
        click.option(
            "--region",
            metavar="REGION",
            hidden=hidden("region"),
            help="the region to sign for (default: the URL's)",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0.1),
            default=DEFAULT_TIMEOUT,
            show_default=True,
            hidden=hidden("timeout"),
            help="seconds per request",
        ),
        click.option(
            "--sundial-profile",
            envvar=PROFILE_ENV,
            metavar="NAME",
            hidden=hidden("sundial_profile"),
            help=f"the profile of the config file to use (default: 'default' when it has one; env "
            f"{PROFILE_ENV}); the options given win over it",
        ),
        click.option(
            "--debug",
            is_flag=True,
            default=False,
            hidden=hidden("debug"),
            help="log each HTTP request and answer (method, URL, status, time) to stderr",
        ),
    )
    return tuple(zip(EVERY_NAME, options, strict=True))
