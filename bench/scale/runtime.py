"""Green threads on a virtual clock: the engine's threads run as greenlets, one at a time, and time
moves only by the model's latencies, sleeps and the CPU the engine's own code spends.

A task's CPU is counted in segments, from the moment it resumes to the moment it yields, and charged
onto the virtual clock at its Lambda environment's speed (configured memory / 1,769 MB, at most one
vCPU: one Python process holds the GIL); the tasks of one environment share that CPU in turn. Time
spent answering as AWS (bench/scale/world.py's `Aws`) is not charged: it ends a segment with
`charge=False`.

What a segment is charged comes from a committed table (bench/scale/cpu.py) when the simulation has
one: the mean CPU this kind of segment took when the table was measured, a kind being the task's
function and the requests (or waits) that open and close the segment. A seed then repeats exactly,
on any machine and however loaded. Without a table each segment is charged the CPU it measurably
took (time.thread_time), which is how the table is measured.

The engine's modules create threads, events, conditions, semaphores and thread pools; `green()`
swaps those names for the green kinds below while a simulation runs, as gevent's monkey patching
does, so that the engine's own code runs unchanged.
"""

from __future__ import annotations

import gc
import heapq
import importlib
import itertools
import os
import random
import secrets
import threading
import time
import types
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from greenlet import getcurrent, greenlet
from ulid import ULID

from bench.scale import limits
from bench.scale.cpu import CpuTable


class Environment:
    """A Lambda execution environment: one CPU at `speed` vCPUs, shared by its tasks in turn."""

    def __init__(self, memory_mb: int) -> None:
        vcpus = memory_mb / limits.VCPU_MEMORY_MB.value
        self.speed = min(1.0, vcpus) / limits.CORE_PER_VCPU.value
        self.cpu_free_at = 0.0
        self.cpu_seconds = 0.0
        self.killed = False
        self.tasks: list[Task] = []
        # What its process keeps from one invocation to the next, as a handler module's cached objects.
        self.kept: dict[str, Any] = {}


@dataclass(eq=False)
class Task:
    glet: greenlet | None  # None: a task of steps (`Sim.spawn_steps`)
    env: Environment | None
    kind: str = ""  # the function the task runs: the first part of its segments' kinds
    at: float = 0.0  # the task's own virtual time while it runs
    segment_start: float = 0.0
    opened_by: str = "start"  # what began the current segment: the request or wait that ended the last
    closing: str | None = None  # the request the running segment is about to end with
    token: object | None = None
    # What one delivery's tasks spend, when a sampled run meters it (bench/scale/sampling.py): its
    # tasks share it, as they share the delivery.
    meter: Any = None
    # Runs a stand-in of the engine's code (bench/scale/standins.py): its segments are charged the
    # table's figure for their kinds, as the code it stands in for would be, and never measured.
    stand_in: bool = False
    done: bool = False
    result: Any = None
    error: BaseException | None = None
    joiners: list[Callable[[], None]] = field(default_factory=list)
    resume: Callable[[bool], None] | None = None  # a task of steps: the one it takes next


