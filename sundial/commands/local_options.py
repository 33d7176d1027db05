"""The connection options on `sundial local`, `emulator` and `smoke`, whose own parsing
(sundial/local_stack/cli.py) knows only their own options: each connection option is translated to
what it means there, or refused with why, before or after the command alike.

- `local`: `--api http://127.0.0.1:PORT` is the port it serves the API on; nothing else applies.
- `emulator`: none applies (it is the AWS emulator, not the API).
- `smoke`: `--api`, `--stack` and `--timeout` are its own; `--profile` is the AWS profile it reads the
  stack and signs with; `--sundial-profile` gives the api, stack and AWS profile it lacks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import click

from sundial.commands.connection import API_URL_ENV, EVERY_NAME, option_name
from sundial.commands.profiles import PROFILE_ENV, config_path, load_profile

FLAGS = frozenset({"debug"})
_BY_OPTION = {option_name(name): name for name in EVERY_NAME}
TAKES = {
    "local": frozenset({"api"}),
    "emulator": frozenset(),
    "smoke": frozenset({"api", "stack", "timeout", "profile", "sundial_profile"}),
}
WHY = {
    "local": "it serves the API on 127.0.0.1 (--api http://127.0.0.1:PORT is its --port) on its own emulator",
    "emulator": "it is the AWS emulator the local stack runs on, not the API",
    "smoke": "it signs in the execute-api URL's region and prints its own report",
}


def local_stack_args(
    name: str, args: Sequence[str], before: Mapping[str, Any], environ: MutableMapping[str, str] = os.environ
) -> list[str]:
    """`args` of the command `name` with the connection options given before and after it turned into
    its own options (or, for an AWS profile, the environment it reads). Raises click.UsageError."""
    after, rest = split_connection_options(args)
    if name == "smoke" and "timeout" in before:
        raise click.UsageError(
            "smoke's --timeout is the seconds it waits for its jobs: give it after `smoke`"
        )
    given = {**before, **after}
    refused = [option_name(option) for option in given if option not in TAKES[name]]
    if refused:
        raise click.UsageError(f"{', '.join(refused)} means nothing for `sundial {name}`: {WHY[name]}")
    if name == "local" and "api" in given:
        return [*rest, "--port", _local_port(given["api"], rest)]
    if name == "smoke":
        return _smoke_args(rest, given, environ)
    return rest


def split_connection_options(args: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The connection options in `args` (`--api URL`, `--api=URL`, `--debug`), and the rest."""
    found: dict[str, Any] = {}
    rest: list[str] = []
    tokens = iter(args)
    for token in tokens:
        if token == "--":
            rest += [token, *tokens]
            break
        option, equals, value = token.partition("=")
        name = _BY_OPTION.get(option)
        if name is None:
            rest.append(token)
        elif name in FLAGS:
            found[name] = True
        else:
            found[name] = value if equals else next(tokens, None)
            if found[name] is None:
                raise click.UsageError(f"{option} needs a value")
    return found, rest


def _local_port(api: str, rest: Sequence[str]) -> str:
    parts = urlsplit(api)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost") or parts.path.strip("/"):
        raise click.UsageError(
            f"`sundial local` serves http on 127.0.0.1: --api must be http://127.0.0.1:PORT, not {api}"
        )
    if any(token == "--port" or token.startswith("--port=") for token in rest):
        raise click.UsageError("give `sundial local` --api or --port, not both")
    return str(parts.port or 80)


def _smoke_args(rest: list[str], given: Mapping[str, Any], environ: MutableMapping[str, str]) -> list[str]:
    chosen = given.get("sundial_profile") or environ.get(PROFILE_ENV) or None
    profile = load_profile(chosen, config_path(environ))
    api = given.get("api") or (None if environ.get(API_URL_ENV) else profile.get("api"))
    stack = given.get("stack") or profile.get("stack")
    aws_profile = given.get("profile") or profile.get("profile")
    if aws_profile:
        # The smoke check reads the stack and signs through boto3's chain, which reads this.
        environ["AWS_PROFILE"] = str(aws_profile)
    extra = [*(["--api", str(api)] if api else []), *(["--stack", str(stack)] if stack else [])]
    timeout = given.get("timeout")
    return [*rest, *extra, *(["--timeout", str(timeout)] if timeout is not None else [])]
