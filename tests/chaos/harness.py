"""A simulated fleet on the emulator: API, two overlapping schedulers, a pool of workers, faults.

Time is simulated (one clock, skewed per component) and SQS delays are replayed against it, so
minutes of scheduling run in seconds while every DynamoDB and SQS call is real, over HTTP.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

from local_stack.resources import Resources
from shared import constants as c
from shared.api.models import JobCreate
from shared.api.service import JobService
from shared.clock import FixedClock
from shared.dispatch import Dispatcher, JobMessage
from shared.engine.scheduler import Scheduler
from shared.engine.worker import AttemptResult, Outcome, Worker
from shared.models import Job, Run
from shared.store import DueRow, JobStore, items
from shared.targets import Delivery
from tests.chaos.faults import (
    Crash,
    Faults,
    SqsOutage,
    crash_on,
    inject_dynamodb_errors,
    partial_send_failures,
)

SECOND = 1000
REDELIVERY_MS = 300 * SECOND  # the visibility timeout, as far as the simulation is concerned


class SkewedClock:
    def __init__(self, base: FixedClock, offset_ms: int) -> None:
        self._base = base
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return self._base.now_ms() + self.offset_ms


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


@dataclass
class Ledger:
    """What the targets did, per occurrence: the side effects the checks count."""

    effects: Counter[tuple[str, str]] = field(default_factory=Counter)
    effects_by_job: Counter[str] = field(default_factory=Counter)
    crashes_after_effect: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Simulation:
    def __init__(self, endpoint_url: str, resources: Resources, seed: int, start_ms: int) -> None:
        self.base = FixedClock(start_ms)
        self.faults = Faults(seed)
        self.ledger = Ledger()
        self.resources = resources
        self._endpoint = endpoint_url
        self._visible: dict[str, int] = {}
        self._sent = threading.Event()
        self._heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()
        self._rng = random.Random(seed + 1)
        self._sched_outage: list[SqsOutage] = []
        self.api = self._api()
        self.schedulers = [
            self._scheduler(+30 * SECOND, stale=True),
            self._scheduler(-30 * SECOND, stale=False),
        ]
        self.worker_sqs = self._client("sqs")
        self.workers = [self._worker(i) for i in range(4)]
        self.pool = ThreadPoolExecutor(len(self.workers))

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

    def _api(self) -> JobService:
        clock = SkewedClock(self.base, 0)
        ddb, sqs = self._client("dynamodb"), self._client("sqs")
        inject_dynamodb_errors(ddb, self.faults, {"TransactWriteItems": 0.02, "UpdateItem": 0.02}, "api")
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
        partial_send_failures(sqs, self.faults, 0.05)
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
        return Scheduler(store, dispatcher, clock, parallelism=4)

    def _worker(self, index: int) -> Worker:
        clock = SkewedClock(self.base, 0)
        ddb, sqs = self._client("dynamodb"), self._client("sqs")
        inject_dynamodb_errors(ddb, self.faults, {"UpdateItem": 0.03, "GetItem": 0.01}, "worker")

        def crash_completion(params: dict[str, Any]) -> bool:
            finishing = "last_run" in params.get("ExpressionAttributeNames", {}).values()
            return finishing and self.faults.roll("worker crash during its completion write", 0.01)

        crash_on(ddb, "dynamodb.UpdateItem", crash_completion)
        store = JobStore(ddb, self.resources.table_name, clock)
        dispatcher = Dispatcher(sqs, self.resources.queue_urls, self.resources.dead_letter_queue_url, clock)
        return Worker(
            store, dispatcher, clock, self._target, f"w{index}", sleep=lambda _: None, heartbeat_seconds=0.05
        )

    # --- the job target -------------------------------------------------------------------------

    def _target(self, job: Job, delivery: Delivery, limit_seconds: float = 0.0) -> None:
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
        if self.faults.roll("worker paused past its lease (zombie)", 0.002):
            self.base.advance(c.LEASE_CHUNK_SECONDS + c.LEASE_MARGIN_SECONDS + 5)
            self._tick_quietly(self.schedulers[1])

    def _count_crash_after_effect(self) -> None:
        with self.ledger.lock:
            self.ledger.crashes_after_effect += 1

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

    def tick(self) -> None:
        outage = self.faults.roll("sqs unavailable for a tick", 0.1)
        for o in self._sched_outage:
            o.down = outage
        with ThreadPoolExecutor(2) as pool:  # two schedulers at once: overlapping ticks
            list(pool.map(self._tick_quietly, self.schedulers))
        for o in self._sched_outage:
            o.down = False

    def _tick_quietly(self, scheduler: Scheduler) -> None:
        try:
            scheduler.tick()
        except Crash:
            self.faults.note("scheduler crashed")

    def drain(self) -> None:
        """Moves what the queues hold into the simulation's own delay line."""
        self._sent.clear()
        self._collect()

    def step(self, seconds: float = 1.0) -> None:
        self.base.advance(seconds)
        if self._sent.is_set():
            self._sent.clear()
            self._collect()
        due = self._due_messages()
        results = list(self.pool.map(self._deliver, due))
        for result in results:
            if result is not None:
                self.ledger.outcomes[result.outcome.value] += 1

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
                    self._push(max(visible, min(due, visible + 3 * SECOND)), m["Body"])

    def _push(self, visible_ms: int, body: str) -> None:
        heapq.heappush(self._heap, (visible_ms, next(self._seq), body))

    def _due_messages(self) -> list[str]:
        due: list[str] = []
        while self._heap and self._heap[0][0] <= self.base.now_ms():
            body = heapq.heappop(self._heap)[2]
            due.append(body)
            if self.faults.roll("duplicate delivery, concurrent", 0.02):
                due.append(body)
            if self.faults.roll("duplicate delivery, after the first", 0.02):
                self._push(self.base.now_ms() + 30 * SECOND, body)
        return due

    def _deliver(self, body: str) -> AttemptResult | None:
        """One delivery to a random worker. A worker that dies, or learns it lost its lease, after
        the side effect leaves a re-execution behind: the ledger's allowance for re-runs."""
        message = JobMessage.model_validate_json(body)
        worker = self._rng.choice(self.workers)
        effects_before = self._effects_of(message.job_id)
        try:
            result = worker.process(message)
        except Crash:
            self.faults.note("worker crashed")
        except Exception:
            self.faults.note("worker failed on an AWS error")
        else:
            if result.outcome is Outcome.LEASE_LOST and self._effects_of(message.job_id) > effects_before:
                self.faults.note("zombie finished a side effect after its lease moved on")
                self._count_crash_after_effect()
            return result
        if self._effects_of(message.job_id) > effects_before:
            self._count_crash_after_effect()
        self._push(self.base.now_ms() + REDELIVERY_MS, body)
        return None

    def _effects_of(self, job_id: str) -> int:
        with self.ledger.lock:
            return self.ledger.effects_by_job[job_id]

    def all_runs(self) -> list[Run]:
        """Every history item, in one scan: the emulator answers a query by scanning anyway."""
        ddb = self._client("dynamodb")
        pages = ddb.get_paginator("scan").paginate(TableName=self.resources.table_name)
        return [
            items.item_to_run(item)
            for page in pages
            for item in page["Items"]
            if item[c.SORT_KEY]["S"].startswith(items.RUN_PREFIX)
        ]

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