class CpuCharges:
    """What one simulation charged for CPU, and what the host measured for the same segments: how
    far the table is from this host now."""

    def __init__(self, table: CpuTable | None) -> None:
        self.table = table
        self.measured: dict[str, list[float]] = {}  # kind: [segments, seconds]
        self.charged_seconds = 0.0
        self.measured_seconds = 0.0
        self.uncalibrated: Counter[str] = Counter()
        self.stand_in_seconds = 0.0  # charged for code a stand-in did not run (bench/scale/standins.py)
        self.stand_in_segments = 0

    def table_seconds(self, kind: str) -> float:
        """What the table charges a segment of `kind`, charged without a measure: a stand-in's."""
        if self.table is None:
            raise RuntimeError("a stand-in's CPU comes from the table; this run measures instead")
        known = self.table.seconds.get(kind)
        if known is None:
            self.uncalibrated[kind] += 1
            known = self.table.fallback_seconds
        self.stand_in_seconds += known
        self.stand_in_segments += 1
        self.charged_seconds += known
        return known

    def charge(self, kind: str, spent: float) -> float:
        tally = self.measured.setdefault(kind, [0, 0.0])
        tally[0] += 1
        tally[1] += spent
        self.measured_seconds += spent
        if self.table is None:
            cost = spent
        else:
            known = self.table.seconds.get(kind)
            if known is None:
                self.uncalibrated[kind] += 1
                known = self.table.fallback_seconds
            cost = known
        self.charged_seconds += cost
        return cost

    def summary(self) -> dict[str, Any]:
        # A stand-in's charges were never measured: the host is compared on the code that ran.
        ran = self.charged_seconds - self.stand_in_seconds
        summary = {
            "source": "measured" if self.table is None else "table",
            "charged_s": round(self.charged_seconds, 3),
            "measured_s": round(self.measured_seconds, 3),
            "measured_over_charged": round(self.measured_seconds / ran, 3) if ran else None,
            "segments": sum(int(n) for n, _ in self.measured.values()),
            "uncalibrated_segments": sum(self.uncalibrated.values()),
            "uncalibrated_kinds": len(self.uncalibrated),
        }
        if self.stand_in_segments:
            summary["stand_in_s"] = round(self.stand_in_seconds, 3)
            summary["stand_in_segments"] = self.stand_in_segments
        return summary


