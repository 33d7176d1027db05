"""An engine wired to the emulator: store, dispatch, scheduler and worker, with a clock tests move."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from sundial.contract.vocabulary import JobStatus, Priority
from sundial.local_stack.resources import Resources, ensure_header_key
from sundial.shared import constants as c
from sundial.shared.clock import FixedClock
from sundial.shared.dispatch import Dispatcher, JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.engine.worker import AttemptResult, Worker
from sundial.shared.lifecycle import Placement
from sundial.shared.models import Job
from sundial.shared.service.sealing import HeaderSealer
from sundial.shared.service.service import JobService
from sundial.shared.store import DueRow, JobStore
from sundial.shared.targets import Delivery


@contextlib.contextmanager
def placed_as_before_the_writers_reach() -> Iterator[None]:
    """Jobs placed as a version that dispatched only what fell due within the tick's horizon placed
    them: one due 75 to 135 s ahead gets a run row, which the tick claims (as it claims the rows such
    a version left behind)."""
    horizon_ms = c.DISPATCH_HORIZON_SECONDS * 1000

    def dispatches_now(placement: Placement, now_ms: int) -> bool:
        waiting = placement.status in (JobStatus.PENDING, JobStatus.FAILED)
        return waiting and placement.due_at is not None and placement.due_at <= now_ms + horizon_ms

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(Placement, "dispatches_now", dispatches_now)
        yield


@dataclass
class TargetLog:
    """What the job targets saw; `failures` makes the next N calls of a job fail; `during` runs once
    inside the next call of a job (a user acting while the attempt runs); `limits` keeps the time
    limit each call was given."""

    calls: list[Delivery] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    during: dict[str, Callable[[], Any]] = field(default_factory=dict)
    limits: list[float] = field(default_factory=list)

    def __call__(self, job: Job, delivery: Delivery, limit_seconds: float = 0.0) -> None:
        self.calls.append(delivery)
        self.limits.append(limit_seconds)
        if job.id in self.during:
            self.during.pop(job.id)()
        if self.failures.get(job.id, 0) > 0:
            self.failures[job.id] -= 1
            raise RuntimeError("target said no")

    def count(self, job_id: str) -> int:
        return sum(1 for call in self.calls if call.job_id == job_id)


@dataclass
class Engine:
    clock: FixedClock
    store: JobStore
    dispatcher: Dispatcher
    scheduler: Scheduler
    worker: Worker
    service: JobService
    targets: TargetLog
    resources: Resources
    sqs: Any
    sent: list[dict[str, Any]]

    @property
    def context(self) -> EngineContext:
        return EngineContext(self.store, self.dispatcher, self.clock)

    def receive(self, priority: Priority | None = None) -> list[JobMessage]:
        """Every message now visible on the priority queues (deleted as they are read)."""
        messages: list[JobMessage] = []
        for p in [priority] if priority else list(c.PRIORITIES):
            url = self.resources.queue_urls[p]
            while batch := self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
                for m in batch:
                    self.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
                    messages.append(JobMessage.model_validate_json(m["Body"]))
        return messages

    def run_all(self) -> list[AttemptResult]:
        """Feeds every visible message to the worker, as the local stack and Lambda would."""
        return [self.worker.process(message) for message in self.receive()]

    def index_rows(self) -> list[DueRow]:
        """Every row of the due index, whenever due."""
        far = self.clock.now_ms() + 10**11
        shards = range(c.DUE_SHARDS)
        return [row for p in c.PRIORITIES for n in shards for row in self.store.due_rows(p, n, far)]

    def dead_letters(self) -> list[str]:
        url = self.resources.dead_letter_queue_url
        out = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        return [m["Body"] for m in out]


@pytest.fixture(scope="session")
def header_sealer(aws: dict[str, Any]) -> HeaderSealer:
    """Seals as the API does, with a key of the emulator made as the local stack makes it."""
    kms = boto3.client("kms", **aws)
    return HeaderSealer(kms, ensure_header_key(kms))


@pytest.fixture
def engine(resources: Resources, dynamodb: Any, sqs: Any, header_sealer: HeaderSealer) -> Engine:
    clock = FixedClock(int(time.time() * 1000))
    store = JobStore(dynamodb, resources.table_name, clock)
    sent = record_sends(sqs, deliver_at_once=True)
    dispatcher = Dispatcher(sqs, resources.queue_urls, resources.dead_letter_queue_url, clock)
    targets = TargetLog()
    context = EngineContext(store, dispatcher, clock)
    worker = Worker(context, targets, "worker-1", sleep=clock.advance, heartbeat_seconds=3600)
    return Engine(
        clock=clock,
        store=store,
        dispatcher=dispatcher,
        scheduler=Scheduler(context),
        worker=worker,
        service=JobService(store, dispatcher, clock, allow_private_targets=True, sealer=header_sealer),
        targets=targets,
        resources=resources,
        sqs=sqs,
        sent=sent,
    )


def record_sends(sqs: Any, deliver_at_once: bool = False) -> list[dict[str, Any]]:
    """Records every SendMessageBatch entry the client makes (a botocore hook at the boundary).

    With deliver_at_once the delays are recorded and then dropped: the tests' clock is not the
    emulator's, so tests move their clock to the due instant instead of waiting for SQS.
    """
    sent: list[dict[str, Any]] = []

    def hook(params: dict[str, Any], **_: Any) -> None:
        sent.extend(dict(entry) for entry in params.get("Entries", []))
        if deliver_at_once:
            for entry in params.get("Entries", []):
                entry["DelaySeconds"] = 0

    sqs.meta.events.register("provide-client-params.sqs.SendMessageBatch", hook)
    return sent


def python_target(handler: str = "noop") -> dict[str, Any]:
    return {"type": "python", "handler": handler}


JobFactory = Callable[..., Any]
