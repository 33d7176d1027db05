"""Cost per execution: an in-process engine on the emulator, its AWS calls metered by botocore hooks.

Time is a FixedClock moved from one event to the next (ticks on each minute, messages when they
become visible), so a day of a daily job takes a moment. Each SQS message is handed to the worker
at the instant SQS would make it visible (the send's own DelaySeconds), and the worker's wait for
its instant is measured, since a Lambda bills it.

Assumptions (also written to results.json):
- Lambda memory as infra/functions.py declares it; billed time is AWS_CALL_MS per AWS call (divided
  by the tick's threads for the scheduler) plus the worker's measured wait; the target's own time
  is not ours to count.
- The deployed worker reads through a Lambda event source mapping with batch size 1: one
  ReceiveMessage and one DeleteMessage per message (empty polls of idle queues are a fixed monthly
  cost, not counted per execution).
- A tick reads every shard each minute whatever is due: that fixed part (measured as an empty tick)
  is shared by EXECUTIONS_PER_MINUTE executions, the brief's peak.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench import cost_model as m
from bench.harness import Aws, Row, client
from bench.meter import Meter
from local_stack.environment import use_emulator
from shared.api.models import JobCreate
from shared.api.service import JobService
from shared.clock import FixedClock, format_rfc3339
from shared.dispatch import Dispatcher, JobMessage
from shared.engine.scheduler import Scheduler
from shared.engine.worker import Outcome, Worker
from shared.models import Job
from shared.store import JobStore
from shared.targets import Delivery

MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS
AWS_CALL_MS = 10.0
MEMORY_GB = {"api": 0.5, "scheduler": 1.0, "worker": 0.25}
TICK_THREADS = 8
EXECUTIONS_PER_MINUTE = 10_000
ESM_REQUESTS_PER_MESSAGE = 2  # ReceiveMessage + DeleteMessage
GOAL_PER_MILLION = 3.00


def _no_target(job: Job, delivery: Delivery, limit_seconds: float = 0.0) -> None:
    """The target's own cost is the customer's; ours ends when it is called."""


class CostEngine:
    """Store, dispatch, tick, worker and API service on one table, their calls metered."""

    def __init__(self, aws: Aws, start_ms: int) -> None:
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
        self.clock = FixedClock(start_ms)
        store = JobStore(dynamodb, resources.table_name, self.clock)
        dispatcher = Dispatcher(sqs, resources.queue_urls, resources.dead_letter_queue_url, self.clock)
        self.scheduler = Scheduler(store, dispatcher, self.clock)
        self.worker = Worker(
            store, dispatcher, self.clock, _no_target, "bench", sleep=self._wait, heartbeat_seconds=3600
        )
        self.service = JobService(store, dispatcher, self.clock, allow_private_targets=True)
        self.reader = JobStore(aws.dynamodb, resources.table_name, self.clock)  # unmetered
        self._sqs = aws.sqs
        self._queue_urls = list(resources.queue_urls.values())
        self._visible_at: dict[str, int] = {}
        self._backlog: list[tuple[int, str, str]] = []
        self.invocations: Counter[str] = Counter()
        self.waited_seconds = 0.0
        self.executions = 0
        self.outcomes: Counter[str] = Counter()

    def create(self, body: dict[str, Any]) -> str:
        with self.meter.acting_as("api"):
            view, _ = self.service.create(JobCreate.model_validate(body))
        self.invocations["api"] += 1
        return view.id

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
            visible_at, _, body = heapq.heappop(self._backlog)
            # Each message has a Lambda of its own: it starts when SQS shows it, even if the one
            # before it in this loop (running alongside it, in AWS) moved the clock past that.
            self.clock.set(visible_at)
            with self.meter.acting_as("worker"):
                result = self.worker.process(JobMessage.model_validate_json(body))
            self.invocations["worker"] += 1
            self.outcomes[result.outcome.value] += 1
            self.executions += result.outcome is Outcome.SUCCEEDED

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
        self.waited_seconds += seconds
        self.clock.advance(seconds)


@dataclass(frozen=True)
class Scenario:
    name: str
    recurring: bool
    jobs: int
    body: Callable[[int, int], dict[str, Any]]  # (n, now_ms) -> the POST /jobs body
    run: Callable[[CostEngine, list[str]], None]


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


SCENARIOS = (
    Scenario(
        "one-off, dispatched by its create",
        False,
        20,
        lambda n, now: _body(run_at=format_rfc3339(now + 30_000 + n * 537)),
        _minutes(2),
    ),
    Scenario(
        "one-off, claimed by a tick",
        False,
        20,
        lambda n, now: _body(run_at=format_rfc3339(now + 10 * MINUTE_MS + n * 1_717)),
        _minutes(12),
    ),
    Scenario(
        "recurring rate(1 minute), dispatched by its completion",
        True,
        10,
        lambda n, now: _body(schedule="rate(1 minute)"),
        _minutes(6),
    ),
    Scenario(
        "recurring daily, claimed by a tick",
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


def empty_tick(aws: Aws, start_ms: int) -> FixedTick:
    engine = CostEngine(aws, start_ms)
    engine.tick()
    meter = engine.meter
    return FixedTick(meter.bill("scheduler"), meter.call_count("scheduler"), meter.calls["scheduler"])


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
            bill.sqs_requests += ESM_REQUESTS_PER_MESSAGE * invocations
            busy_seconds += engine.waited_seconds
        if function == "api":
            bill.api_requests += invocations
        bill.add_lambda(function, invocations, MEMORY_GB[function] * busy_seconds)
        total = total.plus(bill)
    share = 1 / EXECUTIONS_PER_MINUTE
    tick_seconds = fixed.calls * AWS_CALL_MS / 1000 / TICK_THREADS
    fixed_share = fixed.bill.scaled(share)
    fixed_share.add_lambda("scheduler", share, MEMORY_GB["scheduler"] * tick_seconds * share)
    each = total.scaled(1 / runs).plus(fixed_share)
    calls = {function: _calls_per_execution(engine, function, fixed, runs) for function in functions}
    detail = {
        "executions": engine.executions,
        "outcomes": dict(engine.outcomes),
        "calls_per_execution": calls,
        "worker_wait_seconds_per_execution": round(engine.waited_seconds / runs, 3),
        # The part of the worker's GB-seconds spent waiting for the instant, priced on its own.
        "worker_wait_dollars_per_million": round(
            engine.waited_seconds / runs * MEMORY_GB["worker"] * m.PRICE_PER_GB_SECOND * 1e6, 3
        ),
        "item_sizes_bytes": dict(meter.item_sizes),
    }
    return each, detail


def _calls_per_execution(engine: CostEngine, function: str, fixed: FixedTick, runs: int) -> dict[str, float]:
    """Calls per execution; for the scheduler, without this run's fixed tick reads (priced at scale)."""
    counts = Counter(engine.meter.calls.get(function, Counter()))
    if function == "scheduler":
        counts.subtract({op: n * engine.invocations[function] for op, n in fixed.operations.items()})
    return {op: round(n / runs, 3) for op, n in sorted(counts.items()) if n}


def run_scenario(aws: Aws, scenario: Scenario, fixed: FixedTick, start_ms: int) -> Row:
    engine = CostEngine(aws, start_ms)
    job_ids = [engine.create(scenario.body(n, start_ms)) for n in range(scenario.jobs)]
    scenario.run(engine, job_ids)
    each, detail = per_execution(engine, scenario, fixed)
    dollars = {name: round(value * 1e6, 3) for name, value in each.dollars().items()}
    per_million = each.total_dollars() * 1e6
    detail.update(
        dollars_per_million=dollars,
        units_per_execution={
            "write_units": round(each.write_units, 3),
            "read_units": round(each.read_units, 4),
            "sqs_requests": round(each.sqs_requests, 3),
            "lambda_invocations": {k: round(v, 5) for k, v in each.lambda_requests.items()},
            "lambda_gb_seconds": {k: round(v, 5) for k, v in each.gb_seconds.items()},
            "api_gateway_requests": each.api_requests,
        },
        eventbridge_scheduler_per_million=m.EVENTBRIDGE_SCHEDULER_PER_MILLION,
    )
    goal = f"<= ${GOAL_PER_MILLION:.2f}" if scenario.recurring else None
    met = per_million <= GOAL_PER_MILLION if scenario.recurring else None
    return Row(f"cost: {scenario.name}", round(per_million, 2), "$/million", goal, met, detail)


def measure(aws: Aws) -> tuple[list[Row], dict[str, Any]]:
    start_ms = (time.time_ns() // 1_000_000 // MINUTE_MS) * MINUTE_MS + 17_000
    fixed = empty_tick(aws.on_same_emulator("cost-empty-"), start_ms)
    rows = [
        run_scenario(aws.on_same_emulator(f"cost-{n}-"), scenario, fixed, start_ms)
        for n, scenario in enumerate(SCENARIOS)
    ]
    assumptions = {
        "lambda_memory_gb": MEMORY_GB,
        "aws_call_ms": AWS_CALL_MS,
        "scheduler_threads": TICK_THREADS,
        "executions_per_minute_sharing_a_tick": EXECUTIONS_PER_MINUTE,
        "esm_requests_per_message": ESM_REQUESTS_PER_MESSAGE,
        "empty_tick": {"read_units": fixed.bill.read_units, "calls": fixed.calls},
        "transaction_index_writes": "counted twice, like the items (an upper bound)",
    }
    return rows, assumptions