class Sim:
    """The discrete-event loop: tasks wait in a heap by virtual time; the earliest runs next."""

    def __init__(self, start_s: float, cpu: CpuTable | None = None, seed: int = 0) -> None:
        self.now = start_s
        self.cpu = CpuCharges(cpu)
        self.seed = seed
        # Each entry: when, its order, the task, its token, and whether it was woken (or the step
        # the loop takes in its place).
        self._heap: list[tuple[float, int, Task, object, Any]] = []
        self._seq = itertools.count()
        self._hub = getcurrent()
        self._current: Task | None = None
        self._killed: list[Task] = []  # kept referenced: a collected greenlet would run its finally blocks
        self.switches = 0

    # --- time ---------------------------------------------------------------------------------------

    def time(self) -> float:
        """Now, as the running task sees it: its CPU so far included."""
        task = self._current
        if task is None:
            return self.now
        if task.env is None or self.cpu.table is not None:
            # With a table, what a segment costs is known only at its end: its clock reads stand at
            # its start, so they repeat too.
            return task.at
        return task.at + (time.thread_time() - task.segment_start) / task.env.speed

    def now_ms(self) -> int:
        return int(self.time() * 1000)

    def sleep(self, seconds: float, charge: bool = True) -> None:
        task = self._running()
        self._end_segment(task, charge, "sleep")
        self._wait(task, task.at + max(0.0, seconds))

    def sleep_around(self, first: float, step: Callable[[], None], then: float) -> None:
        """Sleeps `first` (charged as `sleep` is), has `step` run at that instant as the running task
        would run it, then sleeps `then` uncharged: a request answered midway through its latency.
        The step runs from the loop without a switch into the task, which is most of what a
        stand-in's write costs the host; it must not wait, and nothing it runs is charged, as
        nothing between two sleeps of a stand-in is."""
        task = self._running()
        self._end_segment(task, True, "sleep")

        def midway() -> None:
            step()
            self._end_segment(task, False, "sleep")
            self._schedule(task, task.at + max(0.0, then), None)

        self._schedule(task, task.at + max(0.0, first), None, woken=midway)
        self._hub.switch()

    def request(self, name: str) -> None:
        """Names the request the running task's segment ends with (`service.Operation`)."""
        self._running().closing = name

    def charge_cpu(self) -> None:
        """Ends the running task's CPU segment here: what follows is the model's, not Lambda's."""
        task = self._running()
        self._end_segment(task, True, "model")
        task.segment_start = time.thread_time()

    def discard_cpu(self) -> None:
        self._running().segment_start = time.thread_time()

    # --- tasks ------------------------------------------------------------------------------------------

    def spawn(
        self,
        fn: Callable[..., Any],
        *args: Any,
        env: Environment | None = None,
        at: float | None = None,
        detached: bool = False,
        kind: str | None = None,
    ) -> Task:
        """A new task, in `env` (the running task's when None and one runs, unless `detached`: in no
        environment, as an invocation of another function), starting at `at`."""
        task = Task(greenlet(self._body(fn, args), parent=self._hub), None, kind or _kind(fn))
        return self._start(task, env, at, detached)

    def spawn_steps(self, first: Callable[[bool], None], kind: str) -> Task:
        """A task of the running task's environment whose code is steps the loop calls, not a
        greenlet: each step ends by `sleep_step`, `GreenEvent.wait_step` or `finish`, and is
        charged as the same code would be in a task of its own. A stand-in's heartbeat and attempt
        are two such tasks for each of a million deliveries, which greenlets made dear."""
        task = Task(None, None, kind)
        task.resume = first
        return self._start(task, None, None, False)

    def sleep_step(self, seconds: float, then: Callable[[bool], None]) -> None:
        """`sleep`, in a task of steps: `then` is its next step."""
        task = self._running()
        self._end_segment(task, True, "sleep")
        task.resume = then
        self._schedule(task, task.at + max(0.0, seconds), None)

    def park_step(self, timeout: float | None, then: Callable[[bool], None]) -> tuple[Task, object]:
        """`park` and its wait, in a task of steps: `then` is given whether it was woken."""
        task = self._running()
        token = self._arm(task)
        if timeout is not None:
            self._timeout(task, token, task.at + max(0.0, timeout))
        task.resume = then
        return task, token

    def finish(self, result: Any = None) -> None:
        """A task of steps ends, as a greenlet's body does."""
        task = self._running()
        task.result = result
        self._end_segment(task, True, "end")
        task.done = True
        for joiner in task.joiners:
            joiner()

    def _start(self, task: Task, env: Environment | None, at: float | None, detached: bool) -> Task:
        parent = self._current
        if env is None and parent is not None and not detached:
            env = parent.env
        task.env = env
        if parent is not None and not detached:
            task.meter, task.stand_in = parent.meter, parent.stand_in
        if env is not None:
            if len(env.tasks) >= KEPT_TASKS:  # only a task still running has anything left to kill
                env.tasks = [t for t in env.tasks if not t.done]
            env.tasks.append(task)
        start = at if at is not None else (self.time() if parent is not None else self.now)
        self._schedule(task, start, None)
        return task

    def join(self, task: Task, timeout: float | None = None) -> bool:
        if task.done:
            return True
        me = self._running()
        token = self._arm(me)
        task.joiners.append(lambda: self.wake(me, token))
        return self._block(me, token, timeout)

    def kill(self, env: Environment) -> None:
        """Ends every task of `env` where it stands, as a timed-out Lambda is: nothing more it
        would have done happens."""
        env.killed = True
        for task in env.tasks:
            if not task.done:
                task.token = None
                self._killed.append(task)

    def current(self) -> Task | None:
        return self._current

    # --- waiting ----------------------------------------------------------------------------------------

    def park(self, timeout: float | None = None) -> tuple[Task, object, Callable[[], bool]]:
        """Prepares the running task to wait; returns it, its token (for `wake`) and the wait."""
        me = self._running()
        token = self._arm(me)
        return me, token, lambda: self._block(me, token, timeout)

    def wake(self, task: Task, token: object) -> None:
        if task.token is token and not task.done:
            self._schedule(task, self.time(), token, woken=True)

    # --- the loop ---------------------------------------------------------------------------------------

    def run(self, until: float | None = None) -> None:
        while self._heap:
            at, _, task, token, woken = self._heap[0]
            if until is not None and at > until:
                break
            heapq.heappop(self._heap)
            if task.done or task.token is not token or (task.env is not None and task.env.killed):
                continue
            self.now = max(self.now, at)
            task.at = self.now
            task.token = None
            self._current = task
            if woken.__class__ is not bool:  # a step taken in the task's place (`sleep_around`)
                woken()
                self._current = None
                continue
            if not task.stand_in:  # a stand-in's own CPU is never measured: the host's clock is slow to ask
                task.segment_start = time.thread_time()
            if task.glet is None:
                assert task.resume is not None
                task.resume(woken)
                self._current = None
                continue
            self.switches += 1
            if task.glet:
                task.glet.switch(woken)
            else:
                task.glet.switch()  # its first start: the body takes no argument
            self._current = None
        if until is not None:
            self.now = max(self.now, until)

    def idle(self) -> bool:
        return not any(
            not t.done and t.token is tok and not (t.env is not None and t.env.killed)
            for _, _, t, tok, _ in self._heap
        )

    # --- inside ---------------------------------------------------------------------------------------

    def _body(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], None]:
        def body() -> None:
            task = self._running()
            try:
                task.result = fn(*args)
            except BaseException as exc:  # a task's failure is its joiner's to see
                task.error = exc
            self._end_segment(task, True, "end")
            task.done = True
            for joiner in task.joiners:
                joiner()

        return body

    def _running(self) -> Task:
        task = self._current
        if task is None:
            raise RuntimeError("no simulated task is running")
        return task

    def _end_segment(self, task: Task, charge: bool, reason: str) -> None:
        env = task.env
        closing = task.closing or reason
        task.closing = None
        opened_by = task.opened_by
        if charge:  # an uncharged stretch is the model's own: the next segment follows the last one
            task.opened_by = closing
        if env is None:
            return
        if task.stand_in:
            spent = self.cpu.table_seconds(f"{task.kind}|{opened_by}|{closing}") if charge else 0.0
        else:
            spent = time.thread_time() - task.segment_start
            if charge:
                spent = self.cpu.charge(f"{task.kind}|{opened_by}|{closing}", max(0.0, spent))
        if charge:
            if task.meter is not None:
                task.meter.cpu_s += spent
            if spent > 0:
                start = max(task.at, env.cpu_free_at)
                task.at = start + spent / env.speed
                env.cpu_free_at = task.at
                env.cpu_seconds += spent
        if not task.stand_in:
            task.segment_start = time.thread_time()

    def _arm(self, task: Task) -> object:
        self._end_segment(task, True, "wait")
        token = object()
        task.token = token
        return token

    def _block(self, task: Task, token: object, timeout: float | None) -> bool:
        """Yields until woken (True) or until `timeout` passes (False)."""
        if timeout is not None:
            self._timeout(task, token, task.at + max(0.0, timeout))
        woken = self._hub.switch()
        return bool(woken)

    def _wait(self, task: Task, at: float) -> None:
        token = object()
        task.token = token
        self._schedule(task, at, token)
        self._hub.switch()

    def _schedule(self, task: Task, at: float, token: object | None, woken: Any = False) -> None:
        """Queues the task at `at`; `woken` is whether a wake did it, or the step the loop takes in
        the task's place (`sleep_around`)."""
        if token is None:
            token = object()
        task.token = token
        heapq.heappush(self._heap, (at, next(self._seq), task, token, woken))

    def _timeout(self, task: Task, token: object, at: float) -> None:
        heapq.heappush(self._heap, (at, next(self._seq), task, token, False))


