"""Every SQS send of Sundial: job messages to the priority queues, and dead jobs to the DLQ."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from sundial.shared import tracing
from sundial.shared.clock import Clock, format_rfc3339
from sundial.shared.limits import Booking
from sundial.shared.models import Job, RunSummary

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

SEND_ATTEMPTS = 3
# How long a worker's first send waits for the other records of its batch (SharedSends): they settle
# within milliseconds of each other in AWS; billed once per invocation, about $0.03 per million.
SHARED_SEND_WINDOW_SECONDS = 0.1
# A batch create's message that starts sooner than this goes at once rather than gathering
# (GatheredSends): the batch's writes may take a few seconds under throttling.
GATHER_FROM_MS = 5_000
ROUNDING_SLACK_MS = 50


class JobMessage(BaseModel):
    """One delivery of one attempt: the token fences it; due_at is the instant it must start."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str
    token: str
    due_at: int
    priority: Priority
    # The fence leaves the lease as it is when it covers this attempt's start (a lease for this limit).
    timeout_seconds: int = c.LEASE_CHUNK_SECONDS
    # The W3C trace of the call that scheduled it (sundial/shared/tracing.py); a message the tick builds from
    # an ahead row alone has none, and the worker takes the job's after its fence.
    traceparent: str | None = None
    # The job's limit key as the sender knew it (the fence checks it); a message the tick builds from
    # an ahead row knows none, and the fence tells it the job's.
    limit_key: str | None = None
    # A delivery its key held back (sundial/shared/engine/gate.py): when it was first held, when it
    # looks again, how often it was held, and how long the job's lease covers its wait.
    held_since: int | None = None
    not_before: int | None = None
    holds: int = 0
    held_lease_until: int | None = None
    # The shard it was held back on, whose line or queue of looks keeps its place: it looks there
    # again. Beyond that shard's line: the instant its queue of looks gave it.
    held_on: int | None = None
    looks_at: int | None = None
    # The token it booked when it was held back, for a start within the booking's window.
    booking: Booking | None = None

    @property
    def starts_after(self) -> int:
        """The instant the message is sent for: its due time, or the end of a hold."""
        return max(self.due_at, self.not_before or 0)

    @classmethod
    def for_job(cls, job: Job) -> JobMessage:
        """The message of a queued job as it is stored: one its key held back before (a message
        sent again after a restart) keeps the instant its wait began."""
        if job.token is None or job.due_at is None:
            raise ValueError(f"job '{job.id}' is not queued: no token or due time")
        placed = cls.placed(job, job.token, job.due_at)
        if job.limit_held_since is None:
            return placed
        return placed.model_copy(update={"held_since": job.limit_held_since})

    @classmethod
    def placed(cls, job: Job, token: str, due_at: int) -> JobMessage:
        """The message of a write that queued `job` under `token`, due at `due_at`: built from what
        the write wrote, not from a later read, which may already show a user's change after it (a
        message whose token is gone is dropped at its fence)."""
        return cls(
            job_id=job.id,
            token=token,
            due_at=due_at,
            priority=job.priority,
            timeout_seconds=job.retry.timeout_seconds,
            traceparent=job.traceparent,
            limit_key=job.limit_key,
        )


