"""A simulated fleet on the emulator: API, two overlapping schedulers, a pool of workers, faults.

Time is simulated (one clock, skewed per component) and SQS delays are replayed against it, so
minutes of scheduling run in seconds while every DynamoDB and SQS call is real, over HTTP.

Besides the side effects, the simulation keeps what the checks of intent need: every user action
(when its call started and ended, and whether it was acknowledged) and every fence, ordered on one
counter, so "after an acknowledged cancel" means after, not at the same simulated millisecond.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from sundial.contract.jobs import JobCreate, JobUpdate
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from sundial.shared.clock import FixedClock
from sundial.shared.dispatch import Dispatcher, JobMessage, SharedSends
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.engine.tick_report import TickReport
from sundial.shared.engine.tick_sends import Due, Marks, Taken
from sundial.shared.engine.worker import AttemptResult, Outcome, Worker
from sundial.shared.errors import Conflict
from sundial.shared.models import Job, Run, RunSummary
from sundial.shared.service.service import JobService
from sundial.shared.store import DueRow, JobStore, items
from sundial.shared.targets import Delivery
from tests.chaos.faults import (
    Crash,
    Faults,
    HeartbeatThrottle,
    SqsOutage,
    crash_on,
    inject_dynamodb_errors,
    lose_answers,
    partial_send_failures,
    refuse_dead_letters,
)

SECOND = 1000
REDELIVERY_MS = 300 * SECOND  # the visibility timeout, as far as the simulation is concerned
# Every DynamoDB write of the API, the ticks and the workers may be applied with its answer lost.
# Transactions are rare (a DEAD write with its owed alert, a large payload's update): they lose
# theirs more often, or a run would hardly see one.
LOST_ANSWERS = {"UpdateItem": 0.02, "PutItem": 0.02, "DeleteItem": 0.02, "TransactWriteItems": 0.25}
# A late delivery arrives this long after its instant: past the queued lease (instant + 180 s), so
# the tick has resent it meanwhile and the two copies race for the fence.
LATE_MS = 200 * SECOND
LATE_P = 0.015
# A long job runs this long (simulated), so only its heartbeats keep its lease; their writes are
# throttled for a while first, long enough to exhaust botocore's retries several times over.
LONG_RUN_MS = 300 * SECOND
HEARTBEAT_THROTTLE_MS = 90 * SECOND
# While a long job runs, a simulated second lasts at least this long, so that its heartbeat thread
# (every 50 ms) sees the simulated clock move a few seconds at a time, as a real one would.
PACE_SECONDS = 0.02
ACTIONS = ("cancel", "pause", "resume", "trigger")
ACTION_WEIGHTS = (1, 4, 4, 1)  # a cancel ends a job's part in the race: fewer of those


@dataclass(frozen=True)
class Action:
    """One user action through JobService: its call's start and end on the simulation's order."""

    kind: str
    job_id: str
    where: str
    start: int
    end: int
    acknowledged: bool
    at_ms: int  # simulated time when the call started


@dataclass(frozen=True)
class Fence:
    """One attempt started: the fence's call started at `start` and was answered at `end`."""

    job_id: str
    scheduled_at: int
    attempt: int
    start: int
    end: int
    at_ms: int  # the fence's own clock


@dataclass
class Intents:
    """What users asked and when attempts started, on one counter shared by every thread."""

    actions: list[Action] = field(default_factory=list)
    fences: list[Fence] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _order: Any = field(default_factory=itertools.count)

    def now(self) -> int:
        with self.lock:
            return next(self._order)

    def add(self, entry: Action | Fence) -> None:
        with self.lock:
            (self.actions if isinstance(entry, Action) else self.fences).append(entry)  # type: ignore[arg-type]


@dataclass
class Snapshot:
    """The table at the end, in one scan: history, jobs, and the alerts still owed."""

    runs: list[Run]
    jobs: dict[str, Job]
    owed_alerts: list[tuple[str, RunSummary]]