def _kind(fn: Callable[..., Any]) -> str:
    target = getattr(fn, "sundial_target", fn)
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(target).__name__)}"


_sim: Sim | None = None
# An environment's tasks are pruned of the ended ones once it holds this many: a warm worker's
# environment runs thousands of invocations.
KEPT_TASKS = 256


def sim() -> Sim:
    if _sim is None:
        raise RuntimeError("no simulation is running")
    return _sim


class GreenEvent:
    def __init__(self) -> None:
        self._flag = False
        self._waiters: list[tuple[Task, object]] = []

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        self._flag = True
        waiters, self._waiters = self._waiters, []
        for task, token in waiters:
            sim().wake(task, token)

    def clear(self) -> None:
        self._flag = False

    def wait(self, timeout: float | None = None) -> bool:
        if self._flag:
            return True
        task, token, block = sim().park(timeout)
        self._waiters.append((task, token))
        block()
        return self._flag

    def wait_step(self, timeout: float | None, then: Callable[[bool], None]) -> None:
        """`wait`, in a task of steps (`Sim.spawn_steps`): `then` is given whether the event is set."""
        if self._flag:
            then(True)
            return
        task, token = sim().park_step(timeout, lambda _: then(self._flag))
        self._waiters.append((task, token))


class GreenCondition:
    """A condition whose lock is the one thread all tasks share: only its waits yield."""

    def __init__(self, lock: Any = None) -> None:
        self._waiters: deque[tuple[Task, object]] = deque()

    def __enter__(self) -> bool:
        return True

    def __exit__(self, *exc: object) -> None:
        return None

    def acquire(self, *args: Any) -> bool:
        return True

    def release(self) -> None:
        return None

    def wait(self, timeout: float | None = None) -> bool:
        task, token, block = sim().park(timeout)
        self._waiters.append((task, token))
        woken = block()
        if not woken:
            self._waiters = deque(w for w in self._waiters if w[1] is not token)
        return woken

    def wait_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> Any:
        end = None if timeout is None else sim().time() + timeout
        result = predicate()
        while not result:
            left = None if end is None else end - sim().time()
            if left is not None and left <= 0:
                break
            self.wait(left)
            result = predicate()
        return result

    def notify(self, n: int = 1) -> None:
        for _ in range(min(n, len(self._waiters))):
            task, token = self._waiters.popleft()
            sim().wake(task, token)

    def notify_all(self) -> None:
        self.notify(len(self._waiters))