class AlertMessage(BaseModel):
    """A worker's errand that is not an attempt: send the owed route alert `alert` of a job
    (shared.engine.alerts.send_route). The tick sends it for an alert its writer did not send."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: Literal["alert"] = "alert"
    job_id: str
    alert: str  # the owed item's sort key
    priority: Priority


def delay_seconds(
    due_at_ms: int,
    now_ms: int,
    extra_lead_seconds: int = 0,
    precision: c.Precision = c.Precision.SECOND,
) -> int:
    """Whole seconds of SQS delay for a message due at `due_at_ms`, as `precision` rounds them.

    SECOND: visible up to a second (plus any extra lead) before due_at; the worker waits out the
    rest, so a job starts on its instant and never before it. A delay a hair short of a whole second
    (a recurring job dispatching its next occurrence right after its own instant) is rounded up
    instead: at most ROUNDING_SLACK_MS late, rather than a second of billed waiting.

    SQS: rounded up, so the message is visible on or after due_at and the worker has nothing to wait
    for; the job starts up to a second late. The extra lead still applies: it makes up for an
    emulator that hands messages over late, not for rounding.
    """
    if precision is c.Precision.SQS:
        seconds = -((now_ms - due_at_ms) // 1000) - extra_lead_seconds
    else:
        seconds = (due_at_ms - now_ms + ROUNDING_SLACK_MS) // 1000 - extra_lead_seconds
    return max(0, min(c.MAX_DELAY_SECONDS, seconds))


class Dispatcher:
    def __init__(
        self,
        sqs: SQSClient,
        queue_urls: dict[Priority, str],
        dead_letter_url: str,
        clock: Clock,
        extra_lead_seconds: int = 0,
        precision: c.Precision = c.Precision.SECOND,
    ) -> None:
        self._sqs = sqs
        self._queue_urls = queue_urls
        self._dead_letter_url = dead_letter_url
        self._clock = clock
        self._extra_lead_seconds = extra_lead_seconds
        self._precision = precision

    @property
    def own_queue_urls(self) -> frozenset[str]:
        """Sundial's own queues: no job's sqs target may send there."""
        return frozenset([*self._queue_urls.values(), self._dead_letter_url])

    def send(self, messages: Sequence[JobMessage]) -> list[JobMessage]:
        """Sends in batches of ten to each message's queue, retrying partial failures.

        Returns the messages that still failed: the caller releases their jobs to the next tick (see
        shared.engine.settle.send), so a failed send delays a job but never loses it.
        """
        failed: list[JobMessage] = []
        for start in range(0, len(messages), c.SEND_BATCH_SIZE):
            failed += self._send_batch(list(messages[start : start + c.SEND_BATCH_SIZE]))
        return failed

    def gathering(self) -> GatheredSends:
        """A dispatcher over the same queues for one batch of concurrent creates (GatheredSends)."""
        return GatheredSends(
            self._sqs,
            self._queue_urls,
            self._dead_letter_url,
            self._clock,
            self._extra_lead_seconds,
            self._precision,
        )

    def send_dead(self, job: Job, run: RunSummary) -> None:
        """Tells the dead-letter queue (and whoever watches its alarm) that an occurrence died."""
        body = {
            "job_id": job.id,
            "name": job.name,
            "scheduled_at": format_rfc3339(run.scheduled_at),
            "attempts": run.attempt,
            "error": run.error,
            "priority": job.priority.value,
        }
        self._sqs.send_message(QueueUrl=self._dead_letter_url, MessageBody=json.dumps(body))

    def send_alert_errand(self, message: AlertMessage) -> None:
        """Hands an owed route alert to a worker, through its job's priority queue."""
        self._sqs.send_message(
            QueueUrl=self._queue_urls[message.priority], MessageBody=message.model_dump_json()
        )

    def _send_batch(self, batch: list[JobMessage]) -> list[JobMessage]:
        pending = {str(i): message for i, message in enumerate(batch)}
        for _ in range(SEND_ATTEMPTS):
            by_queue: dict[str, list[tuple[str, JobMessage]]] = {}
            for entry_id, message in pending.items():
                by_queue.setdefault(self._queue_urls[message.priority], []).append((entry_id, message))
            failed_ids: set[str] = set()
            for url, entries in by_queue.items():
                failed_ids |= self._send_entries(url, entries)
            pending = {entry_id: pending[entry_id] for entry_id in failed_ids}
            if not pending:
                return []
        return list(pending.values())

    def _send_entries(self, url: str, entries: list[tuple[str, JobMessage]]) -> set[str]:
        now_ms = self._clock.now_ms()
        request: list[Any] = [
            {
                "Id": entry_id,
                "MessageBody": message.model_dump_json(),
                "DelaySeconds": delay_seconds(
                    message.starts_after, now_ms, self._extra_lead_seconds, self._precision
                ),
                **_trace_header(message),
            }
            for entry_id, message in entries
        ]
        try:
            response = self._sqs.send_message_batch(QueueUrl=url, Entries=request)
        except Exception:
            return {entry_id for entry_id, _ in entries}
        return {failure["Id"] for failure in response.get("Failed", [])}


