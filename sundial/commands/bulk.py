"""`sundial jobs import` and the actions (`cancel`, `pause`, `resume`, `retry`, `trigger`) on one
job, several, or every job a filter matches (POST /jobs/batch, POST /jobs/actions)."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from sundial.client import SundialClient
from sundial.client.errors import ApiError, ServerError, Throttled, Unreachable
from sundial.commands.completion import JOB_ID
from sundial.commands.connection import Connection, connection_options
from sundial.commands.exits import CONFLICT, OK
from sundial.commands.output import job_details, output_option, print_one
from sundial.contract.bounds import BATCH_LIMIT, IDEMPOTENCY_KEY_MEMBER
from sundial.contract.bulk import BatchAnswer, OperationView
from sundial.contract.jobs import JobView

FILTER_KEYS = ("status", "priority", "health", "name_prefix")
THROTTLED = 429  # an item's status when the table was too busy to make it: it goes again
T = TypeVar("T")


# Requests in flight at once by default: each takes the api function a few seconds of CPU for its
# 100 creates, so 8 give about 350 creates a second without crowding a default stage (100 requests
# a second); a load of millions wants a few hundred (docs/operations.md, "Loading many jobs").
DEFAULT_IN_FLIGHT = 8


@dataclass
class _Tally:
    counts: dict[str, int] = field(default_factory=lambda: {"created": 0, "already there": 0, "refused": 0})
    refusals: list[tuple[int, str]] = field(default_factory=list)

    def refuse(self, number: int, why: str) -> None:
        self.counts["refused"] += 1
        self.refusals.append((number, why))

    def summary(self) -> str:
        return ", ".join(f"{name} {count}" for name, count in self.counts.items())


@click.command(name="import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--in-flight",
    type=click.IntRange(1, 1000),
    default=DEFAULT_IN_FLIGHT,
    show_default=True,
    help="requests of 100 jobs sent at once",
)
@connection_options
def import_jobs(connection: Connection, file: Path, in_flight: int = DEFAULT_IN_FLIGHT) -> int:
    """Create the jobs of a JSON Lines file, one job body a line, 100 a request, several requests at
    once.

    A line's `idempotency_key` is its key; a line without one gets a key made of the file's path, the
    line's number and its text. Importing the file again (after a crash, say) within 24 hours answers
    the jobs made already instead of making them twice. Lines are read as they are sent, and answers
    are reported in the file's order."""
    with file.open() as counting:
        total = sum(1 for text in counting if text.strip())
    tally = _Tally()
    with (
        click.progressbar(length=total, label="importing", file=sys.stderr) as bar,
        file.open() as lines,
        ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="import") as pool,
    ):
        sender = _Sender(connection.client(), pool, _Window(in_flight), tally, bar.update)
        try:
            for chunk in _chunks(_numbered(lines), BATCH_LIMIT):
                sender.add(_Request(_bodies(file, chunk, tally), len(chunk)))
            sender.drain()
        except BaseException:
            click.echo(f"stopped after {tally.summary()}; import the file again to go on", err=True)
            raise
    for number, why in sorted(tally.refusals):
        click.echo(f"line {number}: {why}", err=True)
    click.echo(tally.summary())
    return CONFLICT if tally.counts["refused"] else OK


class _Sender:
    """Keeps the window's worth of requests in flight and reports their answers in the file's order;
    a request that failed goes again whole, the items of one refused as throttled go again alone."""

    def __init__(
        self,
        client: SundialClient,
        pool: ThreadPoolExecutor,
        window: _Window,
        tally: _Tally,
        progress: Callable[[int], None],
    ) -> None:
        self.client, self.pool, self.window, self.tally, self.progress = client, pool, window, tally, progress
        self.pending: deque[_Request] = deque()

    def add(self, request: _Request) -> None:
        if request.bodies:
            self._send(request)
        self.pending.append(request)
        while len(self.pending) >= self.window.size or (self.pending and self.pending[0].answered()):
            self._report_oldest()

    def drain(self) -> None:
        while self.pending:
            self._report_oldest()

    def _send(self, request: _Request) -> None:
        client, pause = self.client, self.window.pause()
        request.sent = self.pool.submit(_after, client.pause, pause, client.create_jobs, request.jobs)

    def _report_oldest(self) -> None:
        request = self.pending.popleft()
        while True:
            answer = _answer(request, self.window)
            if answer is None:
                self._send(request)  # the same keys: safe
                continue
            again = _report(self.tally, request, answer)
            self.progress(request.lines - len(again))
            if not again:
                self.window.answered()
                return
            self.window.shed(made_any=len(again) < len(request.bodies))
            request = _Request(again, len(again))
            self._send(request)


