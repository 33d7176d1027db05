"""A stand-in for the worker's commonest delivery: a one-off job's first attempt whose fence holds
and whose target answers 200, on time, a little early (the worker then waits for its instant) or
late enough that the job's lease no longer covers the attempt (the fence's condition on the lease
fails, and a second write fences with a fresh lease, moving the job's index row).
It costs the model a small share of what the real worker does, and lets a million deliveries run at
full size (bench/scale/sampling.py decides which deliveries take it; the others, and every delivery
of any other kind, run the real worker).

What it keeps, so that the run's figures stay those of the real worker:
- its CPU: each segment the real worker's tasks are charged for this path (the delivery's own task,
  its heartbeat's and its attempt's), at the committed table's figure for that kind of segment, on
  the same environment's CPU, in the same order between the same requests;
- its requests: the fence (its two writes when it renews the lease), the settle and the history
  item, each an UpdateItem or PutItem at the same latency, written to the model as the same item the
  engine would write, so that the table's, each index's and each partition's units, throttles and
  the due index move as they would;
- a throttled write: retried after the delay the client's own retry handler gives (botocore's
  standard mode, its retry quota shared with the real calls), then with the worker's patience
  (sundial/shared/engine/patience.py: its backoff, its deadline), then given up as the worker does:
  the delivery fails and SQS returns it;
- its Lambda concurrency and its SQS delete: it runs inside the worker's invocation, in the batch's
  place of the delivery it stands for, and the invocation deletes the message after it;
- the target's call, recorded as the real target records it (so every job's call is counted by the
  exactly-once checks) at the instant the real attempt would call it.

What it cannot prove: that the engine would have done the same. It writes what the sample's real
deliveries wrote for the same path (the sampler compares its items with theirs, write by write), it
takes a delivery only when the item shows the fence would hold (the status, the token, no limit
key) and when the job's target answers 200 - every copy, retry,
limit key, early or held delivery, recurring job and failing target runs the real worker - and a
fence that another copy won between its check and its write is refused as the store refuses it.
So a stand-in's call counts towards exactly once as the real worker's would, but the run's proof
that the engine's fence and settle keep exactly once comes from the deliveries that ran the engine.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from botocore.hooks import first_non_none_response

from bench.scale import limits
from bench.scale.runtime import GreenEvent
from sundial.contract.bounds import SETTLE_HEADROOM_SECONDS
from sundial.contract.vocabulary import JobStatus, RunStatus
from sundial.shared import constants as c
from sundial.shared import tracing
from sundial.shared.clock import format_rfc3339
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine import worker as engine_worker
from sundial.shared.engine.heartbeat import Heartbeat
from sundial.shared.engine.patience import FIRST_WAIT_SECONDS, LONGEST_WAIT_SECONDS
from sundial.shared.lifecycle import Event, running_lease, shortest_running_lease
from sundial.shared.models import Run, RunSummary
from sundial.shared.store import items
from sundial.shared.store.expressions import repeatable_write_id
from sundial.shared.store.transitions import FENCED_FROM, new_token

if TYPE_CHECKING:
    from bench.scale.world import World

Item = dict[str, Any]
SECOND_MS = 1000
FENCED = frozenset(status.value for status in FENCED_FROM)
HEARTBEAT = f"{Heartbeat._loop.__module__}.{Heartbeat._loop.__qualname__}"
ATTEMPT = (
    f"{engine_worker.Worker._attempt.__module__}.{engine_worker.Worker._attempt.__qualname__}.<locals>.run"
)
# The attributes the engine's fence and success settle remove from a one-off job.
FENCE_REMOVES = ("resent", "limit_held_since", "status_pk")
SETTLE_REMOVES = (
    "due_at",
    "extra_run",
    "token",
    "lease_until",
    c.DUE_SHARD_ATTRIBUTE,
    c.DUE_KEY_ATTRIBUTE,
    "worker",
    "started_at",
    "limit_held_since",
    "limit_slot",
    "limit_wait_ms",
    "resent",
    "status_pk",
)


class GaveUp(RuntimeError):
    """A stand-in's write still throttled when the worker's patience ran out: the delivery fails."""


class LostFence(RuntimeError):
    """Another delivery's fence or settle came first: the store would refuse this one."""


class Throttled:
    """A write the client gave up on, throttled: the worker's patience decides what follows."""


THROTTLED = Throttled()