class GreenSemaphore:
    def __init__(self, value: int = 1) -> None:
        self._value = value
        self._waiters: deque[tuple[Task, object]] = deque()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        while self._value <= 0:
            if not blocking:
                return False
            task, token, block = sim().park(timeout)
            self._waiters.append((task, token))
            if not block():
                return False
        self._value -= 1
        return True

    def release(self, n: int = 1) -> None:
        self._value += n
        while self._waiters and n > 0:
            task, token = self._waiters.popleft()
            sim().wake(task, token)
            n -= 1

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()


def GreenLock() -> GreenSemaphore:  # noqa: N802 - stands in for threading.Lock
    return GreenSemaphore(1)


class GreenThread:
    def __init__(
        self,
        group: None = None,
        target: Callable[..., Any] | None = None,
        name: str | None = None,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        daemon: bool | None = None,
    ) -> None:
        self._call = lambda: target(*args, **(kwargs or {})) if target else None
        self._call.sundial_target = target  # type: ignore[attr-defined]
        self._task: Task | None = None
        self.name = name or "green"

    def start(self) -> None:
        self._task = sim().spawn(self._call)

    def join(self, timeout: float | None = None) -> None:
        if self._task is not None:
            sim().join(self._task, timeout)

    def is_alive(self) -> bool:
        return self._task is not None and not self._task.done


class GreenFuture:
    def __init__(self) -> None:
        self._done = GreenEvent()
        self._result: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[GreenFuture], None]] = []

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout: float | None = None) -> Any:
        self._done.wait(timeout)
        if self._error is not None:
            raise self._error
        return self._result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._done.wait(timeout)
        return self._error

    def add_done_callback(self, callback: Callable[[GreenFuture], None]) -> None:
        if self.done():
            callback(self)
        else:
            self._callbacks.append(callback)

    def _finish(self, result: Any, error: BaseException | None) -> None:
        self._result, self._error = result, error
        self._done.set()
        for callback in self._callbacks:
            callback(self)


