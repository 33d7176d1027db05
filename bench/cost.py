"""Cost per execution: an in-process engine on the emulator, its AWS calls metered by botocore hooks.

Time is a FixedClock moved from one event to the next (ticks on each minute, messages when they
become visible), so a day of a daily job takes a moment. Each SQS message is handed to the worker
at the instant SQS would make it visible (the send's own DelaySeconds), and the worker's wait for
its instant is measured, since a Lambda bills it.

Assumptions (also written to results.json):
- Lambda memory as infra/functions.py declares it; billed time is AWS_CALL_MS per AWS call (divided
  by the tick's threads for the scheduler) plus the worker's measured wait; the target's own time
  is not ours to count.
- The deployed worker reads through a Lambda event source mapping with batches of up to ten: the
  messages of one queue that become visible in the same second share an invocation, one
  ReceiveMessage and one DeleteMessageBatch; their attempts run side by side, so the invocation
  bills the longest of them, not their sum (empty polls of idle queues are a fixed monthly cost,
  not counted per execution). `batch_size=1` prices the worker as it was before batches.
- SQS makes a message visible exactly when its DelaySeconds end, and the worker starts on it at
  once: lateness here is the engine's own (rounding, the worker's wait, AWS_CALL_MS per call), not
  SQS's pick-up time.
- A tick reads every shard each minute whatever is due: that fixed part (measured as an empty tick)
  is shared by EXECUTIONS_PER_MINUTE executions, the brief's peak.
"""

from __future__ import annotations

import contextlib
import heapq
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bench import cost_model as m
from bench.harness import Aws, Row, client, percentile
from bench.meter import Meter
from sundial.contract.jobs import JobCreate
from sundial.local_stack.environment import use_emulator
from sundial.shared import constants as c
from sundial.shared.clock import FixedClock, format_rfc3339
from sundial.shared.dispatch import SHARED_SEND_WINDOW_SECONDS, Dispatcher, JobMessage, SharedSends
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.engine.worker import AttemptResult, Outcome, Worker
from sundial.shared.models import Job
from sundial.shared.service.batch import WRITERS as BATCH_WRITERS
from sundial.shared.service.batch import create_batch
from sundial.shared.service.service import JobService
from sundial.shared.store import JobStore
from sundial.shared.targets import Delivery

MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS
AWS_CALL_MS = 10.0
MEMORY_GB = {"api": 0.5, "scheduler": 1.0, "worker": 0.25}
TICK_THREADS = 8
EXECUTIONS_PER_MINUTE = 10_000
ESM_REQUESTS_PER_BATCH = 2  # ReceiveMessage + DeleteMessageBatch
GOAL_PER_MILLION = 2.00  # a recurring execution on-demand, with failure history
GOAL_PROVISIONED_PER_MILLION = 1.00  # the same at the steady peak, provisioned
# One-offs at second precision with failure history, created one by one and a hundred a request.
GOAL_ONE_OFF_PER_MILLION = 5.00
GOAL_BATCH_ONE_OFF_PER_MILLION = 3.00
# DynamoDB write requests a recurring execution sends (failure history): a new write shows here.
GOAL_WRITE_REQUESTS = 3.0
TARGET_UTILIZATION = 0.70  # infra/capacity_settings.py's default for provisioned auto scaling
# The comparison: EventBridge Scheduler invoking a Lambda target that writes one history item.
TARGET_MEMORY_GB = 0.125
TARGET_SECONDS = 0.02


@dataclass(frozen=True)
class Config:
    """A deployment's cost choices, as sundial/functions/settings.py and infra/settings.py take them."""

    precision: c.Precision = c.Precision.SECOND
    history: c.History = c.History.ALL
    batch_size: int = c.WORKER_BATCH_SIZE

    @property
    def label(self) -> str:
        """precision/history/batch size, as printed beside each price."""
        return f"{self.precision.value}/{self.history.value}/batch {self.batch_size}"


BEFORE = Config(batch_size=1)
DEFAULT = Config()
CHEAPEST = Config(c.Precision.SQS, c.History.FAILURES)


def _no_target(job: Job, delivery: Delivery, limit_seconds: float = 0.0) -> None:
    """The target's own cost is the customer's; ours ends when it is called."""