def _s(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else value.get("S")


def _n(item: Item, name: str) -> int | None:
    value = item.get(name)
    return None if value is None else int(value["N"])


def _timeout_seconds(item: Item) -> int:
    """The job's own timeout, which a fresh lease is sized by (the message's may be older)."""
    return int(json.loads(_s(item, "retry") or "{}")["timeout_seconds"])


def lease_too_short(item: Item, now_ms: int, timeout_seconds: int) -> bool:
    """Whether a fence at `now_ms` finds the job's lease too short for the attempt, and writes a
    fresh one (sundial/shared/store/worker_writes.py)."""
    return (_n(item, "lease_until") or 0) < shortest_running_lease(now_ms, timeout_seconds)


def fresh_lease(item: Item, now_ms: int, timeout_seconds: int) -> int | None:
    """The lease a fence at `now_ms` writes: None when the job's own lease covers the attempt."""
    if not lease_too_short(item, now_ms, timeout_seconds):
        return None
    return running_lease(now_ms, _timeout_seconds(item))


def takes(message: JobMessage, item: Item | None, now_ms: int) -> bool:
    """Whether a stand-in may take this delivery: the one path it knows, and nothing else."""
    if item is None or message.limit_key is not None or message.held_since is not None:
        return False
    if message.not_before is not None or message.starts_after - now_ms > engine_worker.MAX_EARLY_WAIT_MS:
        return False
    if _s(item, "status") not in FENCED or _s(item, "token") != message.token:
        return False
    if _n(item, "attempt") != 0 or _s(item, "health") != "ok" or "limit_key" in item:
        return False
    if any(name in item for name in ("schedule", "calendar", "on_dead", "traceparent")):
        return False
    if any(item.get(flag, {}).get("BOOL") for flag in ("paused", "cancel_requested", "extra_run")):
        return False
    if item.get("payload_stored_apart", {}).get("BOOL") or item.get("backfill", {}).get("L"):
        return False
    target = json.loads(_s(item, "target") or "{}")
    return not urlparse(str(target.get("url", ""))).path.startswith("/fail")


def fenced(before: Item, now_ms: int, worker: str, write_id: str, lease_until: int | None = None) -> Item:
    """The job after its fence; with `lease_until`, the fresh lease a late delivery's fence writes,
    its index row moved with it."""
    after = {name: value for name, value in before.items() if name not in FENCE_REMOVES}
    if lease_until is not None:
        after["lease_until"] = {"N": str(lease_until)}
        after[c.DUE_KEY_ATTRIBUTE] = {"S": items.due_key(JobStatus.RUNNING, lease_until)}
    after["status"] = {"S": "running"}
    after["attempt"] = {"N": str(int(before["attempt"]["N"]) + 1)}
    after["worker"] = {"S": worker}
    after["started_at"] = after["updated_at"] = {"N": str(now_ms)}
    after["version"] = {"N": str(int(before.get("version", {"N": "0"})["N"]) + 1)}
    after["write_id"] = {"S": write_id}
    return after


def summary(running: Item, finished_ms: int) -> RunSummary:
    job_id = running["id"]["S"]
    scheduled = int(running["scheduled_at"]["N"])
    attempt = int(running["attempt"]["N"])
    trace = tracing.for_attempt(None, f"{job_id}:{format_rfc3339(scheduled)}", attempt)
    return RunSummary(
        scheduled_at=scheduled,
        attempt=attempt,
        status=RunStatus.SUCCEEDED,
        started_at=int(running["started_at"]["N"]),
        finished_at=finished_ms,
        worker=running["worker"]["S"],
        trace_id=trace.trace_id,
    )


def settled(running: Item, run: RunSummary, updated_ms: int) -> Item:
    """The job after its success settles, written at `updated_ms` (a try after a throttle is later)."""
    after = {name: value for name, value in running.items() if name not in SETTLE_REMOVES}
    last_run = run.model_dump_json(exclude_none=True)
    after["status"] = {"S": "succeeded"}
    after["updated_at"] = {"N": str(updated_ms)}
    after["version"] = {"N": str(int(running["version"]["N"]) + 1)}
    after["last_run"] = {"S": last_run}
    # The health a success writes (lifecycle.health_after): a new job's item holds no count of
    # failures in a row until a settle writes one.
    after["health"] = {"S": "ok"}
    after["consecutive_failures"] = {"N": "0"}
    # As the store builds it, so that a repeated settle recognises its own earlier try.
    after["write_id"] = {"S": repeatable_write_id(Event.SUCCEED.value, running["token"]["S"], "", last_run)}
    return after


def history(running: Item, run: RunSummary, retention_seconds: int) -> Item:
    expires = run.scheduled_at // SECOND_MS + retention_seconds
    return items.run_to_item(Run.of(running["id"]["S"], run), expires)


@dataclass
class StandIn:
    """One delivery, as the real worker would handle it on the path `takes` admits. It runs in the
    delivery's own task, and its heartbeat and attempt in tasks of their own, each yielding where
    the worker's yield, so that the invocation's deliveries share its CPU in the same turns; every
    segment is charged the table's figure for the kind the worker's code would have been."""

    world: World
    message: JobMessage
    deadline_ms: int
    worker_id: str = "sim"

    def run(self) -> None:
        """Raises GaveUp as the worker's own patience does; LostFence when another copy came first."""
        sim = self.world.sim
        me = sim.current()
        assert me is not None
        me.stand_in = True
        early_ms = self.message.starts_after - sim.now_ms()
        if early_ms > 0:  # the worker waits for the instant in the delivery's own task
            sim.sleep(early_ms / SECOND_MS)
        running = self._fence()
        finished = self._attempt(running)
        self._settle(running, finished)

    def _fence(self) -> Item:
        """The engine's fence: conditional on a lease that covers the attempt, and when the lease
        is too short (a late delivery) a second write with a fresh one, each round of the worker's
        patience making both."""
        started = self.world.sim.now_ms()
        fence_id = new_token()

        def ours(before: Item | None) -> bool:
            return (
                before is not None
                and _s(before, "status") in FENCED
                and _s(before, "token") == self.message.token
            )

        def round_of_patience() -> Item | Throttled | None:
            short: list[Item] = []

            def fence(before: Item | None, _: int) -> Item | None:
                short.clear()
                if not ours(before):
                    return None
                assert before is not None
                if lease_too_short(before, started, self.message.timeout_seconds):
                    short.append(before)
                    return None
                return fenced(before, started, self.worker_id, fence_id)

            running = self._call("UpdateItem", self._key, fence)
            if running is not None or not short:
                return running
            lease = fresh_lease(short[0], started, self.message.timeout_seconds)

            def renew(before: Item | None, _: int) -> Item | None:
                return fenced(before, started, self.worker_id, fence_id, lease) if ours(before) else None

            return self._call("UpdateItem", self._key, renew)

        until = started + engine_worker.FENCE_PATIENCE_SECONDS * SECOND_MS
        running = self._patiently("UpdateItem", round_of_patience, until)
        if running is None:
            raise LostFence(self.message.job_id)
        return running

    def _attempt(self, running: Item) -> int:
        """The target's call in the attempt's task, the heartbeat's task waiting beside it, as the
        worker runs them; answers the instant the worker settles from."""
        sim, target = self.world.sim, self.world.target
        stop = GreenEvent()

        def heartbeat(_: bool) -> None:
            stop.wait_step(c.HEARTBEAT_EVERY_SECONDS, lambda _: sim.finish())

        def attempt(_: bool) -> None:
            target.record(
                self.message.job_id, int(running["scheduled_at"]["N"]), int(running["attempt"]["N"])
            )
            sim.sleep_step(limits.TARGET_S.value, hung_up)

        def hung_up(_: bool) -> None:
            target.hung_up()
            sim.finish()

        beating = sim.spawn_steps(heartbeat, HEARTBEAT)
        calling = sim.spawn_steps(attempt, ATTEMPT)
        sim.join(calling)
        stop.set()
        sim.join(beating)
        return sim.now_ms()

    def _settle(self, running: Item, finished: int) -> None:
        run = summary(running, finished)

        def settle(before: Item | None, tried_ms: int) -> Item | None:
            if before is None or _s(before, "status") != "running":
                return None
            if _s(before, "token") != self.message.token or before.get("revision") != running.get("revision"):
                return None
            return settled(before, run, tried_ms)

        spare_ms = (SETTLE_HEADROOM_SECONDS - engine_worker.SETTLE_PATIENCE_SECONDS) * SECOND_MS
        until = min(finished + engine_worker.SETTLE_PATIENCE_SECONDS * SECOND_MS, self.deadline_ms - spare_ms)
        if self._write("UpdateItem", self._key, settle, until) is None:
            raise LostFence(self.message.job_id)
        kept = history(running, run, self.world.store.retention_seconds)
        run_key = (kept[c.PARTITION_KEY]["S"], kept[c.SORT_KEY]["S"])
        self._write("PutItem", run_key, lambda before, _: kept if before is None else None, until)

    @property
    def _key(self) -> tuple[str, str]:
        return (items.job_pk(self.message.job_id), "JOB")

    def _write(
        self,
        operation: str,
        key: tuple[str, str],
        after_of: Callable[[Item | None, int], Item | None],
        until_ms: int,
    ) -> Item | None:
        """One write as the store makes it, with the worker's patience: the item written, or None
        when its condition failed."""
        return self._patiently(operation, lambda: self._call(operation, key, after_of), until_ms)

    def _patiently(
        self, operation: str, round_of: Callable[[], Item | Throttled | None], until_ms: int
    ) -> Item | None:
        """Rounds of the worker's patience (sundial/shared/engine/patience.py) while a round's write
        stays throttled after the client's retries: its backoff, then GaveUp at its deadline."""
        sim = self.world.sim
        tries = 0
        while True:
            done = round_of()
            if not isinstance(done, Throttled):
                return done
            wait = min(LONGEST_WAIT_SECONDS, FIRST_WAIT_SECONDS * 2**tries) * random.random()
            if sim.now_ms() + wait * SECOND_MS >= until_ms:
                raise GaveUp(f"{operation} of job {self.message.job_id} throttled past the worker's patience")
            sim.sleep(wait)
            tries += 1

    def _call(
        self, operation: str, key: tuple[str, str], after_of: Callable[[Item | None, int], Item | None]
    ) -> Item | Throttled | None:
        """The write as the store's client makes it (bench/scale/world.py's Aws answers it so): the
        request's latency, the model's answer, botocore's retries of a throttle, and after the client
        gives up the store's look at the item, whether an earlier try was applied (a throttled one
        never is). Answers the item written, None when its condition failed, or THROTTLED. `after_of`
        is given the item and the instant the try was built."""
        sim = self.world.sim
        attempts, context = 1, dict[str, Any]()
        tried_ms = sim.now_ms()
        while True:
            written: tuple[Item | None, str | None] = self._ask(
                operation, functools.partial(self._apply, operation, key, after_of, tried_ms)
            )
            after, code = written
            delay = self._retry(operation, attempts, context, code)
            if code is None:
                return after
            if delay is None:
                break
            sim.sleep(delay)
            attempts += 1
        self._look(key)
        return THROTTLED

    def _apply(
        self,
        operation: str,
        key: tuple[str, str],
        after_of: Callable[[Item | None, int], Item | None],
        tried_ms: int,
    ) -> tuple[Item | None, str | None]:
        """The model's answer to one try: the item it would write, and the error code, if any."""
        dynamodb = self.world.aws.dynamodb
        after = after_of(dynamodb.table.item(key), tried_ms)
        return after, dynamodb.stand_in_write(operation, key, after, self.world.sim.time())

    def _look(self, key: tuple[str, str]) -> None:
        """The store's consistent GetItem of the item after a write failed, with the client's
        retries; what it finds changes nothing here, since a throttled write was not applied."""
        sim, dynamodb = self.world.sim, self.world.aws.dynamodb
        attempts, context = 1, dict[str, Any]()
        while True:
            code: str | None = self._ask("GetItem", lambda: dynamodb.stand_in_read(key, sim.time()))
            delay = self._retry("GetItem", attempts, context, code)
            if code is None or delay is None:
                return
            sim.sleep(delay)
            attempts += 1

    def _ask(self, operation: str, answer: Callable[[], Any]) -> Any:
        """A request's latency, the model answering it halfway through, as bench/scale/world.py's
        Aws answers the real worker's; the answer is taken from the simulation's loop, without a
        switch into this task."""
        sim = self.world.sim
        latency = limits.LATENCY_S[("dynamodb", operation)].value
        answered: list[Any] = []
        sim.request(f"dynamodb.{operation}")
        sim.sleep_around(latency / 2, lambda: answered.append(answer()), latency / 2)
        return answered[0]

    def _retry(
        self, operation: str, attempts: int, context: dict[str, Any], code: str | None
    ) -> float | None:
        """What the client's retry handler says after this answer (a delay, or None: no retry), and
        the client's `after-call` once the call is over, as bench/scale/direct.py asks them."""
        operation_model, service, events = _client_parts(self.world.store._client, operation)
        status = 200 if code is None else 400
        parsed: dict[str, Any] = {"ResponseMetadata": {"HTTPStatusCode": status}}
        if code is not None:
            parsed["Error"] = {"Code": code, "Message": "throttled"}
        response = SimpleNamespace(status_code=status, headers={}, content=b"")
        delay = None
        if code is not None:
            delay = first_non_none_response(
                events.emit(
                    f"needs-retry.{service}.{operation}",
                    response=(response, parsed),
                    endpoint=None,
                    operation=operation_model,
                    attempts=attempts,
                    caught_exception=None,
                    request_dict={"context": context},
                )
            )
        if delay is None or delay is False:
            parsed["ResponseMetadata"]["RetryAttempts"] = attempts - 1
            events.emit(
                f"after-call.{service}.{operation}",
                http_response=response,
                parsed=parsed,
                model=operation_model,
                context=context,
            )
            return None
        return float(delay)


@functools.lru_cache(maxsize=16)
def _client_parts(client: Any, operation: str) -> tuple[Any, str, Any]:
    """The operation's model, the service's event name and the client's events: looked up once, not
    on each of a million stand-ins' writes."""
    model = client.meta.service_model
    return model.operation_model(operation), model.service_id.hyphenize(), client.meta.events
