"""Each SQS and Lambda part of the scale model (bench/scale) against what AWS documents for it: the
behaviour stated, the page named (title and address, as bench/scale/limits.py gives each figure's
source), and the model held to it. A model that dropped one of these rules would let a goal pass that
AWS would fail, so each test is written to fail when its rule is taken out."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from bench.scale import limits
from bench.scale import world as world_module
from bench.scale.creates import Imports
from bench.scale.creates import run as run_imports
from bench.scale.runtime import Environment, Sim, green
from bench.scale.scenario import NAMED
from bench.scale.scenario import run as run_scenario
from bench.scale.sqs import Message, Queue, SqsModel, _clock_now
from bench.scale.world import Account, EventSource, LambdaFunction, Settings, World
from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from sundial.shared.engine import tick_sends

START = 1_000_000.0
WORKER = "sundial.functions.worker"


def _world(settings: Settings | None = None) -> tuple[Sim, World]:
    sim = Sim(START)
    return sim, World(sim, settings or Settings())


def _receive(queue: Queue, now: float, visibility: float = 30.0) -> list[Any]:
    _clock_now[0] = now  # the model looks at hidden messages' return lazily, at the clock SQS last saw
    return queue.receive(now, 10, visibility)


# --- SQS -------------------------------------------------------------------------------------------


def test_a_delay_over_900_seconds_is_refused_and_900_is_kept() -> None:
    """Amazon SQS delay queues (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/
    SQSDeveloperGuide/sqs-delay-queues.html): DelaySeconds is 0 to 900 seconds (15 minutes). SQS
    refuses more with InvalidParameterValue ("DelaySeconds must be >= 0 and <= 900"): SendMessage
    with a 400, SendMessageBatch with that entry in Failed, its fault the sender's (Amazon SQS API
    Reference, SendMessageBatch and BatchResultErrorEntry, https://docs.aws.amazon.com/
    AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html)."""
    _, world = _world()
    sqs, queue = world.sqs_client, world.queues[Priority.HIGH]
    body = json.dumps({"job_id": "j", "due_at": 0})

    with pytest.raises(ClientError) as refused:
        sqs.send_message(QueueUrl=queue.url, MessageBody=body, DelaySeconds=901)
    assert refused.value.response["Error"]["Code"].endswith("InvalidParameterValue")
    answer = sqs.send_message_batch(
        QueueUrl=queue.url,
        Entries=[
            {"Id": "kept", "MessageBody": body, "DelaySeconds": 900},
            {"Id": "refused", "MessageBody": body, "DelaySeconds": 901},
        ],
    )
    assert [entry["Id"] for entry in answer["Successful"]] == ["kept"]
    [failed] = answer["Failed"]
    assert (failed["Id"], failed["Code"], failed["SenderFault"]) == ("refused", "InvalidParameterValue", True)
    assert len(queue.waiting) == 1 and world.aws.sqs.delays_refused == 2
    assert _receive(queue, START + 899) == []
    assert len(_receive(queue, START + 900)) == 1


def test_a_received_message_is_hidden_for_its_visibility_timeout_and_redriven_after_max_receives() -> None:
    """Amazon SQS visibility timeout (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/
    SQSDeveloperGuide/sqs-visibility-timeout.html): a received message stays in the queue but no
    other receive gets it until its visibility timeout ends, unless it is deleted. Using dead-letter
    queues in Amazon SQS (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/
    sqs-dead-letter-queues.html): once a message's receive count exceeds the queue's maxReceiveCount,
    SQS moves it to the dead-letter queue (Sundial's stack sets 5, c.MAX_RECEIVE_COUNT)."""
    sqs = SqsModel()
    dead = sqs.create("dead")
    queue = sqs.create("jobs", dead)
    sqs.answer(
        "SendMessage", json.dumps({"QueueUrl": queue.url, "MessageBody": '{"job_id": "j"}'}).encode(), START
    )

    now = START
    for receive in range(1, c.MAX_RECEIVE_COUNT + 1):
        [message] = _receive(queue, now)
        assert message.receives == receive
        assert _receive(queue, now + 29.9) == []  # hidden while its visibility lasts
        now += 30
    assert _receive(queue, now) == []  # the receive after the fifth moves it instead
    assert len(dead.waiting) == 1

    sqs.answer(
        "SendMessage", json.dumps({"QueueUrl": queue.url, "MessageBody": '{"job_id": "k"}'}).encode(), now
    )
    [message] = _receive(queue, now)
    queue.delete(message.receipt)
    assert _receive(queue, now + 31) == []  # a deleted message never comes back


def test_standard_queue_copies_order_and_failed_entries_are_off_by_default() -> None:
    """Amazon SQS standard queues (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/
    SQSDeveloperGuide/standard-queues.html): at-least-once delivery, best-effort ordering; AWS gives
    no rate for either departure, so the model's are assumptions, off unless a scenario sets them."""
    rates = limits.DUPLICATE_RATE, limits.OUT_OF_ORDER_RATE, limits.FAILED_ENTRY_RATE
    assert [rate.value for rate in rates] == [0, 0, 0]
    sqs = SqsModel()
    queue = sqs.create("jobs")
    for n in range(100):
        sqs.answer(
            "SendMessage",
            json.dumps({"QueueUrl": queue.url, "MessageBody": json.dumps({"job_id": str(n)})}).encode(),
            START + n / 1000,
        )
    received = [json.loads(m.body)["job_id"] for _ in range(10) for m in _receive(queue, START + 1)]
    assert received == [str(n) for n in range(100)]


@pytest.fixture(scope="module")
def at_least_once() -> tuple[dict[str, Any], int]:
    """The named scenario in which SQS copies, reorders and fails entries; and how many messages the
    engine's sends handed back (released or held for the next tick) after its retries."""
    handed_back = [0]
    real_release = tick_sends.release

    def counting(engine: Any, failed: Any) -> None:
        handed_back[0] += 1
        real_release(engine, failed)

    tick_sends.release = counting  # type: ignore[assignment]
    try:
        report = run_scenario(NAMED["sqs-at-least-once"])
    finally:
        tick_sends.release = real_release  # type: ignore[assignment]
    return report, handed_back[0]


def test_duplicates_out_of_order_and_failed_batch_entries_still_come_out_exactly_once(
    at_least_once: tuple[dict[str, Any], int],
) -> None:
    """Amazon SQS at-least-once delivery (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/
    SQSDeveloperGuide/standard-queues-at-least-once-delivery.html): a copy of a message may be
    received again. Amazon SQS standard queues (https://docs.aws.amazon.com/AWSSimpleQueueService/
    latest/SQSDeveloperGuide/standard-queues.html): messages may arrive out of order. Amazon SQS API
    Reference, SendMessageBatch (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/
    APIReference/API_SendMessageBatch.html): each entry succeeds or fails on its own, a 200 answer
    listing the failed ones. The engine retries failed entries, hands back what still failed, and its
    fence drops every copy."""
    report, handed_back = at_least_once
    sqs = report["sqs"]
    assert sqs["duplicates_delivered"] > 0 and sqs["passed_over"] > 0 and sqs["entries_failed"] > 0
    assert sum(tick["send_failures"] for tick in report["ticks"]) > 0 and handed_back > 0
    assert report["dropped_at_fence"] >= sqs["duplicates_delivered"]
    for priority in report["priorities"].values():
        assert priority["never_called"] == priority["called_twice"] == priority["called_early"] == 0


# --- Lambda: the account's concurrency and the function scaling rate ---------------------------------


def test_every_function_draws_on_one_account_pool() -> None:
    """Lambda quotas (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html):
    concurrent executions, 1,000 by default, are a quota of the account in a Region, shared by all its
    functions. Lambda scaling behavior (https://docs.aws.amazon.com/lambda/latest/dg/
    scaling-behavior.html): at the limit further requests are throttled (429)."""
    _, world = _world(Settings(account_concurrency=3))
    workers = [world.functions["worker"].start() for _ in range(3)]
    assert all(started is not None for started in workers)

    for name in ("scheduler", "api", "worker"):
        assert world.functions[name].start() is None, name
    assert world.account.running == world.account.peak == 3
    env, _ = workers[0]  # type: ignore[misc]
    world.functions["worker"].end(env)
    assert world.functions["scheduler"].start() is not None  # the worker's room, taken by a tick


def test_a_reserved_function_keeps_its_room_and_runs_no_more_than_it() -> None:
    """Configuring reserved concurrency for a function (https://docs.aws.amazon.com/lambda/latest/dg/
    configuration-concurrency.html): reserved concurrency is the most a function runs at once, and
    no other function can use it; the functions without a reservation share the rest of the account.
    """
    _, world = _world(Settings(account_concurrency=110, scheduler_reserved=4))
    workers = [world.functions["worker"].start() for _ in range(110)]
    assert sum(started is not None for started in workers) == 106  # 110 less the scheduler's 4
    assert world.functions["api"].start() is None
    ticks = [world.functions["scheduler"].start() for _ in range(5)]
    assert [started is not None for started in ticks] == [True] * 4 + [False]  # its own 4, no more
    assert world.account.running == world.account.peak == 110


def test_a_reservation_must_leave_100_unreserved() -> None:
    """PutFunctionConcurrency (https://docs.aws.amazon.com/lambda/latest/api/
    API_PutFunctionConcurrency.html): a function may reserve concurrency as long as at least 100
    simultaneous executions stay unreserved for the functions without a limit of their own."""
    _world(Settings(account_concurrency=1000, scheduler_reserved=900))
    with pytest.raises(ValueError, match="leaves 99 unreserved"):
        _world(Settings(account_concurrency=1000, scheduler_reserved=901))
    with pytest.raises(ValueError, match="under the 100"):
        _world(Settings(account_concurrency=60, scheduler_reserved=2))


def test_the_account_limit_is_one_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch a model mutation turns off (bench/scale/world.py, ACCOUNT_CONCURRENCY_ENFORCED)."""
    monkeypatch.setattr(world_module, "ACCOUNT_CONCURRENCY_ENFORCED", False)
    _, world = _world(Settings(account_concurrency=1))
    assert all(world.functions[name].start() is not None for name in ("scheduler", "api", "worker"))


def test_a_function_makes_at_most_1000_new_environments_every_10_seconds() -> None:
    """Lambda scaling behavior (https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html):
    each function's concurrency scaling rate is 1,000 execution environment instances every 10
    seconds, refilled continuously and never saved up beyond 1,000; requests beyond it are throttled.
    Warm environments are reused without it."""
    sim = Sim(START)
    account = Account(10_000)  # a raised quota: the scaling rate binds first
    function = LambdaFunction(sim, account, "f", WORKER, 256)

    first = [function.start() for _ in range(1_500)]
    started = [s for s in first if s is not None]
    assert len(started) == 1_000 and function.throttles == 500
    sim.run(until=START + 5)  # half a window refills half the rate
    assert sum(function.start() is not None for _ in range(600)) == 500
    for env, _ in started:  # type: ignore[misc]
        function.end(env)
    assert all(function.start() is not None for _ in range(1_000))  # warm ones need no new room
    sim.run(until=START + 100)
    assert sum(function.start() is not None for _ in range(1_500)) == 1_000  # never more than 1,000


def test_a_throttled_tick_is_retried_by_lambda_a_second_then_twice_as_long() -> None:
    """How Lambda handles errors and retries with asynchronous invocation
    (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html): a throttled
    event (429) goes back to the queue and is retried for up to 6 hours, the interval growing from 1
    second to at most 5 minutes. EventBridge invokes the tick, and a tick its claimers, this way."""
    sim, world = _world(Settings(account_concurrency=2))
    with green(sim):
        held = [world.functions["worker"].start() for _ in range(2)]  # the workers fill the account

        first_refusal: list[float] = []

        def free_the_account_after_two_throttles() -> None:
            while world.functions["scheduler"].throttles < 2:
                if world.functions["scheduler"].throttles and not first_refusal:
                    first_refusal.append(sim.time())
                sim.sleep(0.01)
            for env, _ in held:  # type: ignore[misc]
                world.functions["worker"].end(env)

        sim.spawn(free_the_account_after_two_throttles, at=START)
        world.start_ticks(START + 60, START + 60)
        sim.run(until=START + 120)
    [tick] = world.ticks
    planned = START + 60
    assert tick.throttled == 2  # refused at once, then a second later; ran after 1 + 2 seconds
    assert tick.started_s - first_refusal[0] == pytest.approx(1 + 2, abs=0.02)
    assert planned + limits.TICK_START_S.value <= first_refusal[0] <= planned + limits.TICK_LATE_MAX_S.value
    assert world.functions["scheduler"].throttles == 2


def test_an_api_invocation_lambda_throttles_is_answered_500_and_the_import_retries_it() -> None:
    """AWS re:Post Knowledge Center, API Gateway REST API 'Internal server error' with a Lambda
    integration (https://repost.aws/knowledge-center/api-gateway-internal-server-error): a throttled
    backend makes API Gateway answer 500; the client retries it (docs/client.md, Retries). The api
    function shares the account with the rest: one concurrent execution here."""
    report = run_imports(
        Imports("throttled", importers=3, jobs_each=100, in_flight=1, settings={"account_concurrency": "1"})
    )
    assert report["lambda_throttled"] > 0
    assert report["imports_exited"] == {"ok": 3, "other": 0}
    assert report["created"] == report["jobs"] == report["job_items_in_table"] == 300
    assert report["peak_invocations"] == 1


# --- Lambda: SQS event sources -------------------------------------------------------------------


def _event_source_run(settings: Settings, seconds: float) -> tuple[EventSource, list[tuple[float, int]]]:
    """The high queue's event source over a backlog of 5,000 messages, each invocation held 30 s;
    its busy invocations sampled every half second."""
    sim, world = _world(settings)
    queue = world.queues[Priority.HIGH]
    for n in range(5_000):
        queue.put(_message(n, START))

    def hold(queue: Queue, batch: list[Any], env: Environment, cold: bool) -> None:
        sim.sleep(30)
        for message in batch:
            queue.delete(message.receipt)

    world.invoke_worker = hold  # type: ignore[method-assign]
    source = EventSource(world, Priority.HIGH, queue)
    samples: list[tuple[float, int]] = []

    def sample() -> None:
        while True:
            samples.append((sim.time() - START, source.busy))
            sim.sleep(0.5)

    with green(sim):
        sim.spawn(source.run, at=START)
        sim.spawn(sample, at=START)
        sim.run(until=START + seconds)
    return source, samples


def _message(n: int, at: float) -> Message:
    return Message(str(n), json.dumps({"job_id": str(n)}), at)


def _busy_at(samples: list[tuple[float, int]], second: float) -> int:
    return max(busy for at, busy in samples if at <= second)


def test_an_event_source_in_the_default_mode_starts_at_5_and_adds_300_a_minute_up_to_its_maximum() -> None:
    """Configuring scaling behavior for SQS event source mappings (https://docs.aws.amazon.com/
    lambda/latest/dg/services-sqs-scaling.html): Lambda starts with five concurrent batches, adds up to
    300 concurrent invocations a minute while messages remain, up to 1,250, and MaximumConcurrency
    limits how many one event source invokes."""
    settings = Settings()
    settings.set("max_concurrency.high", "100")
    source, samples = _event_source_run(settings, 40)
    assert _busy_at(samples, 0) == 5
    assert _busy_at(samples, 10) <= 5 + 300 / 6 + 1
    assert _busy_at(samples, 10) > 5 + 300 / 6 - 10
    assert source.peak == 100  # MaximumConcurrency


def test_provisioned_pollers_start_warm_and_are_not_bound_by_maximum_concurrency() -> None:
    """Configuring scaling behavior for SQS event source mappings (https://docs.aws.amazon.com/
    lambda/latest/dg/services-sqs-scaling.html): MaximumConcurrency and provisioned mode are mutually
    exclusive; provisioned mode scales about three times faster (1,000 concurrent invocations a
    minute). Lambda parameters for Amazon SQS event source mappings (https://docs.aws.amazon.com/
    lambda/latest/dg/services-sqs-parameters.html): ProvisionedPollerConfig sets 2-200 minimum and
    2-2,000 maximum dedicated pollers, each handling up to 10 concurrent invocations; the minimum is
    kept ready (ProvisionedPollerConfig, https://docs.aws.amazon.com/lambda/latest/api/
    API_ProvisionedPollerConfig.html)."""
    settings = Settings()
    settings.set("max_concurrency.high", "20")  # what the stack leaves out in provisioned mode
    settings.set("provisioned_pollers", "5,30")
    source, samples = _event_source_run(settings, 40)
    assert _busy_at(samples, 0) == 5 * 10  # the minimum pollers' invocations, at once
    assert _busy_at(samples, 10) <= 50 + 1000 / 6 + 1
    assert source.peak == 30 * 10  # the maximum pollers bound it, not MaximumConcurrency's 20


def test_an_event_source_whose_function_is_throttled_backs_off() -> None:
    """Lambda scaling behavior (https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html):
    an invocation beyond the account's concurrency is throttled; the event source does not invoke
    past it and waits before it polls again (how long is not published: a second here)."""
    source, samples = _event_source_run(Settings(account_concurrency=3), 10)
    assert max(busy for _, busy in samples) == 3
    assert 0 < source.throttles <= 10 / limits.ESM_THROTTLE_BACKOFF_S.value + 1


# --- Lambda: cold starts and the schedule's lateness ------------------------------------------------


def test_an_environment_keeps_its_worker_from_one_invocation_to_the_next() -> None:
    """Lambda runs an execution environment's invocations one after another in one process, and the
    worker function keeps one worker a process (sundial/functions/worker.py): what its limit gate
    remembers, a key's shard count and that the key was limited, outlives an invocation. "After the
    function and all extensions have completed, Lambda maintains the execution environment for some
    time in anticipation of another function invocation" (AWS Lambda Developer Guide, "Understanding
    the Lambda execution environment lifecycle",
    https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html)."""
    sim, world = _world()
    queue = world.queues[Priority.HIGH]
    first, other = Environment(256), Environment(256)
    kept = []

    def invocations() -> None:
        for env in (first, first, other):
            world.invoke_worker(queue, [], env, cold=False)
            kept.append(env.kept["worker"])

    with green(sim):
        sim.spawn(invocations, at=START)
        sim.run(until=START + 1)
    assert kept[0] is kept[1]  # the same process, the same worker
    assert kept[2] is not kept[0]  # another environment is another process


def test_a_cold_start_is_the_modules_import_on_a_full_vcpu_whatever_the_memory() -> None:
    """Serverless Land (AWS), Effectively running Java on Serverless, Utilize initialization phase
    (https://serverlessland.com/content/service/lambda/guides/effectively-running-java-on-serverless/
    init-heavy-lifting): an on-demand function's initialization uses a full vCPU, not throttled, for
    at most 10 seconds. A new environment imports the function's module first: its measured CPU, on
    that vCPU, so a worker at 256 MB (0.145 vCPU once invoked) starts as fast as one at 1,769 MB."""
    sim = Sim(START)
    small = LambdaFunction(sim, Account(1000), "w", WORKER, 256)
    large = LambdaFunction(sim, Account(1000), "w", WORKER, 1769)
    assert small.cold_start_s() == pytest.approx(limits.IMPORT_CPU_S[WORKER].value)
    assert large.cold_start_s() == small.cold_start_s() < 10


def test_the_import_table_matches_this_machine() -> None:
    """The cold-start table (bench/scale/limits.py, IMPORT_CPU_S) was measured here: an import far
    from it (a heavier module, a slower machine) must be measured again."""
    measured = statistics.median(_import_cpu_s(WORKER) for _ in range(3))
    assert limits.IMPORT_CPU_S[WORKER].value / 2.5 < measured < limits.IMPORT_CPU_S[WORKER].value * 2.5


def _import_cpu_s(module: str) -> float:
    code = f"import time; t = time.process_time(); import {module}; print(time.process_time() - t)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"AWS_DEFAULT_REGION": "us-east-1", "PATH": ""},
    )
    return float(done.stdout.strip().splitlines()[-1])


def test_the_schedule_invokes_each_tick_up_to_several_seconds_late_the_same_for_a_seed() -> None:
    """Tutorial: Create an EventBridge scheduled rule for AWS Lambda functions
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-run-lambda-schedule.html): there can
    be a delay of several seconds between the rule's time and the target running. The model draws
    each tick's lateness from the run's seed (ASSUMPTION: 'several' read as at most 5 s)."""

    def draws(seed: int) -> list[float]:
        return _draws(World(Sim(START), Settings(), seed).scheduler_function.lateness_s, 200)

    first, again, other = draws(7), draws(7), draws(8)
    assert first == again and first != other
    assert all(limits.TICK_START_S.value <= late <= limits.TICK_LATE_MAX_S.value for late in first)
    assert max(first) > 3  # several seconds, not 50 ms


def _draws(draw: Callable[[], float], n: int) -> list[float]:
    return [draw() for _ in range(n)]