class BatchClock(FixedClock):
    """The engine's simulated clock. Inside a batch each record's thread keeps its own time from the
    instant SQS showed its message, as each record runs in its own thread in AWS: the records' calls
    and waits overlap instead of adding up."""

    def __init__(self, now_ms: int) -> None:
        super().__init__(now_ms)
        self._own = threading.local()

    def now_ms(self) -> int:
        own: int | None = getattr(self._own, "ms", None)
        return super().now_ms() if own is None else own

    def advance(self, seconds: float) -> None:
        if getattr(self._own, "ms", None) is None:
            super().advance(seconds)
        else:
            self._own.ms += round(seconds * 1000)

    @contextlib.contextmanager
    def own_time(self, start_ms: int) -> Iterator[None]:
        self._own.ms = start_ms
        try:
            yield
        finally:
            self._own.ms = None


class CostEngine:
    """Store, dispatch, tick, worker and API service on one table, their calls metered."""

    def __init__(self, aws: Aws, start_ms: int, config: Config = DEFAULT) -> None:
        region = use_emulator()
        endpoint = aws.emulator.endpoint_url
        resources = aws.resources
        dynamodb, sqs = client("dynamodb", endpoint, region), client("sqs", endpoint, region)
        self.meter = Meter(dynamodb, sqs, aws.dynamodb, resources.table_name)
        sqs.meta.events.register("provide-client-params.sqs.SendMessageBatch", self._note_visibility)
        for metered in (dynamodb, sqs):
            metered.meta.events.register(
                f"after-call.{metered.meta.service_model.service_id.hyphenize()}", self._took
            )
        self._clock_lock = threading.Lock()
        self.clock = BatchClock(start_ms)
        store = JobStore(dynamodb, resources.table_name, self.clock)
        self.store = store  # metered, as every part of the engine
        self.config = config
        dispatcher = Dispatcher(
            sqs,
            resources.queue_urls,
            resources.dead_letter_queue_url,
            self.clock,
            precision=config.precision,
        )
        self.scheduler = Scheduler(EngineContext(store, dispatcher, self.clock))
        # The deployed worker's sends: shared by the records of a batch (sundial/functions/clients.py).
        worker_sends = (
            SharedSends(
                sqs,
                resources.queue_urls,
                resources.dead_letter_queue_url,
                self.clock,
                precision=config.precision,
                window_seconds=SHARED_SEND_WINDOW_SECONDS,
            )
            if config.batch_size > 1
            else dispatcher
        )
        self.worker = Worker(
            EngineContext(store, worker_sends, self.clock),
            _no_target,
            "bench",
            sleep=self._wait,
            heartbeat_seconds=3600,
            history=config.history,
        )
        self.service = JobService(store, dispatcher, self.clock, allow_private_targets=True)
        self.reader = JobStore(aws.dynamodb, resources.table_name, self.clock)  # unmetered
        self._sqs = aws.sqs
        self._queue_urls = list(resources.queue_urls.values())
        self._visible_at: dict[str, int] = {}
        self._backlog: list[tuple[int, str, str]] = []
        self.invocations: Counter[str] = Counter()
        self.waited_seconds = 0.0
        self.worker_seconds = 0.0  # billed: the longest attempt of each batch
        self.billed_wait_seconds = 0.0
        self._waits = threading.local()  # each record's own wait
        self.lateness_ms: list[int] = []
        self.executions = 0
        self.outcomes: Counter[str] = Counter()
        self.api_threads = 1  # the API's calls that overlap: one create, or a batch's writers

    def create(self, body: dict[str, Any]) -> str:
        with self.meter.acting_as("api"):
            view, _ = self.service.create(JobCreate.model_validate(body))
        self.invocations["api"] += 1
        return view.id

    def create_batch(self, bodies: list[dict[str, Any]]) -> list[str]:
        """One POST /jobs/batch: its items are written side by side, so the invocation bills its
        calls over the batch's writers."""
        with self.meter.acting_as("api"):
            answer = create_batch(self.service, bodies)
        self.invocations["api"] += 1
        self.api_threads = BATCH_WRITERS
        refused = [result.error for result in answer.results if result.job is None]
        if refused:
            raise RuntimeError(f"the batch refused {len(refused)} items: {refused[0]}")
        return [result.job.id for result in answer.results if result.job is not None]

    def tick(self) -> None:
        with self.meter.acting_as("scheduler"):
            self.scheduler.tick()
        self.invocations["scheduler"] += 1

    def simulate(self, from_ms: int, to_ms: int) -> None:
        """Ticks on every minute in [from_ms, to_ms] and delivers each message when it is visible."""
        boundary = -(-from_ms // MINUTE_MS) * MINUTE_MS
        while boundary <= to_ms:
            self.deliver_until(boundary)
            self.clock.set(max(self.clock.now_ms(), boundary))
            self.tick()
            boundary += MINUTE_MS
        self.deliver_until(to_ms)

    def deliver_until(self, until_ms: int) -> None:
        while True:
            self._pull()
            if not self._backlog or self._backlog[0][0] > until_ms:
                return
            self._invoke(self._next_batch())

    def _next_batch(self) -> list[tuple[int, str]]:
        """The first visible message and those of its queue visible in the same second, up to the
        batch size: what one receive of the event source would return."""
        visible_at, _, body = heapq.heappop(self._backlog)
        queue = JobMessage.model_validate_json(body).priority
        batch, kept = [(visible_at, body)], []
        while self._backlog and self._backlog[0][0] // 1000 == visible_at // 1000:
            entry = heapq.heappop(self._backlog)
            if (
                len(batch) < self.config.batch_size
                and JobMessage.model_validate_json(entry[2]).priority == queue
            ):
                batch.append((entry[0], entry[2]))
            else:
                kept.append(entry)
        for entry in kept:
            heapq.heappush(self._backlog, entry)
        return batch

    def _invoke(self, batch: list[tuple[int, str]]) -> None:
        """One worker invocation: its records side by side, each from the instant SQS showed its
        message; it lasts as long as its longest record (plus the shared sends' window)."""
        started = batch[0][0]

        def record(entry: tuple[int, str]) -> tuple[AttemptResult, int, float]:
            visible_at, body = entry
            with self.clock.own_time(visible_at):
                self._waits.seconds = 0.0
                result = self.worker.process(JobMessage.model_validate_json(body))
                return result, self.clock.now_ms() - started, self._waits.seconds

        with self.meter.acting_as("worker"), ThreadPoolExecutor(len(batch)) as pool:
            done = list(pool.map(record, batch))
        longest = max(took for _, took, _ in done)
        longest_unwaited = max(took - waited * 1000 for _, took, waited in done)
        for result, _, _ in done:
            self.outcomes[result.outcome.value] += 1
            if result.outcome is Outcome.SUCCEEDED:
                self.executions += 1
                if result.lateness_ms is not None:
                    self.lateness_ms.append(result.lateness_ms)
        window = SHARED_SEND_WINDOW_SECONDS * 1000 if self.config.batch_size > 1 else 0.0
        self.invocations["worker"] += 1
        self.worker_seconds += (longest + window) / 1000
        # What the waits for the instant added to the invocation's billed time (they overlap).
        self.billed_wait_seconds += (longest - longest_unwaited) / 1000

    def _pull(self) -> None:
        for url in self._queue_urls:
            while batch := self._sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
                for message in batch:
                    self._sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                    body = message["Body"]
                    heapq.heappush(self._backlog, (self._visible_at.pop(body), message["MessageId"], body))

    def _note_visibility(self, params: dict[str, Any], **_: Any) -> None:
        """Records when SQS would show each message, then lets the emulator show it at once: the
        emulator's clock is not this engine's."""
        for entry in params.get("Entries", []):
            self._visible_at[entry["MessageBody"]] = self.clock.now_ms() + entry["DelaySeconds"] * 1000
            entry["DelaySeconds"] = 0

    def _took(self, **_: Any) -> None:
        """Every AWS call takes AWS_CALL_MS of the engine's time, so that a send made after a write
        sees the clock a real one would (and the worker's wait comes out as it would in AWS)."""
        with self._clock_lock:
            self.clock.advance(AWS_CALL_MS / 1000)

    def _wait(self, seconds: float) -> None:
        with self._clock_lock:
            self.waited_seconds += seconds
        self._waits.seconds += seconds
        self.clock.advance(seconds)


@dataclass(frozen=True)
class Scenario:
    name: str
    recurring: bool
    jobs: int
    body: Callable[[int, int], dict[str, Any]]  # (n, now_ms) -> the POST /jobs body
    run: Callable[[CostEngine, list[str]], None]
    # The limit of the key the jobs name, set before they are created: (max_concurrent, per_second).
    limit: tuple[int | None, float | None] | None = None
    # Jobs a POST /jobs/batch creates at once; 0: each its own POST /jobs.
    batch: int = 0


def _body(**fields: Any) -> dict[str, Any]:
    return {
        "name": "bench-cost",
        "target": {"type": "http", "url": "http://127.0.0.1:9/report"},
        "payload": {"report": "daily-sales", "region": "eu-west-1"},
        **fields,
    }


def _minutes(count: int) -> Callable[[CostEngine, list[str]], None]:
    def run(engine: CostEngine, _: list[str]) -> None:
        start = engine.clock.now_ms()
        engine.simulate(start, start + count * MINUTE_MS)

    return run


def _days(count: int) -> Callable[[CostEngine, list[str]], None]:
    def run(engine: CostEngine, job_ids: list[str]) -> None:
        for _ in range(count):
            due = min(engine.reader.get(job_id).due_at or 0 for job_id in job_ids)
            engine.simulate(due - 90_000, due + 30_000)

    return run


LIMITED_KIND = "recurring rate(1 minute) on a limit key, never held back"
BATCH_KIND = "one-off, created by POST /jobs/batch (100 a request), dispatched by its create"
BATCH_SIZE = 100
LIMIT_KEY = "bench-limit"
# Write requests a limited execution may add to an unlimited one (docs/design.md, "Limits per key").
GOAL_LIMIT_EXTRA_WRITES = 2.0

SCENARIOS = (
    Scenario(
        "one-off, dispatched by its create",
        False,
        20,
        lambda n, now: _body(run_at=format_rfc3339(now + 30_000 + n * 537)),
        _minutes(2),
    ),
    Scenario(
        BATCH_KIND,
        False,
        100,
        lambda n, now: _body(run_at=format_rfc3339(now + 30_000 + n * 537)),
        _minutes(2),
        batch=BATCH_SIZE,
    ),
    Scenario(
        "one-off, sent by a tick",
        False,
        20,
        lambda n, now: _body(run_at=format_rfc3339(now + 10 * MINUTE_MS + n * 1_717)),
        _minutes(12),
    ),
    Scenario(
        "recurring rate(1 minute), dispatched by its completion",
        True,
        20,  # two full batches a second, as at a peak
        # Anchored on one whole second, as the executions of a steady peak fill each second: jobs
        # created one after another would straddle a second and split a batch.
        lambda n, now: _body(schedule="rate(1 minute)", start_at=format_rfc3339(now - now % 1000 + 5_000)),
        _minutes(6),
    ),
    Scenario(
        "recurring rate(2 minutes), dispatched by its completion",
        True,
        20,
        # Its next occurrence lies past the tick's horizon but before the ahead rows: the completion
        # dispatches it all the same, and no tick claims it.
        lambda n, now: _body(schedule="rate(2 minutes)", start_at=format_rfc3339(now - now % 1000 + 5_000)),
        _minutes(12),
    ),
    Scenario(
        LIMITED_KIND,
        True,
        20,
        # As the plain rate(1 minute) row, on a key whose limit is never reached: the price of the
        # slot and the token alone, not of a wait.
        lambda n, now: _body(
            schedule="rate(1 minute)", start_at=format_rfc3339(now - now % 1000 + 5_000), limit_key=LIMIT_KEY
        ),
        _minutes(6),
        limit=(1000, 1000.0),
    ),
    Scenario(
        "recurring daily, sent by a tick",
        True,
        20,
        lambda n, now: _body(schedule="cron(0 9 * * ? *)"),
        _days(3),
    ),
)


@dataclass(frozen=True)
class FixedTick:
    bill: m.Bill
    calls: int
    operations: Counter[str]
    causes: Counter[str]
    read_causes: Counter[str]


def empty_tick(aws: Aws, start_ms: int) -> FixedTick:
    engine = CostEngine(aws, start_ms)
    engine.tick()
    meter = engine.meter
    return FixedTick(
        meter.bill("scheduler"),
        meter.call_count("scheduler"),
        meter.calls["scheduler"],
        meter.units_by_cause.get("scheduler", Counter()),
        meter.read_units_by_cause.get("scheduler", Counter()),
    )


def per_execution(engine: CostEngine, scenario: Scenario, fixed: FixedTick) -> tuple[m.Bill, dict[str, Any]]:
    """One execution's bill: its own calls, plus its share of the minute's fixed tick."""
    meter, runs = engine.meter, max(1, engine.executions)
    functions = ["scheduler", "worker"] if scenario.recurring else ["api", "scheduler", "worker"]
    total = m.Bill()
    for function in functions:
        bill = meter.bill(function).plus(m.Bill())
        calls = meter.call_count(function)
        invocations = engine.invocations[function]
        busy_seconds = calls * AWS_CALL_MS / 1000
        if function == "scheduler":
            # The ticks' fixed part is added below at the brief's scale, not at this run's.
            bill = bill.plus(fixed.bill.scaled(-invocations))
            busy_seconds = (calls - fixed.calls * invocations) * AWS_CALL_MS / 1000 / TICK_THREADS
            invocations = 0
        if function == "worker":
            bill.sqs_requests += ESM_REQUESTS_PER_BATCH * invocations
            busy_seconds = engine.worker_seconds
        if function == "api":
            bill.api_requests += invocations
            busy_seconds /= engine.api_threads
        bill.add_lambda(function, invocations, MEMORY_GB[function] * busy_seconds)
        total = total.plus(bill)
    share = 1 / EXECUTIONS_PER_MINUTE
    tick_seconds = fixed.calls * AWS_CALL_MS / 1000 / TICK_THREADS
    fixed_share = fixed.bill.scaled(share)
    fixed_share.add_lambda("scheduler", share, MEMORY_GB["scheduler"] * tick_seconds * share)
    each = total.scaled(1 / runs).plus(fixed_share)
    calls = {function: _calls_per_execution(engine, function, fixed, runs) for function in functions}
    detail = {
        "config": engine.config.label,
        "executions": engine.executions,
        "worker_invocations": engine.invocations["worker"],
        "records_per_worker_invocation": round(
            engine.outcomes.total() / max(1, engine.invocations["worker"]), 2
        ),
        "outcomes": dict(engine.outcomes),
        "calls_per_execution": calls,
        "worker_wait_seconds_per_execution": round(engine.waited_seconds / runs, 3),
        "billed_worker_seconds_per_execution": round(engine.worker_seconds / runs, 4),
        "billed_worker_wait_seconds_per_execution": round(engine.billed_wait_seconds / runs, 4),
        "lateness_ms": _spread(engine.lateness_ms),
        "write_requests_per_execution": {
            function: round(meter.item_writes[function] / runs, 3) for function in functions
        },
        "write_units_by_cause": _units_by_cause(engine, functions, fixed, runs),
        "read_units_by_cause": _units_by_cause(engine, functions, fixed, runs, reads=True),
        "item_sizes_bytes": dict(meter.item_sizes),
    }
    return each, detail


def _units_by_cause(
    engine: CostEngine, functions: list[str], fixed: FixedTick, runs: int, reads: bool = False
) -> dict[str, dict[str, float]]:
    """Write (or read) units per execution by function and cause; the tick's fixed part at the
    brief's scale."""
    counted = engine.meter.read_units_by_cause if reads else engine.meter.units_by_cause
    fixed_causes = fixed.read_causes if reads else fixed.causes
    breakdown = {}
    for function in functions:
        causes = Counter(counted.get(function, Counter()))
        each = {cause: units / runs for cause, units in causes.items()}
        if function == "scheduler":
            for cause, units in fixed_causes.items():
                each[cause] = each.get(cause, 0.0) + units * (
                    1 / EXECUTIONS_PER_MINUTE - engine.invocations[function] / runs
                )
        breakdown[function] = {
            cause: round(units, 4) for cause, units in sorted(each.items()) if round(units, 4)
        }
    return breakdown


def _calls_per_execution(engine: CostEngine, function: str, fixed: FixedTick, runs: int) -> dict[str, float]:
    """Calls per execution; for the scheduler, without this run's fixed tick reads (priced at scale)."""
    counts = Counter(engine.meter.calls.get(function, Counter()))
    if function == "scheduler":
        counts.subtract({op: n * engine.invocations[function] for op, n in fixed.operations.items()})
    return {op: round(n / runs, 3) for op, n in sorted(counts.items()) if n}


@dataclass(frozen=True)
class Priced:
    """One scenario under one configuration: its bill per execution and what was measured."""

    scenario: Scenario
    config: Config
    each: m.Bill
    detail: dict[str, Any]

    @property
    def per_million(self) -> float:
        return self.each.total_dollars() * 1e6


def run_scenario(aws: Aws, scenario: Scenario, fixed: FixedTick, start_ms: int, config: Config) -> Priced:
    engine = CostEngine(aws, start_ms, config)
    if scenario.limit is not None:
        concurrent, rate = scenario.limit
        burst = max(1, int(rate)) if rate is not None else 1
        engine.reader.put_limit(LIMIT_KEY, concurrent, rate, burst, start_ms)  # unmetered: set once
    bodies = [scenario.body(n, start_ms) for n in range(scenario.jobs)]
    if scenario.batch:
        job_ids = [
            job_id
            for first in range(0, len(bodies), scenario.batch)
            for job_id in engine.create_batch(bodies[first : first + scenario.batch])
        ]
    else:
        job_ids = [engine.create(body) for body in bodies]
    scenario.run(engine, job_ids)
    each, detail = per_execution(engine, scenario, fixed)
    detail.update(
        dollars_per_million={name: round(value * 1e6, 3) for name, value in each.dollars().items()},
        lambda_dollars_per_million={
            function: round(
                (
                    each.lambda_requests[function] * m.PRICE_PER_LAMBDA_REQUEST
                    + each.gb_seconds.get(function, 0.0) * m.PRICE_PER_GB_SECOND
                )
                * 1e6,
                3,
            )
            for function in each.lambda_requests
        },
        units_per_execution={
            "write_units": round(each.write_units, 3),
            "read_units": round(each.read_units, 4),
            "sqs_requests": round(each.sqs_requests, 3),
            "lambda_invocations": {k: round(v, 5) for k, v in each.lambda_requests.items()},
            "lambda_gb_seconds": {k: round(v, 5) for k, v in each.gb_seconds.items()},
            "api_gateway_requests": each.api_requests,
        },
    )
    return Priced(scenario, config, each, detail)


def _goal(priced: Priced) -> float | None:
    """The price an execution kind is held to: with failure history, at second precision."""
    if priced.config != FAILURES:
        return None
    if priced.scenario.name == BATCH_KIND:
        return GOAL_BATCH_ONE_OFF_PER_MILLION
    if priced.scenario.name == PRECISION_KIND:
        return GOAL_ONE_OFF_PER_MILLION
    return GOAL_PER_MILLION if priced.scenario.recurring else None


def _price_row(name: str, value: float, goal: float | None, detail: dict[str, Any]) -> Row:
    return Row(
        name,
        round(value, 3),
        "$/million",
        f"<= ${goal:.2f}" if goal is not None else None,
        value <= goal if goal is not None else None,
        detail,
    )


def _row(priced: Priced) -> Row:
    """An execution kind's price on-demand, beside its goal."""
    name = f"cost: {priced.scenario.name} [{priced.config.label}]"
    return _price_row(name, priced.per_million, _goal(priced), priced.detail)


def http_api_row(priced: Priced) -> Row:
    """The same executions as `priced`, their API requests priced as an HTTP API's
    (`sundial:api=http`): its function gets the event it gets from the REST API and makes the same
    calls, so the price is the only difference and nothing is run again."""
    each = priced.each
    value = each.total_dollars(m.PRICE_PER_HTTP_API_REQUEST) * 1e6
    return _price_row(
        f"cost: {priced.scenario.name} [{priced.config.label}, sundial:api=http]",
        value,
        _goal(priced),
        {
            "executions": f"the same as 'cost: {priced.scenario.name} [{priced.config.label}]', priced "
            "with the HTTP API: $1.00 a million requests in place of the REST API's $3.50",
            "api_gateway_requests_per_execution": each.api_requests,
            "dollars_per_million": {
                name: round(dollars * 1e6, 3)
                for name, dollars in each.dollars(m.PRICE_PER_HTTP_API_REQUEST).items()
            },
            "saved_per_million_against_the_rest_api": round(priced.per_million - value, 3),
        },
    )


def write_requests_row(priced: Priced) -> Row:
    """DynamoDB write requests of one recurring execution, with failure history: the figure the next
    feature that adds a write moves."""
    requests = round(float(sum(priced.detail["write_requests_per_execution"].values())), 3)
    return Row(
        f"DynamoDB write requests per execution: {priced.scenario.name} [{priced.config.label}]",
        requests,
        "requests",
        f"<= {GOAL_WRITE_REQUESTS:g}",
        requests <= GOAL_WRITE_REQUESTS,
        {
            "write_requests_per_execution": priced.detail["write_requests_per_execution"],
            "write_units_by_cause": priced.detail["write_units_by_cause"],
        },
    )


def peak_rows(priced: Priced) -> list[Row]:
    """A steady EXECUTIONS_PER_MINUTE of this execution kind, on-demand and provisioned, per million
    and per month, beside EventBridge Scheduler invoking a Lambda target that writes its own history."""
    per_second = EXECUTIONS_PER_MINUTE / 60
    per_month = per_second * m.SECONDS_PER_MONTH
    each = priced.each
    on_demand = each.total_dollars()
    dynamodb_on_demand = each.dollars()["dynamodb"]
    provisioned_dynamodb = m.provisioned_dynamodb_per_execution(
        each.write_units, each.read_units, per_second, TARGET_UTILIZATION
    )
    provisioned = on_demand - dynamodb_on_demand + provisioned_dynamodb
    target = m.PRICE_PER_LAMBDA_REQUEST + TARGET_MEMORY_GB * TARGET_SECONDS * m.PRICE_PER_GB_SECOND
    scheduler = m.EVENTBRIDGE_SCHEDULER_PER_MILLION / 1e6
    history_on_demand = m.PRICE_PER_WRITE_UNIT
    history_provisioned = m.provisioned_dynamodb_per_execution(1, 0, per_second, TARGET_UTILIZATION)
    detail = {
        "executions_per_minute": EXECUTIONS_PER_MINUTE,
        "executions_per_month": round(per_month),
        "config": priced.config.label,
        "write_units_per_execution": round(each.write_units, 3),
        "read_units_per_execution": round(each.read_units, 4),
        "provisioned_wcu": round(each.write_units * per_second / TARGET_UTILIZATION),
        "provisioned_rcu": round(each.read_units * per_second / TARGET_UTILIZATION, 1),
        "target_utilization": TARGET_UTILIZATION,
    }
    name = (
        f"peak {EXECUTIONS_PER_MINUTE:,}/min of {priced.scenario.name.split(',')[0]} [{priced.config.label}]"
    )
    goal_applies = priced.config.history is c.History.FAILURES
    rows = [
        Row(
            f"{name}, on-demand",
            round(on_demand * 1e6, 3),
            "$/million",
            f"<= ${GOAL_PER_MILLION:.2f}" if goal_applies else None,
            on_demand * 1e6 <= GOAL_PER_MILLION if goal_applies else None,
            {**detail, "dollars_per_month": round(on_demand * per_month)},
        ),
        Row(
            f"{name}, provisioned",
            round(provisioned * 1e6, 3),
            "$/million",
            f"<= ${GOAL_PROVISIONED_PER_MILLION:.2f}" if goal_applies else None,
            provisioned * 1e6 <= GOAL_PROVISIONED_PER_MILLION if goal_applies else None,
            {**detail, "dollars_per_month": round(provisioned * per_month)},
        ),
    ]
    for mode, history in (("on-demand", history_on_demand), ("provisioned", history_provisioned)):
        compared = scheduler + target + history
        rows.append(
            Row(
                f"EventBridge Scheduler + Lambda target + 1 history write, {mode}",
                round(compared * 1e6, 3),
                "$/million",
                None,
                None,
                {
                    "dollars_per_month_at_peak": round(compared * per_month),
                    "scheduler": m.EVENTBRIDGE_SCHEDULER_PER_MILLION,
                    "lambda_target_per_million": round(target * 1e6, 3),
                    "target_memory_gb": TARGET_MEMORY_GB,
                    "target_seconds": TARGET_SECONDS,
                    "history_write_per_million": round(history * 1e6, 3),
                    # Sundial calling the same Lambda target pays the same target invocation on top.
                    "sundial_with_the_same_target_per_million": round(
                        ((on_demand if mode == "on-demand" else provisioned) + target) * 1e6, 3
                    ),
                },
            )
        )
    return rows


def limit_row(plain: Priced, limited: Priced) -> Row:
    """What a limit key costs an execution that it never holds back: write requests and dollars."""

    def writes(priced: Priced) -> float:
        return float(sum(priced.detail["write_requests_per_execution"].values()))

    # Rounded as printed: the means are floats, and 4.48 - 2.48 is a hair over 2 in binary.
    extra = round(writes(limited) - writes(plain), 3)
    return Row(
        "cost: a limited execution over an unlimited one (rate(1 minute), failures history)",
        extra,
        "write requests",
        f"<= {GOAL_LIMIT_EXTRA_WRITES:g}",
        extra <= GOAL_LIMIT_EXTRA_WRITES,
        {
            "write_requests_per_execution": {"unlimited": writes(plain), "limited": writes(limited)},
            "write_units_per_execution": {
                "unlimited": round(plain.each.write_units, 3),
                "limited": round(limited.each.write_units, 3),
            },
            "dollars_per_million": {
                "unlimited": round(plain.per_million, 3),
                "limited": round(limited.per_million, 3),
            },
        },
    )


def precision_rows(second: Priced, sqs: Priced) -> list[Row]:
    """Lateness and billed waiting per execution under each precision, for one execution kind."""
    rows = []
    for priced in (second, sqs):
        lateness = priced.detail["lateness_ms"]
        rows.append(
            Row(
                f"precision={priced.config.precision.value}: billed worker wait per execution "
                f"({priced.scenario.name})",
                priced.detail["billed_worker_wait_seconds_per_execution"],
                "s",
                None,
                None,
                {
                    "lateness_p50_ms": lateness["p50"],
                    "lateness_p99_ms": lateness["p99"],
                    "lateness_min_ms": lateness["min"],
                    "lateness_max_ms": lateness["max"],
                    "worker_wait_dollars_per_million": round(
                        priced.detail["billed_worker_wait_seconds_per_execution"]
                        * MEMORY_GB["worker"]
                        * m.PRICE_PER_GB_SECOND
                        * 1e6,
                        3,
                    ),
                },
                f"lateness p50 {lateness['p50']} ms / p99 {lateness['p99']} ms (simulated: SQS's delays "
                "exact, 10 ms a call)",
            )
        )
    return rows


# Which configurations each execution kind is priced under: before batches, the defaults, failure
# history, and the cheapest settings; recurring kinds under all of them.
FAILURES = Config(history=c.History.FAILURES)
PLAN: dict[str, tuple[Config, ...]] = {
    "one-off, dispatched by its create": (BEFORE, DEFAULT, FAILURES, CHEAPEST),
    BATCH_KIND: (FAILURES, CHEAPEST),
    "one-off, sent by a tick": (DEFAULT, CHEAPEST),
    "recurring rate(1 minute), dispatched by its completion": (BEFORE, DEFAULT, FAILURES, CHEAPEST),
    "recurring daily, sent by a tick": (BEFORE, DEFAULT, FAILURES, CHEAPEST),
    "recurring rate(2 minutes), dispatched by its completion": (FAILURES,),
    LIMITED_KIND: (FAILURES,),
}
PEAK_KIND = "recurring rate(1 minute), dispatched by its completion"
PRECISION_KIND = "one-off, dispatched by its create"


def measure(aws: Aws) -> tuple[list[Row], dict[str, Any]]:
    start_ms = (time.time_ns() // 1_000_000 // MINUTE_MS) * MINUTE_MS + 17_000
    fixed = empty_tick(aws.on_same_emulator("cost-empty-"), start_ms)
    priced: dict[tuple[str, Config], Priced] = {}
    for n, scenario in enumerate(SCENARIOS):
        for k, config in enumerate(PLAN[scenario.name]):
            emulated = aws.on_same_emulator(f"cost-{n}-{k}-")
            priced[(scenario.name, config)] = run_scenario(emulated, scenario, fixed, start_ms, config)
    rows = []
    for key, each in priced.items():
        rows.append(_row(each))
        if key == (PRECISION_KIND, FAILURES):
            rows.append(http_api_row(each))
    rows += peak_rows(priced[(PEAK_KIND, FAILURES)]) + peak_rows(priced[(PEAK_KIND, CHEAPEST)])[:2]
    rows += precision_rows(priced[(PRECISION_KIND, DEFAULT)], priced[(PRECISION_KIND, CHEAPEST)])
    rows.append(limit_row(priced[(PEAK_KIND, FAILURES)], priced[(LIMITED_KIND, FAILURES)]))
    rows.append(write_requests_row(priced[(PEAK_KIND, FAILURES)]))
    assumptions = {
        "region": "us-east-1, list prices",
        "prices": {
            "dynamodb_write_unit_on_demand": m.PRICE_PER_WRITE_UNIT,
            "dynamodb_read_unit_on_demand": m.PRICE_PER_READ_UNIT,
            "dynamodb_wcu_hour": m.PRICE_PER_WCU_HOUR,
            "dynamodb_rcu_hour": m.PRICE_PER_RCU_HOUR,
            "sqs_request": m.PRICE_PER_SQS_REQUEST,
            "lambda_request": m.PRICE_PER_LAMBDA_REQUEST,
            "lambda_gb_second_arm64": m.PRICE_PER_GB_SECOND,
            "api_gateway_request": m.PRICE_PER_API_REQUEST,
            "api_gateway_http_api_request": m.PRICE_PER_HTTP_API_REQUEST,
            "eventbridge_scheduler_invocation": m.EVENTBRIDGE_SCHEDULER_PER_MILLION / 1e6,
        },
        "units": "write and read units counted from the calls the engine made on the emulator, "
        "sized by DynamoDB's rules (bench/meter.py), index writes from real key changes",
        "lambda_memory_gb": MEMORY_GB,
        "aws_call_ms": AWS_CALL_MS,
        "scheduler_threads": TICK_THREADS,
        "executions_per_minute_sharing_a_tick": EXECUTIONS_PER_MINUTE,
        "esm_requests_per_batch": ESM_REQUESTS_PER_BATCH,
        "batches": "messages of one queue visible in the same second share an invocation (up to 10)",
        "provisioned_target_utilization": TARGET_UTILIZATION,
        "provisioned": "capacity held at the steady load over the target utilisation; the idle "
        "minimum (infra/capacity_settings.py) is not counted at the peak",
        "empty_tick": {"read_units": fixed.bill.read_units, "calls": fixed.calls},
        "transaction_index_writes": "counted twice, like the items (an upper bound)",
        "eventbridge_comparison": f"$1.00 per million invocations, a {TARGET_MEMORY_GB * 1000:.0f} MB "
        f"Lambda target of {TARGET_SECONDS * 1000:.0f} ms, one history write of one unit",
    }
    return rows, assumptions


def _spread(values: list[int]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "min": None, "max": None}
    return {
        "p50": percentile(values, 0.5),
        "p99": percentile(values, 0.99),
        "min": min(values),
        "max": max(values),
    }
