"""`sundial jobs wait`: block until a job's current occurrence ends, and say how in the exit code.

What "current" means: for a one-off, the job itself. A recurring job's status is that of its next
occurrence, so it is judged from `last_run` instead: the occurrence current when the wait starts has
ended once `last_run` is no longer the one read at the start and its status is `succeeded` or
`dead` (a `failed` one has a retry to come). A job that is cancelled, or has no occurrence left
(status `succeeded` or `dead`), ends the wait whatever it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import click

from sundial.commands.completion import job_id_argument
from sundial.commands.connection import EVERY_NAME, Connection, some_connection_options
from sundial.commands.exits import ENDED_CANCELLED, ENDED_DEAD, OK, WAIT_TIMED_OUT
from sundial.commands.output import INTERRUPTED, job_details, output_option, print_one
from sundial.contract.jobs import JobView, LastRun
from sundial.contract.vocabulary import JobStatus, RunStatus

SUCCEEDED, FINAL = "succeeded", "final"
# How a job with nothing left to run ended, by its status.
FINAL_CODES = {JobStatus.SUCCEEDED: OK, JobStatus.DEAD: ENDED_DEAD, JobStatus.CANCELLED: ENDED_CANCELLED}
_RUN_CODES = {RunStatus.SUCCEEDED.value: OK, RunStatus.DEAD.value: ENDED_DEAD}


def ending(job: JobView, baseline: LastRun | None) -> int | None:
    """The exit code of the occurrence that `baseline` (the `last_run` read at the start) was
    before, once it has ended; None while it goes on."""
    if job.status in FINAL_CODES:
        return FINAL_CODES[job.status]
    run = job.last_run
    if job.schedule is None or run is None or run == baseline:
        return None
    return _RUN_CODES.get(run.status)


@dataclass(frozen=True)
class Waited:
    code: int
    job: JobView


def wait_for(
    read: Callable[[], JobView],
    until: str,
    timeout: float | None,
    interval: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Waited:
    """Reads the job every `interval` seconds until its current occurrence ends (`final`) or one of
    its occurrences succeeds (`succeeded`: a recurring job's dead occurrence is passed over, as the
    next may succeed; a one-off that died or a cancelled job cannot, and ends the wait)."""
    deadline = None if timeout is None else clock() + timeout
    job = read()
    baseline = job.last_run
    while True:
        code = ending(job, baseline)
        if code == ENDED_DEAD and until == SUCCEEDED and job.status is not JobStatus.DEAD:
            baseline, code = job.last_run, None
        if code is not None:
            return Waited(code, job)
        if deadline is not None and clock() + interval > deadline:
            return Waited(WAIT_TIMED_OUT, job)
        sleep(interval)
        job = read()


@click.command()
@job_id_argument
@click.option(
    "--until",
    type=click.Choice([SUCCEEDED, FINAL]),
    default=FINAL,
    show_default=True,
    help="final: the occurrence current now ends (succeeded, dead or cancelled); succeeded: an "
    "occurrence succeeds (a recurring job's dead ones are passed over)",
)
@click.option(
    "--timeout",
    "wait_timeout",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="give up after this long, exit 124 [default: no limit]. The seconds per request go before "
    "the command here: `sundial --timeout 10 jobs wait ID`",
)
@click.option(
    "--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True, help="seconds between reads"
)
@output_option
@some_connection_options(EVERY_NAME, own=("timeout",))
def wait(
    connection: Connection, output: str, job_id: str, until: str, wait_timeout: float | None, interval: float
) -> int:
    """Wait for the job's current occurrence to end; print the job as it ended.

    Exit 0 when it succeeded, 6 when it died, 7 when the job was cancelled, 124 after --timeout."""
    client = connection.client()
    try:
        waited = wait_for(lambda: client.get_job(job_id), until, wait_timeout, interval, sleep=client.pause)
    except KeyboardInterrupt:
        raise SystemExit(INTERRUPTED) from None
    print_one(waited.job, output, job_details)
    if waited.code == WAIT_TIMED_OUT:
        click.echo(f"job {waited.job.id}: still {waited.job.status.value} after {wait_timeout:g} s", err=True)
    elif waited.code != OK:
        click.echo(f"job {waited.job.id} ended {_how(waited)}", err=True)
    return waited.code


def _how(waited: Waited) -> str:
    if waited.code == ENDED_CANCELLED:
        return "cancelled"
    run = waited.job.last_run
    return "dead" + (f": {run.error}" if run is not None and run.error else "")