@dataclass
class _Request:
    bodies: list[tuple[int, dict[str, Any]]]
    lines: int
    sent: Future[BatchAnswer] | None = None

    @property
    def jobs(self) -> list[dict[str, Any]]:
        return [body for _, body in self.bodies]

    def answered(self) -> bool:
        return self.sent is None or self.sent.done()


class _Window:
    """How many requests go at once, and how long a request waits before it goes again.

    It starts small and grows by one with each answer, up to --in-flight. A request throttled or
    failed after the client's own retries halves it, and so do the items of an answer refused as
    throttled (the table over its throughput): what goes again waits a full-jitter pause that
    doubles with each such answer in a row, so that many imports side by side back off together
    instead of giving up. Only requests that fail whole, eight in a row, end the import."""

    START = 8
    GIVE_UP_AFTER = 8  # failures of one request in a row
    FIRST_PAUSE_SECONDS = 0.5
    LONGEST_PAUSE_SECONDS = 20.0

    def __init__(self, most: int, jitter: Callable[[], float] = random.random) -> None:
        self.most = most
        self.size = min(self.START, most)
        self.failures = 0
        self.setbacks = 0  # failed or throttled answers since the last answer in full
        self.jitter = jitter

    def answered(self) -> None:
        self.size, self.failures, self.setbacks = min(self.most, self.size + 1), 0, 0

    def failed(self, error: ApiError) -> None:
        self.failures += 1
        if self.failures >= self.GIVE_UP_AFTER:
            raise error
        self._back_off()

    def shed(self, made_any: bool) -> None:
        if made_any:
            self.failures = 0
        self._back_off()

    def pause(self) -> float:
        """Seconds the next request waits before it is sent."""
        if not self.setbacks:
            return 0.0
        ceiling = self.FIRST_PAUSE_SECONDS * 2 ** (self.setbacks - 1)
        return float(min(self.LONGEST_PAUSE_SECONDS, ceiling) * self.jitter())

    def _back_off(self) -> None:
        self.size = max(1, self.size // 2)
        self.setbacks += 1


def _after(pause: Callable[[float], None], seconds: float, call: Callable[[Any], T], argument: Any) -> T:
    if seconds > 0:
        pause(seconds)
    return call(argument)


def _answer(request: _Request, window: _Window) -> BatchAnswer | None:
    """The request's answer, or None when it is to be sent again."""
    if request.sent is None:
        return BatchAnswer(results=[], created=0, existing=0, refused=0)
    try:
        answer = request.sent.result()
    except (Throttled, ServerError, Unreachable) as error:
        window.failed(error)
        return None
    return answer


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    return ((number, text) for number, text in enumerate(lines, 1) if text.strip())


def _chunks(lines: Iterator[tuple[int, str]], size: int) -> Iterator[list[tuple[int, str]]]:
    while chunk := list(itertools.islice(lines, size)):
        yield chunk


def _bodies(file: Path, chunk: list[tuple[int, str]], tally: _Tally) -> list[tuple[int, dict[str, Any]]]:
    bodies: list[tuple[int, dict[str, Any]]] = []
    for number, text in chunk:
        body = _parsed(text)
        if isinstance(body, str):
            tally.refuse(number, body)
            continue
        body.setdefault(IDEMPOTENCY_KEY_MEMBER, _derived_key(file, number, text))
        bodies.append((number, body))
    return bodies


def _report(tally: _Tally, request: _Request, answer: BatchAnswer) -> list[tuple[int, dict[str, Any]]]:
    """Counts the answer's items; returns those refused as throttled, to be sent again."""
    again: list[tuple[int, dict[str, Any]]] = []
    for result in answer.results:
        number, body = request.bodies[result.index]
        if result.status == THROTTLED:
            again.append((number, body))
        elif result.error is not None:
            where = result.error.field or ""
            field_name = where.split(".", 1)[1] if "." in where else ""
            tally.refuse(number, result.error.message + (f" ({field_name})" if field_name else ""))
        else:
            tally.counts["created" if result.status == 201 else "already there"] += 1
    return again


def _parsed(text: str) -> dict[str, Any] | str:
    """The line's job body, or why it is none."""
    try:
        body = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    return body if isinstance(body, dict) else "not a JSON object"


def _derived_key(file: Path, number: int, text: str) -> str:
    digest = hashlib.sha256(f"{file.resolve()}\n{number}\n{text.strip()}".encode()).hexdigest()
    return f"import-{digest[:48]}"


def _filters(pairs: tuple[str, ...]) -> dict[str, str]:
    chosen: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in FILTER_KEYS:
            raise click.BadParameter(f"'{pair}': give KEY=VALUE, KEY one of {', '.join(FILTER_KEYS)}")
        chosen[key] = value
    return chosen


def _action(name: str, single: Callable[[SundialClient, str], JobView], summary: str) -> click.Command:
    @click.command(name=name, help=summary)
    @click.argument("job_ids", nargs=-1, type=JOB_ID, metavar="[JOB_ID]...")
    @click.option("--filter", "pairs", multiple=True, metavar="KEY=VALUE", help=f"{', '.join(FILTER_KEYS)}")
    @click.option("--yes", is_flag=True, help="act on every job the filter matches without asking")
    @output_option
    @connection_options
    def command(
        connection: Connection, output: str, job_ids: tuple[str, ...], pairs: tuple[str, ...], yes: bool
    ) -> int:
        if bool(job_ids) == bool(pairs):
            raise click.UsageError("give job ids or --filter, not both nor neither")
        client = connection.client()
        if len(job_ids) == 1:
            print_one(single(client, job_ids[0]), output, job_details)
            return OK
        chosen = _filters(pairs)
        if pairs and not yes:
            click.confirm(f"{name} every job matching {chosen or 'anything'}?", abort=True, err=True)
        started = client.start_action(name, ids=list(job_ids) or None, filter=chosen if pairs else None)
        done = _wait(client, started)
        print_one(done, output, _operation_summary)
        return CONFLICT if done.refused else OK

    return command


def _wait(client: SundialClient, started: OperationView) -> OperationView:
    """Polls until done, with a bar of the jobs reached over those matched (while known)."""
    total = started.done + started.refused + (started.left or 0)
    with click.progressbar(length=max(total, 1), label=started.action.value, file=sys.stderr) as bar:
        reached = 0

        def seen(operation: OperationView) -> None:
            nonlocal reached
            now = operation.done + operation.refused
            bar.length = max(bar.length or 1, now + (operation.left or 0), 1)
            bar.update(now - reached)
            reached = now

        return client.wait_action(started.id, seen=seen)


def _operation_summary(operation: OperationView) -> str:
    lines = [
        f"operation {operation.id}: {operation.action.value} {operation.state.value}: "
        f"done {operation.done}, refused {operation.refused}, left {operation.left}"
    ]
    lines += [f"  refused {refusal.job_id}: {refusal.message}" for refusal in operation.refusals]
    return "\n".join(lines)


COMMANDS = (
    import_jobs,
    _action(
        "cancel", SundialClient.cancel_job, "Cancel jobs: no further attempt starts (a running one finishes)."
    ),
    _action("pause", SundialClient.pause_job, "Pause recurring jobs: no new occurrence starts while paused."),
    _action(
        "resume",
        SundialClient.resume_job,
        "Resume paused jobs; missed occurrences follow their misfire policy.",
    ),
    _action("trigger", SundialClient.trigger_job, "Run one extra occurrence of each job now."),
    _action("retry", SundialClient.retry_job, "Revive dead jobs: each runs now, its retries counted afresh."),
)