def _trace_header(message: JobMessage) -> dict[str, Any]:
    """The message's trace as X-Ray reads it from SQS: the worker's invocation joins that trace."""
    trace = tracing.parse(message.traceparent)
    if trace is None:
        return {}
    sampled = int(trace.flags, 16) & 1
    header = f"Root={trace.xray_trace_id};Parent={trace.span_id};Sampled={sampled}"
    return {"MessageSystemAttributes": {"AWSTraceHeader": {"DataType": "String", "StringValue": header}}}


class GatheredSends(Dispatcher):
    """One batch create's dispatcher: the messages its writers send gather by queue and go ten to a
    SendMessageBatch rather than one request each (POST /jobs/batch, 100 jobs: 10 requests, not 100).

    A message gathers only when it starts GATHER_FROM_MS or more from now; it leaves when ten of its
    queue have gathered, when a later send finds it closer than that, or at `rest()`, which the batch
    takes once its writes are done and sends as Dispatcher does. Each message is sent after its job's
    write, as from Dispatcher. `send` returns the failed messages of what it sent, its own or others'
    (the caller releases each failed message's job, whoever wrote it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._gathered: dict[Priority, list[JobMessage]] = {}

    def send(self, messages: Sequence[JobMessage]) -> list[JobMessage]:
        now_ms = self._clock.now_ms()
        leaving: list[JobMessage] = []
        with self._lock:
            for message in messages:
                self._gathered.setdefault(message.priority, []).append(message)
            for priority, gathered in self._gathered.items():
                soon = [m for m in gathered if m.starts_after - now_ms < GATHER_FROM_MS]
                later = [m for m in gathered if m.starts_after - now_ms >= GATHER_FROM_MS]
                if len(later) >= c.SEND_BATCH_SIZE:
                    soon, later = soon + later[: c.SEND_BATCH_SIZE], later[c.SEND_BATCH_SIZE :]
                self._gathered[priority] = later
                leaving += soon
        return super().send(leaving) if leaving else []

    def rest(self) -> list[JobMessage]:
        """What has gathered and not left: the batch sends it once its writes are done."""
        with self._lock:
            rest = [m for gathered in self._gathered.values() for m in gathered]
            self._gathered = {}
        return rest


@dataclass
class _Waiting:
    messages: Sequence[JobMessage]
    failed: list[JobMessage] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


class SharedSends(Dispatcher):
    """A worker's dispatcher: sends that its concurrent attempts make within `window_seconds` of
    each other go out in one SendMessageBatch, up to ten messages, instead of one request each.

    A batch of recurring jobs settles at about the same time and each dispatches its next
    occurrence: one request instead of ten. Each caller still waits for its own messages and gets
    back those that failed, exactly as from Dispatcher.send, so it releases its own jobs as before;
    a message only leaves later by the window, after the write that queued it, never before.
    """

    def __init__(self, *args: Any, window_seconds: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._window_seconds = SHARED_SEND_WINDOW_SECONDS if window_seconds is None else window_seconds
        self._changed = threading.Condition()
        self._waiting: list[_Waiting] = []
        self._leader = False

    def send(self, messages: Sequence[JobMessage]) -> list[JobMessage]:
        if not messages:
            return []
        mine = _Waiting(messages)
        with self._changed:
            self._waiting.append(mine)
            lead = not self._leader
            self._leader = True
            self._changed.notify_all()
        if not lead:
            mine.done.wait()
            return mine.failed
        # The first caller waits out the window (or a full batch), then sends for everyone waiting.
        with self._changed:
            self._changed.wait_for(lambda: self._count() >= c.SEND_BATCH_SIZE, self._window_seconds)
            taken, self._waiting, self._leader = self._waiting, [], False
        failed: set[int] = set()
        try:
            failed = {id(message) for message in super().send([m for w in taken for m in w.messages])}
        except BaseException:
            failed = {id(m) for w in taken for m in w.messages}
            raise
        finally:
            for waiting in taken:
                waiting.failed = [m for m in waiting.messages if id(m) in failed]
                waiting.done.set()
        return mine.failed

    def _count(self) -> int:
        return sum(len(waiting.messages) for waiting in self._waiting)