class WorkerStore(JobStore):
    """A worker's store that writes down each fence it won and counts heartbeats that gave up."""

    def __init__(self, *args: Any, intents: Intents, faults: Faults, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._intents = intents
        self._faults = faults

    def fence(self, job_id: str, token: str, worker: str, now_ms: int, *more: Any, **named: Any) -> Job:
        start = self._intents.now()
        job = super().fence(job_id, token, worker, now_ms, *more, **named)
        fenced = Fence(job_id, job.scheduled_at or 0, job.attempt, start, self._intents.now(), now_ms)
        self._intents.add(fenced)
        return job

    def heartbeat(
        self, job_id: str, token: str, lease_until: int, now_ms: int, slot: str | None = None
    ) -> Job:
        try:
            return super().heartbeat(job_id, token, lease_until, now_ms, slot)
        except (ClientError, BotoCoreError):
            self._faults.note("heartbeat write failed after the SDK's retries (it tries again)")
            raise


class SkewedClock:
    def __init__(self, base: FixedClock, offset_ms: int) -> None:
        self._base = base
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return self._base.now_ms() + self.offset_ms


class WallClock:
    """The workers' clock: the simulated second, plus a millisecond for each reading within it (from
    1 up to 999), as real time moves while a worker works. With a frozen second, an attempt would
    settle on the very millisecond of its instant (and of the API's actions, which read the second
    itself), and a run triggered meanwhile would start then, sharing its instant and idempotency key
    with the one that just ran: two occurrences the ledger could not tell apart."""

    def __init__(self, base: FixedClock) -> None:
        self._base = base
        self._second = base.now_ms()
        self._readings = 0
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            now = self._base.now_ms()
            if now != self._second:
                self._second, self._readings = now, 0
            self._readings = min(self._readings + 1, 999)
            return now + self._readings


class StaleIndexStore(JobStore):
    """Returns, besides the index's rows, rows it read in earlier ticks: an index lagging behind."""

    def __init__(self, *args: Any, faults: Faults, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._faults = faults
        self._seen: dict[tuple[str, int], list[DueRow]] = {}

    def due_rows(self, priority: str, shard: int, up_to_ms: int) -> Any:
        rows = list(super().due_rows(priority, shard, up_to_ms))
        earlier = self._seen.get((priority, shard), [])
        stale = [row for row in earlier if row not in rows and self._faults.roll("stale index row", 0.3)]
        self._seen[(priority, shard)] = rows[:200]
        return rows + stale


class RecordingScheduler(Scheduler):
    """Keeps its tick's report where the harness can read it even when the tick crashed halfway, and
    confines an engine error (an exception the tick does not expect) to the row it came from: it is
    written down, and fails the ledger, while the rest of the tick goes on, so one bad row does not
    stall every later tick and bury what else the run would show."""

    report: TickReport | None = None
    errors: list[str]

    def _take(self, due: Due, marks: Marks, report: TickReport, deadline_ms: int | None) -> Taken | None:
        self.report = report
        try:
            return super()._take(due, marks, report, deadline_ms)
        except (AssertionError, ValueError, KeyError, TypeError, AttributeError) as exc:
            self.errors.append(
                f"{self._engine.clock.now_ms()}: job {due.row.job_id}: {type(exc).__name__}: {exc}"
            )
            return None


@dataclass
class Ledger:
    """What the targets did, per occurrence: the side effects the checks count."""

    effects: Counter[tuple[str, str]] = field(default_factory=Counter)
    effects_by_job: Counter[str] = field(default_factory=Counter)
    # Per job: deliveries whose side effect the job did not keep as a success (the worker crashed or
    # erred after it, its lease was lost, its call was recorded timed out), each the allowance for
    # one re-execution of that job.
    unkept_effects: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    ticks: Counter[str] = field(default_factory=Counter)  # the schedulers' TickReports, summed
    tick_errors: list[str] = field(default_factory=list)  # rows or ticks that raised: an engine bug
    dead_letters_sent: Counter[str] = field(default_factory=Counter)
    excused: set[str] = field(default_factory=set)  # jobs whose worker crashed or erred mid-delivery
    lease_lost: set[str] = field(default_factory=set)  # jobs with an attempt that learnt it lost its lease
    lock: threading.Lock = field(default_factory=threading.Lock)


class Simulation:
    def __init__(self, endpoint_url: str, resources: Resources, seed: int, start_ms: int) -> None:
        self.base = FixedClock(start_ms)
        self.wall = WallClock(self.base)
        self.faults = Faults(seed)
        self.ledger = Ledger()
        self.intents = Intents()
        self.actors: set[str] = set()  # jobs whose targets act on them through the API while running
        self.heartbeats = HeartbeatThrottle(self.faults, self.base.now_ms, HEARTBEAT_THROTTLE_MS)
        self.long_jobs = self.heartbeats.jobs
        self._background: list[Future[AttemptResult | None]] = []
        self.resources = resources
        self._endpoint = endpoint_url
        self._visible: dict[str, int] = {}
        self._sent = threading.Event()
        self._heap: list[tuple[int, int, str, bool]] = []
        self._seq = itertools.count()
        self._rng = random.Random(seed + 1)
        self._action_rng = random.Random(seed + 2)
        self._sched_outage: list[SqsOutage] = []
        self.api = self._api()
        self.schedulers = [
            self._scheduler(+30 * SECOND, stale=True),
            self._scheduler(-30 * SECOND, stale=False),
        ]
        self.worker_sqs = self._client("sqs")
        self.workers = [self._worker(i) for i in range(4)]
        self.pool = ThreadPoolExecutor(len(self.workers))
        self.long_pool = ThreadPoolExecutor(8)  # long jobs run while simulated time goes on

    # --- wiring -------------------------------------------------------------------------------

    def _client(self, service: str) -> Any:
        # Legacy mode retries DynamoDB after 50 ms, 100 ms, ...: the SDK's own answer to throttling,
        # without standard mode's up-to-a-second sleeps that would slow the simulation to a crawl.
        config = Config(retries={"mode": "legacy", "max_attempts": 3}, max_pool_connections=20)
        client = boto3.client(service, endpoint_url=self._endpoint, region_name="us-east-1", config=config)
        if service == "sqs":
            client.meta.events.register("provide-client-params.sqs.SendMessageBatch", self._record_send)
        return client

    def _record_send(self, params: dict[str, Any], **_: Any) -> None:
        self._sent.set()
        for entry in params.get("Entries", []):
            self._visible[entry["MessageBody"]] = self.base.now_ms() + entry.get("DelaySeconds", 0) * SECOND
            entry["DelaySeconds"] = 0  # the simulation replays the delay against its own clock

    def _count_dead_letters(self, sqs: Any, by: str) -> None:
        """Counts the dead letters a client got out (SendMessage is Sundial's dead-letter call)."""

        def sent(http_response: Any, **_: Any) -> None:
            if http_response.status_code < 300:
                with self.ledger.lock:
                    self.ledger.dead_letters_sent[by] += 1

        sqs.meta.events.register("after-call.sqs.SendMessage", sent)

    def _api(self) -> JobService:
        clock = SkewedClock(self.base, 0)
        ddb, sqs = self._client("dynamodb"), self._client("sqs")
        inject_dynamodb_errors(ddb, self.faults, {"TransactWriteItems": 0.02, "UpdateItem": 0.02}, "api")
        lose_answers(ddb, self.faults, LOST_ANSWERS, "api")
        crash_on(
            sqs,
            "sqs.SendMessageBatch",
            lambda _: self.faults.roll("api crash after create before send", 0.01),
        )
        store = JobStore(ddb, self.resources.table_name, clock)
        dispatcher = Dispatcher(sqs, self.resources.queue_urls, self.resources.dead_letter_queue_url, clock)
        return JobService(store, dispatcher, clock, allow_private_targets=True)

    def _scheduler(self, skew_ms: int, stale: bool) -> Scheduler:
        clock = SkewedClock(self.base, skew_ms)
        ddb, sqs = self._client("dynamodb"), self._client("sqs")
        inject_dynamodb_errors(ddb, self.faults, {"UpdateItem": 0.03, "Query": 0.01}, "scheduler")
        lose_answers(ddb, self.faults, LOST_ANSWERS, "scheduler")
        partial_send_failures(sqs, self.faults, 0.05)
        refuse_dead_letters(sqs, self.faults, self.resources.dead_letter_queue_url, 0.2, "scheduler")
        self._count_dead_letters(sqs, "by a tick")
        self._sched_outage.append(SqsOutage(sqs, self.faults))
        crash_on(
            sqs,
            "sqs.SendMessageBatch",
            lambda _: self.faults.roll("scheduler crash after claim before send", 0.02),
        )
        armed = threading.Event()

        def arm(**_: Any) -> None:
            if self.faults.roll("scheduler crash after send before next claim", 0.02):
                armed.set()

        def fire(params: dict[str, Any]) -> bool:
            if armed.is_set():
                armed.clear()
                return True
            return False

        sqs.meta.events.register("after-call.sqs.SendMessageBatch", arm)
        crash_on(ddb, "dynamodb.UpdateItem", fire)
        store_type = StaleIndexStore if stale else JobStore
        kwargs = {"faults": self.faults} if stale else {}
        store = store_type(ddb, self.resources.table_name, clock, **kwargs)
        dispatcher = Dispatcher(sqs, self.resources.queue_urls, self.resources.dead_letter_queue_url, clock)
        scheduler = RecordingScheduler(EngineContext(store, dispatcher, clock), parallelism=4)
        scheduler.errors = self.ledger.tick_errors
        return scheduler

    def _worker(self, index: int) -> Worker:
        clock = self.wall
        ddb, sqs = self._client("dynamodb"), self._client("sqs")
        self.heartbeats.attach(ddb)
        inject_dynamodb_errors(ddb, self.faults, {"UpdateItem": 0.03, "GetItem": 0.01}, "worker")
        lose_answers(ddb, self.faults, LOST_ANSWERS, "worker")
        dead_letters = self.resources.dead_letter_queue_url
        refuse_dead_letters(sqs, self.faults, dead_letters, 0.3, "worker")
        self._count_dead_letters(sqs, "by a worker")
        crash_on(
            sqs,
            "sqs.SendMessage",
            lambda params: (
                params.get("QueueUrl") == dead_letters
                and self.faults.roll("worker crash between its DEAD write and the dead letter", 0.1)
            ),
        )

        def crash_completion(params: dict[str, Any]) -> bool:
            finishing = "last_run" in params.get("ExpressionAttributeNames", {}).values()
            return finishing and self.faults.roll("worker crash during its completion write", 0.01)

        crash_on(ddb, "dynamodb.UpdateItem", crash_completion)
        store = WorkerStore(ddb, self.resources.table_name, clock, intents=self.intents, faults=self.faults)
        # As deployed: the records of a batch share their sends (sundial/functions/clients.py).
        dispatcher = SharedSends(sqs, self.resources.queue_urls, self.resources.dead_letter_queue_url, clock)
        engine = EngineContext(store, dispatcher, clock)
        return Worker(engine, self._target, f"w{index}", sleep=lambda _: None, heartbeat_seconds=0.05)

    # --- the job target -------------------------------------------------------------------------

    def _target(self, job: Job, delivery: Delivery, limit_seconds: float = 0.0) -> None:
        if job.id in self.long_jobs:
            self._long_target(job, delivery)
            return
        if job.id in self.actors and self.faults.draw(0.3):
            # The user acts on the job while this attempt runs.
            self.act(self.pick_action(), job.id, "during an attempt")
        if job.name == "poison":
            raise RuntimeError("poison job fails every attempt")
        if job.name == "slow" and delivery.attempt == 1:
            time.sleep(job.retry.timeout_seconds + 1.5)  # hangs past its timeout, then gives up
            self.faults.note("job exceeded its timeout")
            raise TimeoutError("gave up")
        if self.faults.roll("worker crash mid-job before the side effect", 0.01):
            raise Crash("mid-job")
        with self.ledger.lock:
            self.ledger.effects[(job.id, delivery.scheduled_at)] += 1
            self.ledger.effects_by_job[job.id] += 1
        if self.faults.roll("worker crash after the side effect", 0.01):
            raise Crash("after side effect")
        # A global jump would take the lease of a long job whose heartbeat is being tested: none then.
        if not self.long_in_flight() and self.faults.roll("worker paused past its lease (zombie)", 0.002):
            self.base.advance(c.LEASE_CHUNK_SECONDS + c.LEASE_MARGIN_SECONDS + 5)
            self._tick_quietly(self.schedulers[1])

    def _long_target(self, job: Job, delivery: Delivery) -> None:
        """Runs LONG_RUN_MS of simulated time while the simulation goes on; only the heartbeat (its
        first writes throttled) keeps the lease, so a heartbeat that died shows as a second run."""
        until = (job.started_at or self.base.now_ms()) + LONG_RUN_MS
        deadline = time.monotonic() + job.retry.timeout_seconds - 5  # never outlive the attempt's limit
        while self.base.now_ms() < until and time.monotonic() < deadline:
            time.sleep(0.005)
        with self.ledger.lock:
            self.ledger.effects[(job.id, delivery.scheduled_at)] += 1
            self.ledger.effects_by_job[job.id] += 1

    def pick_action(self) -> str:
        with self.ledger.lock:
            return self._action_rng.choices(ACTIONS, ACTION_WEIGHTS)[0]

    def long_in_flight(self) -> bool:
        return any(not f.done() for f in self._background)

    def _count_unkept_effect(self, job_id: str) -> None:
        with self.ledger.lock:
            self.ledger.unkept_effects[job_id] += 1

    # --- driving ------------------------------------------------------------------------------

    def create(self, body: dict[str, Any], key: str) -> str:
        """Creates a job as a careful client does: with an Idempotency-Key, retried after a crash
        or an error, so that a retry can never make a second job."""
        spec = JobCreate.model_validate(body)
        for _ in range(5):
            try:
                view, _created = self.api.create(spec, key)
                return view.id
            except Crash:
                self.faults.note("client retried create after a crash")
            except Exception:  # throttles and conflicts that outlived the SDK's retries
                self.faults.note("client retried create after an error")
        raise AssertionError("create never went through")

    def act(self, kind: str, job_id: str, where: str) -> bool:
        """One user action through JobService, as a client would: a 409 or an error is an answer
        too, but only a 2xx is an acknowledgement that the checks of intent hold the engine to."""
        self.faults.note(f"{kind} {where}")
        start, at_ms = self.intents.now(), self.base.now_ms()
        acknowledged = False
        try:
            if kind == "update":  # a payload too large for the job item: its own item, in a transaction
                self.api.update(job_id, JobUpdate(payload={"note": "x" * 2 * c.INLINE_PAYLOAD_BYTES}))
            else:
                getattr(self.api, kind)(job_id)
            acknowledged = True
        except Conflict:
            self.faults.note("user action refused (409)")
        except Crash:
            self.faults.note("api crashed during a user action")
        except Exception:  # throttles and conflicts that outlived the SDK's retries
            self.faults.note("user action failed on an AWS error")
        finally:
            self.intents.add(Action(kind, job_id, where, start, self.intents.now(), acknowledged, at_ms))
        return acknowledged

    def tick(self) -> None:
        outage = self.faults.roll("sqs unavailable for a tick", 0.1)
        for o in self._sched_outage:
            o.down = outage
        with ThreadPoolExecutor(2) as pool:  # two schedulers at once: overlapping ticks
            list(pool.map(self._tick_quietly, self.schedulers))
        for o in self._sched_outage:
            o.down = False

    def _tick_quietly(self, scheduler: Scheduler) -> None:
        assert isinstance(scheduler, RecordingScheduler)
        scheduler.report = None
        try:
            scheduler.tick()
        except Crash:
            self.faults.note("scheduler crashed")
        except Exception as exc:  # the engine's own failure: counted, and the ledger fails on it
            with self.ledger.lock:
                self.ledger.tick_errors.append(f"{self.base.now_ms()}: {type(exc).__name__}: {exc}")
        if scheduler.report is None:
            return
        # What the tick did up to its end, or up to its crash.
        counts = {name: getattr(scheduler.report, name) for name in TickReport.__dataclass_fields__}
        with self.ledger.lock:
            self.ledger.ticks.update(
                {k: v for k, v in counts.items() if type(v) is int and k != "oldest_lateness_ms"}
            )

    def drain(self) -> None:
        """Moves what the queues hold into the simulation's own delay line."""
        self._sent.clear()
        self._collect()

    def step(self, seconds: float = 1.0) -> None:
        started = time.perf_counter()
        self.base.advance(seconds)
        if self._sent.is_set():
            self._sent.clear()
            self._collect()
        due = self._due_messages()
        now: list[tuple[str, bool]] = []
        for message in due:
            if JobMessage.model_validate_json(message[0]).job_id in self.long_jobs:
                self._background.append(self.long_pool.submit(self._deliver, message, self._pick_worker()))
            else:
                now.append(message)
        # As the event source hands them over: batches of up to ten, each to one worker.
        size = c.WORKER_BATCH_SIZE
        batches = [now[start : start + size] for start in range(0, len(now), size)]
        results = [result for batch in self.pool.map(self._deliver_batch, batches) for result in batch]
        finished = [f for f in self._background if f.done()]
        self._background = [f for f in self._background if f not in finished]
        for result in results + [f.result() for f in finished]:
            if result is not None:
                self.ledger.outcomes[result.outcome.value] += 1
        if self._background:
            time.sleep(max(0.0, PACE_SECONDS - (time.perf_counter() - started)))

    def _collect(self) -> None:
        for url in self.resources.queue_urls.values():
            while batch := self.worker_sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get(
                "Messages"
            ):
                self.worker_sqs.delete_message_batch(
                    QueueUrl=url,
                    Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
                    ],
                )
                for m in batch:
                    # The worker waits out an early arrival (invariant 6); the simulation holds the
                    # message until then instead, since a worker thread cannot move simulated time.
                    visible = self._visible.get(m["Body"], self.base.now_ms())
                    due = JobMessage.model_validate_json(m["Body"]).due_at
                    if self.faults.roll("delivery held back past its lease (late)", LATE_P):
                        self._push(due + LATE_MS, m["Body"], late=True)
                    else:
                        self._push(max(visible, min(due, visible + 3 * SECOND)), m["Body"])

    def _push(self, visible_ms: int, body: str, late: bool = False) -> None:
        heapq.heappush(self._heap, (visible_ms, next(self._seq), body, late))

    def _due_messages(self) -> list[tuple[str, bool]]:
        due: list[tuple[str, bool]] = []
        while self._heap and self._heap[0][0] <= self.base.now_ms():
            _, _, body, late = heapq.heappop(self._heap)
            due.append((body, late))
            if self.faults.roll("duplicate delivery, concurrent", 0.02):
                due.append((body, False))
            if self.faults.roll("duplicate delivery, after the first", 0.02):
                self._push(self.base.now_ms() + 30 * SECOND, body)
        return due

    def _deliver_batch(self, batch: list[tuple[str, bool]]) -> list[AttemptResult | None]:
        """One batch to a random worker, its records side by side as sundial/functions/worker.py runs them.
        An invocation that ends before its deletes (a crash or timeout after its records) leaves
        every record of it, finished or not, to come back after the visibility timeout."""
        worker = self._pick_worker()
        with ThreadPoolExecutor(len(batch)) as records:
            results = list(records.map(lambda delivery: self._deliver(delivery, worker), batch))
        if self.faults.roll("worker invocation ended before deleting its batch", 0.01):
            for (body, _), result in zip(batch, results, strict=True):
                if result is not None:  # a failed record was put back already
                    self._push(self.base.now_ms() + REDELIVERY_MS, body)
        return results

    def _pick_worker(self) -> Worker:
        with self.ledger.lock:
            return self._rng.choice(self.workers)

    def _deliver(self, delivery: tuple[str, bool], worker: Worker) -> AttemptResult | None:
        """One record of a batch. A worker that dies, or learns it lost its lease, after the side
        effect leaves a re-execution behind: the ledger's allowance for re-runs."""
        body, late = delivery
        message = JobMessage.model_validate_json(body)
        effects_before = self._effects_of(message.job_id)
        try:
            result = worker.process(message)
        except Crash:
            self.faults.note("worker crashed")
        except Exception:
            self.faults.note("worker failed on an AWS error")
        else:
            if late:
                ran = result.outcome is not Outcome.DROPPED
                self.faults.note(f"late delivery {'started its attempt' if ran else 'dropped at its fence'}")
            effect = self._effects_of(message.job_id) > effects_before
            if result.outcome is Outcome.LEASE_LOST:
                with self.ledger.lock:
                    self.ledger.lease_lost.add(message.job_id)
                if effect:
                    self.faults.note("zombie finished a side effect after its lease moved on")
                    self._count_unkept_effect(message.job_id)
            elif effect and result.outcome in (Outcome.FAILED, Outcome.DEAD):
                # A call that ended past its limit (a thread starved on a loaded machine) is recorded
                # timed out whatever it did: its retry makes the side effect again.
                self.faults.note("attempt recorded timed out after its side effect")
                self._count_unkept_effect(message.job_id)
            return result
        with self.ledger.lock:
            self.ledger.excused.add(message.job_id)
        if self._effects_of(message.job_id) > effects_before:
            self._count_unkept_effect(message.job_id)
        self._push(self.base.now_ms() + REDELIVERY_MS, body)
        return None

    def _effects_of(self, job_id: str) -> int:
        with self.ledger.lock:
            return self.ledger.effects_by_job[job_id]

    def settled(self) -> bool:
        """True when the due index holds nothing (but rows the tick failed on): no job waits, none is
        in flight, no alert is owed."""
        store = self.api._store
        far = self.base.now_ms() + 10 * 365 * 86_400 * SECOND
        broken = {error.split("job ", 1)[-1].split(":", 1)[0] for error in self.ledger.tick_errors}
        return not any(
            row.job_id not in broken
            for priority in c.PRIORITIES
            for shard in range(c.DUE_SHARDS)
            for row in store.due_rows(priority, shard, far)
        )

    def snapshot(self) -> Snapshot:
        """Every job, history item and owed alert, in one scan: the emulator answers a query by
        scanning anyway."""
        ddb = self._client("dynamodb")
        pages = ddb.get_paginator("scan").paginate(TableName=self.resources.table_name)
        snapshot = Snapshot([], {}, [])
        for page in pages:
            for item in page["Items"]:
                sort_key = item[c.SORT_KEY]["S"]
                if sort_key.startswith(items.RUN_PREFIX):
                    snapshot.runs.append(items.item_to_run(item))
                elif sort_key == items.JOB_SK:
                    job = items.item_to_job(item)
                    snapshot.jobs[job.id] = job
                elif sort_key.startswith(items.ALERT_PREFIX):
                    job_id = item[c.PARTITION_KEY]["S"].removeprefix("JOB#")
                    snapshot.owed_alerts.append((job_id, items.item_to_alert(item)))
        return snapshot

    def dead_letters(self) -> list[dict[str, Any]]:
        sqs, url = self.worker_sqs, self.resources.dead_letter_queue_url
        letters: list[dict[str, Any]] = []
        while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
            letters += [json.loads(m["Body"]) for m in batch]
            sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)],
            )
        return letters

    def close(self) -> None:
        self.pool.shutdown()
        self.long_pool.shutdown()