class GreenExecutor:
    """concurrent.futures' executor over green tasks: at most `max_workers` run at once."""

    def __init__(self, max_workers: int | None = None, thread_name_prefix: str = "", **_: Any) -> None:
        self._max = max(1, max_workers or 1)
        # A named pool's lanes are a kind of their own (the batch create's writers, say), so that the
        # CPU table does not charge them as the tick's lanes.
        self._kind = f"{_kind(self._lane)}[{thread_name_prefix}]" if thread_name_prefix else None
        self._queue: deque[tuple[GreenFuture, Callable[[], Any]]] = deque()
        self._lanes: list[Task] = []
        self._busy = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> GreenFuture:
        future = GreenFuture()
        self._queue.append((future, lambda: fn(*args, **kwargs)))
        live = [lane for lane in self._lanes if not lane.done]
        # As concurrent.futures does: a new lane for work no idle lane will take, up to the maximum.
        # A lane spawned but not yet running counts as idle, so a burst of submits spawns one each.
        if len(live) < self._max and len(self._queue) > len(live) - self._busy:
            self._lanes = [*live, sim().spawn(self._lane, kind=self._kind)]
        return future

    def map(self, fn: Callable[..., Any], *iterables: Any, timeout: float | None = None) -> Iterator[Any]:
        futures = [self.submit(fn, *args) for args in zip(*iterables, strict=False)]

        def results() -> Iterator[Any]:
            for future in futures:
                yield future.result()

        return results()

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        if wait:
            for lane in list(self._lanes):
                sim().join(lane)

    def __enter__(self) -> GreenExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _lane(self) -> None:
        while self._queue:
            future, call = self._queue.popleft()
            self._busy += 1
            try:
                result, error = call(), None
            except BaseException as exc:  # handed to whoever waits on the future
                result, error = None, exc
            finally:
                self._busy -= 1
            future._finish(result, error)


GREEN_THREADING = types.SimpleNamespace(
    Thread=GreenThread,
    Event=GreenEvent,
    Condition=GreenCondition,
    Semaphore=GreenSemaphore,
    BoundedSemaphore=GreenSemaphore,
    Lock=GreenLock,
    RLock=GreenLock,
)


@dataclass
class _GreenWaiting:
    """sundial.shared.dispatch._Waiting with a green event (its dataclass default was bound at import)."""

    messages: Any
    failed: list[Any] = field(default_factory=list)
    done: GreenEvent = field(default_factory=GreenEvent)


class _SeededIds:
    """Job and operation ids, attempt tokens and message ids from the simulation's seed and clock:
    a seed repeats only if what it names does."""

    def __init__(self, simulation: Sim) -> None:
        self._sim = simulation
        self._rng = random.Random(simulation.seed)
        # botocore draws a uuid for each request it sends: a stream of its own, so that how many
        # requests took its full path (bench/scale/direct.py) moves no id or token.
        self._bytes = random.Random(simulation.seed + 1)

    def ulid(self) -> ULID:
        ms = int(self._sim.time() * 1000) if self._sim.current() is not None else int(self._sim.now * 1000)
        return ULID.from_bytes(ms.to_bytes(6, "big") + self._rng.randbytes(10))

    def token_hex(self, nbytes: int | None = None) -> str:
        return self._rng.randbytes(nbytes or 32).hex()

    def token_bytes(self, nbytes: int | None = None) -> bytes:
        return self._rng.randbytes(nbytes or 32)

    def urandom(self, size: int) -> bytes:
        return self._bytes.randbytes(size)


def _green_sleep(seconds: float) -> None:
    if _sim is not None and _sim.current() is not None:
        _sim.sleep(seconds)
    else:
        _real_sleep(seconds)


_real_sleep = time.sleep


