"""Which API a command talks to: `--api`, `SUNDIAL_API_URL`, or a deployed stack's `ApiUrl` output."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

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


def connection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Adds --api, --stack, --profile, --region and --timeout; the command receives `connection`."""

    @functools.wraps(command)
    def wrapper(*args: Any, api: str | None, stack: str | None, profile: str | None, **kwargs: Any) -> Any:
        region, timeout = kwargs.pop("region"), kwargs.pop("timeout")
        return command(*args, connection=Connection(api, stack, profile, region, timeout), **kwargs)

    options = (
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
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper
