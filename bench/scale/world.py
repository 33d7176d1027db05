"""The simulated AWS account and Sundial's functions in it: real botocore clients whose requests are
answered by the models at their HTTP layer, the tick on its schedule, and the SQS event sources
invoking workers, all on one virtual clock.

Every function's invocations (ticks, claimers, the api's and the workers') draw on one pool, the
account's concurrent executions, and each function makes new execution environments no faster than
Lambda's function scaling rate; an invocation either finds room or is throttled, as Lambda throttles it
(bench/scale/ticks.py retries a throttled asynchronous event, an event source backs off, API Gateway
answers the api's caller)."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from moto.core.botocore_stubber import MockRawResponse

from bench.scale import limits
from bench.scale.direct import DirectClient
from bench.scale.dynamo import DynamoModel, Throughput
from bench.scale.runtime import Environment, GreenThread, Sim
from bench.scale.sampling import Sampler, sampled
from bench.scale.sqs import Queue, SqsModel, _clock_now
from bench.scale.ticks import SchedulerFunction, TickRecord
from sundial.contract.vocabulary import Priority
from sundial.local_stack.resources import table_definition
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.dispatch import JobMessage, SharedSends
from sundial.shared.engine.claimers import WORK_PER_INVOCATION
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.worker import Outcome, Worker
from sundial.shared.models import Job
from sundial.shared.store import DueShards, JobStore
from sundial.shared.targets import Delivery

REGION = "us-east-1"
# botocore skips its check of the parameters against the service model, which the functions' own
# tests run; with the CPU charged from the table, most calls also skip its HTTP layer
# (bench/scale/direct.py), and one in 50 takes it whole.
RETRIES = Config(retries={"mode": "standard"}, connect_timeout=5, read_timeout=30, parameter_validation=False)


class VirtualClock:
    def __init__(self, sim: Sim) -> None:
        self._sim = sim

    def now_ms(self) -> int:
        return self._sim.now_ms()


@dataclass
class Settings:
    due_shards: int = c.DUE_SHARDS
    max_concurrency: dict[str, int] = field(default_factory=lambda: {"high": 50, "medium": 20, "low": 5})
    # Provisioned mode for the high queue, as the stack offers it (sundial:provisionedPollersHigh):
    # its pollers, not max_concurrency["high"], bound the queue's concurrency.
    provisioned_pollers: bool = False
    min_pollers: int = int(limits.MIN_POLLERS.value)
    max_pollers: int = int(limits.MAX_POLLERS.value)
    # Provisioned pollers of the medium and low queues (minimum, maximum), by priority.
    other_pollers: dict[str, tuple[int, int]] = field(default_factory=dict)
    account_concurrency: int = int(limits.ACCOUNT_CONCURRENCY.value)
    # The scheduler's reserved concurrency (sundial:schedulerReservedConcurrency); 0: none.
    scheduler_reserved: int = 0
    # Standard queues' departures from exactly once and in order, and SendMessageBatch's failed
    # entries: shares of messages, off unless a scenario sets them (bench/scale/limits.py).
    sqs_duplicates: float = limits.DUPLICATE_RATE.value
    sqs_out_of_order: float = limits.OUT_OF_ORDER_RATE.value
    sqs_failed_entries: float = limits.FAILED_ENTRY_RATE.value
    warm_wcu: float = limits.TABLE_WARM_WCU.value
    warm_rcu: float = limits.TABLE_WARM_RCU.value
    index_warm_wcu: float = limits.INDEX_WARM_WCU.value  # each index's own warm throughput
    index_warm_rcu: float = limits.INDEX_WARM_RCU.value
    quota_wcu: float = limits.TABLE_QUOTA_WCU.value  # the per-table quota; more is a quota increase
    quota_rcu: float = limits.TABLE_QUOTA_RCU.value
    tick_memory_mb: int = int(limits.TICK_MEMORY_MB.value)
    worker_memory_mb: int = int(limits.WORKER_MEMORY_MB.value)
    scheduler_parallelism: int = 8
    scheduler_senders: int = 8
    # The work one tick invocation takes on before it hands shares to claimers (in ahead-row sends).
    tick_capacity: int = WORK_PER_INVOCATION
    # Which table decides the items (bench/scale/tables.py): the native one, moto, or both compared.
    table: str = "native"
    # What a stretch of the engine's code costs (bench/scale/cpu.py): the committed table's figure,
    # so a seed repeats, or this host's measurement, as the table is made.
    cpu: str = "table"

    def set(self, key: str, value: str) -> None:
        if key.startswith("max_concurrency."):
            self.max_concurrency[key.split(".", 1)[1]] = int(value)
        elif key == "provisioned_pollers":
            # "true" takes Lambda's default pollers; "MIN,MAX" as the stack's context gives them.
            if "," in value:
                low, high = (int(part) for part in value.split(","))
                self.provisioned_pollers, self.min_pollers, self.max_pollers = True, low, high
            else:
                self.provisioned_pollers = value.lower() in ("1", "true", "yes")
        elif key.startswith("provisioned_pollers."):
            # Another queue's, as sundial:provisionedPollersMedium/Low give them: "MIN,MAX".
            low, high = (int(part) for part in value.split(","))
            self.other_pollers[key.split(".", 1)[1]] = (low, high)
        elif hasattr(self, key):
            setattr(self, key, type(getattr(self, key))(value))
        else:
            raise ValueError(f"unknown setting {key!r}")


@dataclass
class CallRecord:
    job_id: str
    scheduled_at_ms: int
    attempt: int
    at_ms: int


class Aws:
    """The models behind botocore's `before-send`: requests built and answers parsed by botocore."""

    def __init__(self, sim: Sim, settings: Settings, seed: int = 7) -> None:
        self.sim = sim
        self.dynamodb = DynamoModel(
            c.TABLE_NAME,
            settings.warm_wcu,
            settings.warm_rcu,
            REGION,
            settings.table,
            index_warm=Throughput(settings.index_warm_wcu, settings.index_warm_rcu),
            quota=Throughput(settings.quota_wcu, settings.quota_rcu),
        )
        self.sqs = SqsModel(
            rng=random.Random(f"{seed}-sqs"),
            duplicates=settings.sqs_duplicates,
            out_of_order=settings.sqs_out_of_order,
            failed_entries=settings.sqs_failed_entries,
        )
        self.on_invoke: Callable[[str, bytes], tuple[int, dict[str, str], bytes]] = _no_function
        # Calls skip botocore's HTTP layer (bench/scale/direct.py) when what the host spends decides
        # nothing (the CPU is charged from the table) and the native table answers (moto reads the
        # HTTP request itself).
        self.direct = sim.cpu.table is not None and settings.table == "native"
        self.direct_clients: list[DirectClient] = []

    def client(self, service: str) -> Any:
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        client = session.client(service, config=RETRIES)  # type: ignore[call-overload]
        client.meta.events.register("before-send", self._answer)
        if not self.direct:
            return client
        direct = DirectClient(client, self._answer)
        self.direct_clients.append(direct)
        return direct

    def _answer(self, request: Any, event_name: str, **_: Any) -> AWSResponse:
        _, service, operation = event_name.split(".", 2)
        latency = limits.LATENCY_S.get((service, operation), limits.DEFAULT_LATENCY_S).value
        inside = self.sim.current() is not None
        if inside:
            self.sim.request(f"{service}.{operation}")
            self.sim.sleep(latency / 2)  # the request on its way; the CPU before it was the caller's
        now_s = self.sim.time()
        if service == "dynamodb":
            status, headers, body = self.dynamodb.answer(operation, request, now_s)
        elif service == "lambda":
            status, headers, body = self.on_invoke(operation, request.body)
        else:
            status, headers, body = self.sqs.answer(operation, request.body, now_s)
        if inside:
            self.sim.sleep(latency / 2, charge=False)  # the answer on its way back; answering is AWS's
        return AWSResponse(request.url, status, headers, MockRawResponse(body))


def _no_function(operation: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
    return 404, {}, b'{"__type": "ResourceNotFoundException", "message": "no such function"}'


class Target:
    """Every job's endpoint: records each call and answers after a while; a URL whose path starts
    with /fail answers 500, as the end-to-end tests' listener does."""

    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.calls: list[CallRecord] = []
        self.open = 0
        self.most_open = 0  # the most calls open at once: what a limit's max_concurrent bounds

    def __call__(self, job: Job, delivery: Delivery, limit_seconds: float) -> None:
        scheduled = job.scheduled_at if job.scheduled_at is not None else job.due_at or 0
        self.record(job.id, scheduled, job.attempt)
        try:
            self.sim.sleep(limits.TARGET_S.value)
        finally:
            self.hung_up()
        if fails(job):
            raise RuntimeError("the target answered 500")

    def record(self, job_id: str, scheduled_at_ms: int, attempt: int) -> None:
        """A call begins: the real worker's, or a stand-in's (bench/scale/standins.py)."""
        self.calls.append(CallRecord(job_id, scheduled_at_ms, attempt, self.sim.now_ms()))
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        task = self.sim.current()
        if task is not None and task.meter is not None:
            task.meter.called_at = self.sim.time()

    def hung_up(self) -> None:
        self.open -= 1


def fails(job: Job) -> bool:
    url = getattr(job.target, "url", "")
    return urlparse(url).path.startswith("/fail")


# The one switch a model mutation turns off: False lets every function run as many invocations as it
# is asked for, whatever the account's concurrency (the function scaling rate still applies).
ACCOUNT_CONCURRENCY_ENFORCED = True


class Account:
    """The account's concurrent executions in the region: one pool that every function draws on, less
    what functions reserve for themselves. A function with reserved concurrency runs up to its
    reservation, which no other function may use; the others share the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.reserved = 0
        self.running = 0
        self.unreserved_running = 0
        self.peak = 0

    def reserve(self, executions: int) -> None:
        """A function's reserved concurrency, refused as PutFunctionConcurrency refuses one that
        would leave the functions without a reservation fewer than 100 executions."""
        left = self.limit - self.reserved - executions
        if executions < 0 or left < limits.UNRESERVED_MIN.value:
            raise ValueError(
                f"reserving {executions} of {self.limit} concurrent executions ({self.reserved} reserved "
                f"already) leaves {left} unreserved, under the {limits.UNRESERVED_MIN.value:.0f} AWS requires"
            )
        self.reserved += executions

    def has_room(self, reserved: int | None, running: int) -> bool:
        """Room for one more invocation of a function that runs `running` and reserved `reserved`."""
        if reserved is not None:
            return running < reserved
        return not ACCOUNT_CONCURRENCY_ENFORCED or self.unreserved_running < self.limit - self.reserved

    def took(self, reserved: int | None, change: int) -> None:
        self.running += change
        if reserved is None:
            self.unreserved_running += change
        self.peak = max(self.peak, self.running)


class LambdaFunction:
    """One function's execution environments. An invocation takes a warm environment, or a new one
    while the function scaling rate allows (1,000 every 10 seconds, refilled continuously and never
    saved up), and is one of the account's concurrent executions until it ends; `start` answers None
    where Lambda throttles. A new environment's cold start is its module's import, charged at the
    function's memory's share of a vCPU."""

    def __init__(
        self,
        sim: Sim,
        account: Account,
        name: str,
        module: str,
        memory_mb: int,
        warm: int = 0,
        reserved: int | None = None,
    ) -> None:
        self.sim, self.account = sim, account
        self.reserved = reserved
        if reserved is not None:
            account.reserve(reserved)
        self.name, self.module, self.memory_mb = name, module, memory_mb
        self.warm = [Environment(memory_mb) for _ in range(warm)]
        self.running = 0
        self.peak = 0
        self.cold_starts = 0
        self.throttles = 0
        self._tokens = limits.SCALING_ENVIRONMENTS.value
        self._refilled_at = sim.now

    def cold_start_s(self) -> float:
        return limits.IMPORT_CPU_S[self.module].value / (limits.INIT_VCPUS.value / limits.CORE_PER_VCPU.value)

    def start(self) -> tuple[Environment, bool] | None:
        """An environment for an invocation and whether it is new, or None: throttled."""
        if not self.account.has_room(self.reserved, self.running):
            self.throttles += 1
            return None
        if self.warm:
            env, cold = self.warm.pop(), False
        else:
            self._refill()
            if self._tokens < 1:
                self.throttles += 1
                return None
            self._tokens -= 1
            env, cold = Environment(self.memory_mb), True
            self.cold_starts += 1
        self.running += 1
        self.account.took(self.reserved, 1)
        self.peak = max(self.peak, self.running)
        return env, cold

    def end(self, env: Environment) -> None:
        self.running -= 1
        self.account.took(self.reserved, -1)
        if not env.killed:  # a timed-out environment is not reused
            self.warm.append(env)

    def give_back(self, env: Environment, cold: bool) -> None:
        """An invocation started but never run (its poller received nothing): as if never asked."""
        self.running -= 1
        self.account.took(self.reserved, -1)
        if cold:
            self._tokens += 1
            self.cold_starts -= 1
        else:
            self.warm.append(env)

    def _refill(self) -> None:
        now = self.sim.time()
        per_second = limits.SCALING_ENVIRONMENTS.value / limits.SCALING_WINDOW_S.value
        self._tokens = min(
            limits.SCALING_ENVIRONMENTS.value, self._tokens + (now - self._refilled_at) * per_second
        )
        self._refilled_at = now


class World:
    def __init__(self, sim: Sim, settings: Settings, seed: int = 7) -> None:
        self.sim, self.settings = sim, settings
        self.seed = seed
        self.aws = Aws(sim, settings, seed)
        self.account = Account(settings.account_concurrency)
        self.functions = {
            "scheduler": LambdaFunction(
                sim,
                self.account,
                "sundial-scheduler",
                "sundial.functions.scheduler",
                settings.tick_memory_mb,
                warm=int(limits.WARM_SCHEDULER_ENVIRONMENTS.value),
                reserved=settings.scheduler_reserved or None,
            ),
            "worker": LambdaFunction(
                sim, self.account, "sundial-worker", "sundial.functions.worker", settings.worker_memory_mb
            ),
            "api": LambdaFunction(
                sim, self.account, "sundial-api", "sundial.functions.api", int(limits.API_MEMORY_MB.value)
            ),
        }
        self.clock = VirtualClock(sim)
        ddb, sqs = self.aws.client("dynamodb"), self.aws.client("sqs")
        ddb.create_table(**table_definition(c.TABLE_NAME))
        dead = self.aws.sqs.create(c.DEAD_LETTER_QUEUE_NAME)
        self.queues: dict[Priority, Queue] = {
            p: self.aws.sqs.create(name, dead) for p, name in c.QUEUE_NAMES.items()
        }
        urls = {p: q.url for p, q in self.queues.items()}
        self.dispatch_args = (sqs, urls, dead.url, self.clock)
        self.store = JobStore(ddb, c.TABLE_NAME, self.clock, DueShards(settings.due_shards, None))
        self.sqs_client = sqs
        self.target = Target(sim)
        self.event_sources: list[EventSource] = []
        self.scheduler_function = SchedulerFunction(self)
        self.aws.on_invoke = self.scheduler_function.invoked
        self.dropped_at_fence = 0  # copies (a killed tick's, a redelivery's) the fence refused
        self.held_back = 0  # deliveries a limit key held back (each sent again for later)
        self.jobs: dict[str, tuple[Priority, int | None]] = {}  # priority, and a one-off's instant
        self.allowed_calls: dict[str, int] = {}
        self.sampler: Sampler | None = None  # a sampled run's (bench/scale/sampling.py)

    # --- the tick ---------------------------------------------------------------------------------

    def start_ticks(self, first_s: float, until_s: float, extra: list[float] | None = None) -> None:
        self.scheduler_function.start(first_s, until_s, extra)

    @property
    def ticks(self) -> list[TickRecord]:
        return self.scheduler_function.records

    # --- the workers --------------------------------------------------------------------------------

    def start_pollers(self) -> None:
        for priority, queue in self.queues.items():
            source = EventSource(self, priority, queue)
            self.event_sources.append(source)
            self.sim.spawn(source.run)

    def invoke_worker(self, queue: Queue, batch: list[Any], env: Environment, cold: bool) -> None:
        if cold:
            self.sim.sleep(self.functions["worker"].cold_start_s(), charge=False)
        started = self.sim.time()
        deadline_ms = int((started + limits.WORKER_TIMEOUT_S.value) * 1000)
        worker = env.kept.get("worker")
        if worker is None:
            # One worker an environment, as sundial/functions/worker.py keeps one a process: what its
            # gate remembers (a key's shard count, that a key was limited) outlives the invocation.
            store = JobStore(
                self.store._client, c.TABLE_NAME, self.clock, DueShards(self.settings.due_shards, None)
            )
            engine = EngineContext(store, SharedSends(*self.dispatch_args), self.clock)
            worker = env.kept["worker"] = Worker(engine, self.target, "sim", sleep=self.sim.sleep)
        failed: list[Any] = []

        def one(message: Any) -> None:
            job_message = JobMessage.model_validate_json(message.body)
            if self.sampler is not None:
                sampled(self, worker, queue, message, job_message, deadline_ms, failed)
                return
            try:
                self.count(worker.process(job_message, deadline_ms).outcome)
            except Exception:
                failed.append(message)
                self.return_soon(queue, message, job_message)

        threads = [GreenThread(target=one, args=(m,)) for m in batch]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for message in batch:
            if message not in failed and message.receipt is not None:
                queue.delete(message.receipt)

    def count(self, outcome: Outcome) -> None:
        if outcome is Outcome.DROPPED:
            self.dropped_at_fence += 1
        elif outcome is Outcome.HELD:
            self.held_back += 1

    def return_soon(self, queue: Queue, message: Any, job_message: JobMessage) -> None:
        """As sundial/functions/worker.py's _return_soon: the failed record comes back after its lease."""
        until_due = math.ceil((job_message.due_at - self.clock.now_ms()) / 1000)
        seconds = until_due if until_due > 0 else lifecycle.lease_seconds(job_message.timeout_seconds)
        try:
            self.sqs_client.change_message_visibility(
                QueueUrl=queue.url,
                ReceiptHandle=message.receipt,
                VisibilityTimeout=min(seconds, c.QUEUE_VISIBILITY_TIMEOUT_SECONDS),
            )
        except Exception:  # the record waits out the queue's visibility timeout, as in AWS
            return


class EventSource:
    """An SQS event source mapping: receives batches of ten and invokes a worker with each, as many
    at once as its scaling allows. In the default mode: 5 when idle, growing by 300 a minute while a
    backlog waits, up to MaximumConcurrency (at most 1,250). In provisioned mode, which excludes
    MaximumConcurrency: its minimum pollers' invocations from the start (they are kept warm), growing
    by 1,000 a minute up to its maximum pollers'. Either way an invocation the function cannot start
    (the account's concurrency, the function scaling rate) is throttled, and the source backs off."""

    def __init__(self, world: World, priority: Priority, queue: Queue) -> None:
        self.world, self.queue = world, queue
        self.function = world.functions["worker"]
        settings = world.settings
        # sundial:provisionedPollersHigh, ...Medium, ...Low: each queue's own.
        pollers = (
            (settings.min_pollers, settings.max_pollers)
            if settings.provisioned_pollers and priority is Priority.HIGH
            else settings.other_pollers.get(priority.value)
        )
        self.provisioned = pollers is not None
        if pollers is not None:
            per_poller = limits.INVOKES_PER_POLLER.value
            self.floor = pollers[0] * per_poller
            self.maximum = pollers[1] * per_poller
            ramp = limits.ESM_PROVISIONED_RAMP_PER_MIN
        else:
            self.floor = limits.ESM_START.value
            self.maximum = min(settings.max_concurrency[priority.value], limits.ESM_MAX.value)
            ramp = limits.ESM_RAMP_PER_MIN
        self.ramp_per_s = ramp.value / 60
        self.allowed = float(min(self.floor, self.maximum))
        self.busy = 0
        self.peak = 0
        self.throttles = 0
        self._last = world.sim.now

    def run(self) -> None:
        sim = self.world.sim
        while True:
            now = sim.time()
            _clock_now[0] = max(_clock_now[0], now)
            self._scale(now)
            if self.busy < int(self.allowed) and self.queue.visible(now):
                started = self.function.start()
                if started is None:
                    self.throttles += 1
                    sim.sleep(limits.ESM_THROTTLE_BACKOFF_S.value)
                    continue
                batch = self.queue.receive(now, c.WORKER_BATCH_SIZE, c.QUEUE_VISIBILITY_TIMEOUT_SECONDS)
                if batch:
                    self._invoke(batch, *started)
                    continue
                self.function.give_back(*started)
            upcoming = self.queue.next_visible()
            wait = 1.0 if upcoming is None else max(0.001, min(1.0, upcoming - now))
            if self.busy >= int(self.allowed):
                wait = min(wait, 0.05)
            sim.sleep(wait)

    def _scale(self, now: float) -> None:
        backlog = self.queue.waiting and self.queue.waiting[0][0] <= now and self.busy >= int(self.allowed)
        if backlog:
            self.allowed = min(self.maximum, self.allowed + self.ramp_per_s * (now - self._last))
        elif self.busy == 0 and not self.queue.waiting:
            self.allowed = max(float(self.floor), min(self.allowed, self.maximum))
        self.allowed = min(self.allowed, self.maximum)
        self._last = now

    def _invoke(self, batch: list[Any], env: Environment, cold: bool) -> None:
        self.busy += 1
        self.peak = max(self.peak, self.busy)

        def invocation() -> None:
            try:
                self.world.sim.sleep(limits.PICKUP_S.value, charge=False)
                self.world.invoke_worker(self.queue, batch, env, cold)
            finally:
                self.busy -= 1
                self.function.end(env)

        self.world.sim.spawn(invocation, env=env)


def occurrences(calls: list[CallRecord]) -> dict[tuple[str, int], list[CallRecord]]:
    grouped: dict[tuple[str, int], list[CallRecord]] = defaultdict(list)
    for call in calls:
        grouped[(call.job_id, call.scheduled_at_ms)].append(call)
    return grouped