GREEN_MODULES = (
    "sundial.shared.dispatch",
    "sundial.shared.engine.gate",
    "sundial.shared.engine.heartbeat",
    "sundial.shared.engine.scheduler",
    "sundial.shared.engine.tick_report",
    "sundial.shared.engine.tick_sends",
    "sundial.shared.engine.worker",
)


ID_MODULES = (
    "sundial.shared.service.service",
    "sundial.shared.service.placing",
    "sundial.shared.service.operations",
)


def _loaded(name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return None


@contextmanager
def green(simulation: Sim) -> Iterator[Sim]:
    """Runs the engine's modules on `simulation`'s green threads and clock, then puts them back."""
    global _sim  # noqa: PLW0603 - the one simulation the green kinds run on
    from bench.scale import serializing
    from sundial.shared import dispatch
    from sundial.shared.engine import scheduler
    from sundial.shared.store import items

    ids = _SeededIds(simulation)
    # The modules whose threads, events and locks the engine's actors share (a tick's report among
    # them, wherever it lives): those present that hold `threading`.
    threaded = [
        module for module in map(_loaded, GREEN_MODULES) if getattr(module, "threading", None) is threading
    ]
    # The modules that mint new ids (a job's, an operation's), wherever they live.
    minting = [
        module for module in map(_loaded, ID_MODULES) if module is not None and hasattr(module, "ULID")
    ]
    swaps: list[tuple[Any, str, Any]] = [
        (scheduler, "ThreadPoolExecutor", GreenExecutor),
        *((module, "threading", GREEN_THREADING) for module in threaded),
        (dispatch, "_Waiting", _GreenWaiting),
        (time, "sleep", _green_sleep),
        *((module, "ULID", ids.ulid) for module in minting),
        (secrets, "token_hex", ids.token_hex),
        (secrets, "token_bytes", ids.token_bytes),
        (os, "urandom", ids.urandom),
    ]
    if simulation.cpu.table is not None and serializing.FAST:
        # The store's serializer of item values, answering as boto3's (bench/scale/serializing.py):
        # with the CPU charged from the table, what the host spends decides nothing a run reports.
        swaps.append((items, "_serializer", serializing.FastSerializer()))
    kept = [(module, name, getattr(module, name)) for module, name, _ in swaps]
    _sim = simulation
    random_state = random.getstate()
    random.seed(simulation.seed)
    try:
        with collector_off():
            for module, name, value in swaps:
                setattr(module, name, value)
            yield simulation
    finally:
        for module, name, value in kept:
            setattr(module, name, value)
        random.setstate(random_state)
        _sim = None


_off_depth = 0


@contextmanager
def collector_off() -> Iterator[None]:
    """The collector off until the outermost of these ends, the heap as it was frozen. A run
    allocates millions of short-lived objects (requests, answers, items) and makes few cycles: with
    Python's default thresholds the collector took about a third of a 20,000-job run's CPU, and with
    them raised to 50,000, 50 and 100 still a tenth of 200,000 jobs' (each young collection reads
    the objects its young ones point at, scattered over gigabytes); off, the same run held 2.7% more
    memory (2.28 GB). A collection of the host process's heap (a test session's, say) would run in
    whichever task allocates and be charged to it as seconds of an invocation's CPU. A report is
    built inside too: with the collector back on and the run's heap unfrozen, it walked a million
    jobs' items again and again while the report grouped their calls. What a run reports does not
    depend on when the collector runs (tests/bench/test_scale_collector.py), only the CPU the host
    spends."""
    global _off_depth  # noqa: PLW0603 - nested runs share the one collector
    if _off_depth:
        _off_depth += 1
        try:
            yield
        finally:
            _off_depth -= 1
        return
    gc.collect()
    gc.freeze()
    was_enabled = gc.isenabled()
    gc.disable()
    _off_depth = 1
    try:
        yield
    finally:
        _off_depth = 0
        if was_enabled:
            gc.enable()
        gc.unfreeze()
