"""What the shell completes (`sundial completion bash`): job ids, read from the API the command
would talk to, and IANA time zones."""

from __future__ import annotations

import os
import zoneinfo
from typing import Any

import click
from click.shell_completion import CompletionItem

from sundial.client import LOCAL_API_URL, ApiError, SundialClient
from sundial.client.transport import NO_RETRIES
from sundial.commands.connection import API_URL_ENV, GIVEN_BEFORE

# A shell waits for its completions: a slow or absent API must not hang the prompt.
COMPLETION_TIMEOUT_SECONDS = 2.0
COMPLETED_JOBS = 100
COMPLETED_LIMITS = 100


def complete_job_id(context: click.Context, _parameter: click.Parameter, incomplete: str) -> list[Any]:
    """The newest jobs whose id starts with what was typed (any case), each with its name."""
    try:
        client = SundialClient(_api_url(context), timeout=COMPLETION_TIMEOUT_SECONDS, retries=NO_RETRIES)
        jobs = client.list_jobs(limit=COMPLETED_JOBS).jobs
    except ApiError:
        return []
    typed = incomplete.upper()
    return [CompletionItem(job.id, help=job.name or None) for job in jobs if job.id.startswith(typed)]


def complete_limit_key(context: click.Context, _parameter: click.Parameter, incomplete: str) -> list[Any]:
    """The keys that have a limit and start with what was typed (keys keep their case)."""
    try:
        client = SundialClient(_api_url(context), timeout=COMPLETION_TIMEOUT_SECONDS, retries=NO_RETRIES)
        found = client.list_limits(limit=COMPLETED_LIMITS).limits
    except ApiError:
        return []
    return [CompletionItem(limit.key) for limit in found if limit.key.startswith(incomplete)]


def complete_zone(_context: click.Context, _parameter: click.Parameter, incomplete: str) -> list[Any]:
    typed = incomplete.lower()
    return [
        CompletionItem(zone)
        for zone in sorted(zoneinfo.available_timezones())
        if zone.lower().startswith(typed)
    ]


def _api_url(context: click.Context) -> str:
    given: Any = context.params.get("api") or context.meta.get(GIVEN_BEFORE, {}).get("api")
    return str(given or os.environ.get(API_URL_ENV) or LOCAL_API_URL)


class JobId(click.ParamType[str]):
    """A job id as typed. Ids are ULIDs, whose Crockford base 32 ignores case, and the API's form is
    upper case: every command sends it so, whether it sends the id in a path or in a body."""

    name = "job_id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(value).upper()

    def shell_complete(self, ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
        return complete_job_id(ctx, param, incomplete)


JOB_ID = JobId()
job_id_argument = click.argument("job_id", type=JOB_ID)
limit_key_argument = click.argument("key", shell_complete=complete_limit_key)
