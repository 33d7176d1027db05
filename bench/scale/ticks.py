"""The scheduler function in the model: EventBridge invokes it once a minute (a tick), a few seconds
late at most, and a tick invokes it asynchronously with shares of the shards (a claimer,
sundial/shared/engine/claimers.py). Both are asynchronous invocations: each takes one of the
account's concurrent executions, and one Lambda throttles goes back to its queue and is retried, a
second later and then twice as long each time. Each invocation runs the engine's Scheduler in an
execution environment of the function's own, killed at its timeout; a scenario may kill the tick
that sends its first instant's messages mid-send, and start another tick inside it."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.scale import limits
from bench.scale.runtime import Environment, GreenEvent
from sundial.shared import constants as c
from sundial.shared.dispatch import Dispatcher
from sundial.shared.engine.claimers import ClaimRequest, LambdaClaimers
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler

if TYPE_CHECKING:
    from bench.scale.world import World

SAFETY_MARGIN_S = (
    10.0  # sundial/functions/scheduler.py's SAFETY_MARGIN_MS: the tick's deadline before its timeout
)
FUNCTION_NAME = "sundial-scheduler"


@dataclass
class TickRecord:
    started_s: float
    kind: str = "tick"  # or "claimer"
    throttled: int = 0  # times Lambda throttled the invocation before it ran
    duration_s: float | None = None
    out_of_time: bool = False
    killed: bool = False
    timed_out: bool = False
    claimed: int = 0
    dispatched: int = 0
    errors: int = 0
    claimers: int = 0  # shares this tick handed to claimers
    send_failures: int = 0  # messages still failed after the dispatcher's retries: handed back
    sent_while_running: int = 0  # messages the job queues took from its start to its end or kill
    ended_s: float | None = None


class SchedulerFunction:
    def __init__(self, world: World) -> None:
        self.world = world
        self.records: list[TickRecord] = []
        self.kill_tick_at: float | None = None
        self.kill_tick_after_sends: int | None = None
        self.overlap_tick_after_sends: int | None = None  # another tick starts inside the killable one
        self._when_sent: list[tuple[Environment, int, Callable[[], None]]] = []
        self._sent: dict[Environment | None, int] = {}  # messages each running invocation sent
        world.aws.sqs.on_put = self._on_put
        self._lambda = world.aws.client("lambda")
        self.function = world.functions["scheduler"]
        self._rng = random.Random(f"{world.seed}-ticks")
        self.abandoned = 0  # events Lambda gave up retrying (older than the queue keeps them)

    def lateness_s(self) -> float:
        """How late EventBridge invokes one tick: drawn from the run's seed, so a run repeats."""
        return self._rng.uniform(limits.TICK_START_S.value, limits.TICK_LATE_MAX_S.value)

    def start(self, first_s: float, until_s: float, extra: list[float] | None = None) -> None:
        minutes = [first_s + minute * c.TICK_SECONDS for minute in range(int((until_s - first_s) // 60) + 1)]
        late = {at: self.lateness_s() for at in minutes}
        planned = sorted([(at, False) for at in minutes] + [(at, True) for at in extra or []])
        for n, (at, is_extra) in enumerate(planned):
            # A scenario's extra tick keeps its place beside the minute's tick it is put against.
            before = [minute for minute in minutes if minute <= at]
            lateness = late[before[-1]] if is_extra and before else late.get(at, limits.TICK_START_S.value)
            # The second tick sends the run's first instant's messages: the one a kill hits.
            self.world.sim.spawn(self._invocation, n == 1, None, env=None, at=at + lateness)

    def invoked(self, operation: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Lambda's answer to an asynchronous Invoke: the event is queued, the claimer starts soon."""
        request = ClaimRequest.model_validate_json(body)
        sim = self.world.sim
        at = sim.time() + limits.ASYNC_INVOKE_S.value
        sim.spawn(self._invocation, False, request.shards, detached=True, at=at)
        return 202, {}, b""

    def _scheduler(self) -> Scheduler:
        world = self.world
        settings = world.settings
        return Scheduler(
            EngineContext(world.store, Dispatcher(*world.dispatch_args), world.clock),
            settings.scheduler_parallelism,
            settings.scheduler_senders,
            claimers=LambdaClaimers(self._lambda, FUNCTION_NAME),
            capacity=settings.tick_capacity,
        )

    def _invocation(self, may_kill: bool, shards: Sequence[int] | None) -> None:
        sim = self.world.sim
        queued_at, retry, throttled = sim.time(), limits.ASYNC_RETRY_FIRST_S.value, 0
        while (started_env := self.function.start()) is None:
            throttled += 1
            if sim.time() + retry - queued_at > limits.ASYNC_MAX_AGE_S.value:
                self.abandoned += 1
                return
            sim.sleep(retry)
            retry = min(2 * retry, limits.ASYNC_RETRY_MAX_S.value)
        env, cold = started_env
        if cold:
            sim.sleep(self.function.cold_start_s(), charge=False)
        started = sim.time()
        record = TickRecord(started, "tick" if shards is None else "claimer", throttled)
        self.records.append(record)
        timeout = limits.TICK_TIMEOUT_S.value
        if may_kill and self.kill_tick_at is not None:
            timeout = min(timeout, self.kill_tick_at)
        scheduler = self._scheduler()
        deadline_ms = int((started + limits.TICK_TIMEOUT_S.value - SAFETY_MARGIN_S) * 1000)
        ended = GreenEvent()

        def run() -> None:
            try:
                report = scheduler.tick(deadline_ms, shards)
            finally:
                ended.set()
            record.duration_s = sim.time() - started
            record.out_of_time = report.out_of_time
            record.claimed, record.dispatched = report.claimed, report.dispatched
            record.errors, record.claimers = report.errors, report.claimers
            record.send_failures = report.send_failures

        task = sim.spawn(run, env=env)
        self._sent[env] = 0
        if may_kill and self.kill_tick_after_sends is not None:
            self._kill_after_sends(env, ended, self.kill_tick_after_sends)
        if may_kill and self.overlap_tick_after_sends is not None:
            self._at_sent(env, self.overlap_tick_after_sends, self._overlapping_tick)
        finished = ended.wait(timeout) and not env.killed
        record.sent_while_running = self._sent.pop(env)
        # The environment may serve a later invocation: what waited on this one's sends ends here.
        self._when_sent = [waiting for waiting in self._when_sent if waiting[0] is not env]
        record.ended_s = sim.time()
        if not finished:
            sim.kill(env)
            record.killed = may_kill
            record.timed_out = not may_kill
            record.duration_s = sim.time() - started
        self.function.end(env)
        if finished and task.error is not None:
            raise task.error

    def _kill_after_sends(self, env: Environment, ended: GreenEvent, total: int) -> None:
        """Kills the tick the moment the queues have taken `total` of its messages: inside a send,
        whose answer it never reads."""

        def kill() -> None:
            if not env.killed:
                self.world.sim.kill(env)
                ended.set()

        self._at_sent(env, total, kill)

    def _overlapping_tick(self) -> None:
        """Another tick, as EventBridge starts one while a slow one still runs."""
        self.world.sim.spawn(self._invocation, False, None, detached=True)

    def _at_sent(self, env: Environment, total: int, act: Callable[[], None]) -> None:
        """Does `act` once the job queues have taken `total` messages sent from `env` (now for 0)."""
        if total <= 0:
            act()
            return
        self._when_sent.append((env, total, act))

    def _on_put(self) -> None:
        task = self.world.sim.current()
        env = None if task is None else task.env
        if env not in self._sent:
            return
        self._sent[env] += 1
        due = [then for at_env, at, then in self._when_sent if at_env is env and self._sent[env] >= at]
        self._when_sent = [w for w in self._when_sent if not (w[0] is env and self._sent[env] >= w[1])]
        for then in due:
            then()
