"""A scenario: which jobs exist, when they fall due, which fail; run on the model, and its report.

Jobs are built by the API's own code (JobService._new_job: validation, first occurrence, placement)
and stored as the store writes them (items.job_to_item), without a request each: a million creates
through the model would be most of the run. Small scenarios create through JobService.create, every
write a request. Active jobs that fall due after the run are not materialised: they touch nothing a
tick or a worker reads (the due index holds only what is due), and count only towards the table's
size (`active` in the report), which at 10 GB a partition does not bind before about 14M jobs.
"""

from __future__ import annotations

import gc
import json
import math
import os
import random
import resource
import statistics
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bench.scale import cpu, limits, sampling
from bench.scale.runtime import Sim, collector_off, green
from bench.scale.tables import CrossChecked
from bench.scale.world import CallRecord, Settings, World, occurrences
from sundial.contract.jobs import JobCreate
from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from sundial.shared.clock import format_rfc3339
from sundial.shared.dispatch import Dispatcher
from sundial.shared.schedules.windows import start_instant
from sundial.shared.service.service import JobService
from sundial.shared.store import items

START_S = 1_893_488_400.0  # 2030-01-01T09:00:00Z, the instant the due-at-once jobs fall due
LEAD_S = 150.0  # jobs are created this long before their instant: placed ahead, sent without a claim


@dataclass
class Scenario:
    active: int = 0
    due_at_once: int = 0
    per_minute: int = 0
    minutes: int = 1
    mix: tuple[int, int, int] = (1, 1, 1)
    failing: float = 0.0
    recurring: int = 0
    kill_tick_at: float | None = None
    kill_tick_after_sends: int | None = None  # the kill lands inside the send that takes this message
    overlap_tick_at: float | None = None
    overlap_tick_after_sends: int | None = None  # another tick starts once the killable one sent this many
    through_api: bool = False
    window_seconds: int = 0  # the one-offs' spread window
    break_conditions: bool = False  # a model that lies, for the test that must catch it
    # One limit key for every job of the run (docs/api.md, "Limits"), when either is set.
    limit_per_second: float | None = None
    limit_concurrent: int | None = None
    settings: Settings = field(default_factory=Settings)
    seed: int = 7
    # One real worker's delivery in this many of the path a stand-in knows (bench/scale/sampling.py);
    # 0 runs every delivery on the real worker; None samples from 200,000 jobs due in the run.
    sample_every: int | None = None


def _priorities(n: int, mix: tuple[int, int, int], rng: random.Random) -> list[Priority]:
    weights = [max(0, w) for w in mix]
    return rng.choices(list(c.PRIORITIES), weights=weights, k=n)


def _specs(scenario: Scenario, rng: random.Random) -> list[tuple[JobCreate, float]]:
    """Each job's create request and the virtual time it is created at."""
    out: list[tuple[JobCreate, float]] = []
    due = [START_S] * scenario.due_at_once
    for minute in range(scenario.minutes if scenario.per_minute else 0):
        due += [START_S + minute * 60 + rng.random() * 60 for _ in range(scenario.per_minute)]
    priorities = _priorities(len(due) + scenario.recurring, scenario.mix, rng)
    for n, at in enumerate(due):
        name = f"{'fail' if rng.random() < scenario.failing else 'ok'}-{n}"
        spec = JobCreate.model_validate(
            {
                "name": name,
                "run_at": format_rfc3339(int(at * 1000)),
                "target": _target(name),
                "priority": priorities[n],
                "max_retries": 2,
                "backoff": [5, 10],
                "timeout_seconds": 30,
                "window_seconds": scenario.window_seconds,
                **_limit_key(scenario),
            }
        )
        out.append((spec, at - LEAD_S))
    for n in range(scenario.recurring):
        name = f"{'fail' if rng.random() < scenario.failing else 'ok'}-rate-{n}"
        spec = JobCreate.model_validate(
            {
                "name": name,
                "schedule": "rate(1 minute)",
                "target": _target(name),
                "priority": priorities[len(due) + n],
                "max_retries": 1,
                "backoff": [5],
                "timeout_seconds": 30,
                **_limit_key(scenario),
            }
        )
        out.append((spec, START_S - LEAD_S))
    return out


LIMIT_KEY = "scale-key"

# Scenarios by name, beside `make scale`'s goals: SQS as a standard queue may behave (copies
# delivered again, messages out of order, failed batch entries, each rarer in AWS than here), which
# the engine's fence, its retry of a batch's failed entries and its release of what still failed must
# carry to exactly once.
NAMED: dict[str, Scenario] = {
    "sqs-at-least-once": Scenario(
        due_at_once=300,
        per_minute=60,
        minutes=2,
        settings=Settings(sqs_duplicates=0.05, sqs_out_of_order=0.1, sqs_failed_entries=0.25),
    ),
}


def _limited(scenario: Scenario) -> bool:
    return scenario.limit_per_second is not None or scenario.limit_concurrent is not None


def _limit_key(scenario: Scenario) -> dict[str, Any]:
    return {"limit_key": LIMIT_KEY} if _limited(scenario) else {}


def _target(name: str) -> dict[str, Any]:
    """An endpoint that answers 500 for a failing job's name (world.fails), 200 otherwise."""
    outcome = "fail" if name.startswith("fail") else "ok"
    return {"type": "http", "url": f"https://jobs.example.com/{outcome}/{name}"}


def build(scenario: Scenario, sim: Sim) -> tuple[World, JobService]:
    rng = random.Random(scenario.seed)
    specs = _specs(scenario, rng)
    world = World(sim, scenario.settings, scenario.seed)
    service = JobService(
        world.store, Dispatcher(*world.dispatch_args), world.clock, allow_private_targets=False
    )
    world.aws.dynamodb.stored_bytes_extra = scenario.active * limits.ITEM_BYTES.value
    function = world.scheduler_function
    function.kill_tick_at = scenario.kill_tick_at
    function.kill_tick_after_sends = scenario.kill_tick_after_sends
    function.overlap_tick_after_sends = scenario.overlap_tick_after_sends
    world.aws.dynamodb.break_conditions = scenario.break_conditions
    if _limited(scenario):
        rate = scenario.limit_per_second
        burst = max(1, math.ceil(rate)) if rate is not None else 1
        sim.spawn(
            world.store.put_limit, LIMIT_KEY, scenario.limit_concurrent, rate, burst, 0, at=START_S - LEAD_S
        )
    for spec, at in specs:
        due_ms = None if spec.run_at is None else int(spec.run_at.timestamp() * 1000)
        if scenario.through_api:
            sim.spawn(_create, service, spec, world.jobs, world.allowed_calls, due_ms, at=at)
        else:
            job = service._new_job(spec, int(at * 1000), 0)
            world.aws.dynamodb.seed(items.job_to_item(job, "seed", scenario.settings.due_shards))
            world.jobs[job.id] = (spec.priority, due_ms)
            world.allowed_calls[job.id] = _allowed_calls(spec)
    return world, service


def _create(
    service: JobService, spec: JobCreate, jobs: dict[str, Any], allowed: dict[str, int], due_ms: int | None
) -> None:
    view, _ = service.create(spec)
    jobs[view.id] = (spec.priority, due_ms)
    allowed[view.id] = _allowed_calls(spec)


def _allowed_calls(spec: JobCreate) -> int:
    """Calls one occurrence may take: one when its target answers, every attempt when it fails."""
    return 1 if (spec.name or "").startswith("ok") else spec.max_retries + 1


def run(scenario: Scenario, end_s: float | None = None) -> dict[str, Any]:
    with collector_off():
        return report(scenario, *_simulate(scenario, end_s))


def run_apart(scenario: Scenario) -> dict[str, Any]:
    """`run` in a child process that hands its report back and exits with the collector never back
    on: the first collection after a run reads every object the run made (they are all young, the
    collector having been off), 1.8 s of CPU after 50,000 jobs and most of a minute after a million.
    Adds the wall and CPU seconds the run took (the child's)."""
    started, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's lines run after the coverage of this process
        os.close(reading)
        gc.disable()  # `run` leaves it as it found it: off, as the child exits unswept
        status = 1
        try:
            text = json.dumps(run(scenario))
            status = 0
        except BaseException:  # whatever it was goes to the parent as the run's error
            text = json.dumps({"error": traceback.format_exc()})
        with os.fdopen(writing, "w") as out:
            out.write(text)
        os._exit(status)
    os.close(writing)
    with os.fdopen(reading) as answer:
        text = answer.read()
    _, status = os.waitpid(child, 0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result: dict[str, Any] = json.loads(text) if text else {}
    if status != 0 and "error" not in result:
        result["error"] = f"the run's process ended with status {status} and no report"
    result["wall_seconds"] = round(time.monotonic() - started, 1)
    result["cpu_seconds"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)
    return result


def measure_cpu(scenario: Scenario) -> dict[str, list[float]]:
    """Each kind of segment's count and CPU seconds, as this host measured them over the run."""
    _, sim = _simulate(replace(scenario, settings=replace(scenario.settings, cpu="measured")), None)
    return sim.cpu.measured


def _simulate(scenario: Scenario, end_s: float | None) -> tuple[World, Sim]:
    table = cpu.committed() if scenario.settings.cpu == "table" else None
    sim = Sim(START_S - LEAD_S - 1, cpu=table, seed=scenario.seed)
    with green(sim):
        world, _ = build(scenario, sim)
        end = end_s if end_s is not None else START_S + scenario.minutes * 60 + 240 + scenario.window_seconds
        first_tick = START_S - LEAD_S + 30
        extra = [] if scenario.overlap_tick_at is None else [first_tick + 60 * 2 + scenario.overlap_tick_at]
        world.start_ticks(first_tick, end, extra)
        world.start_pollers()
        every = sampling.sampling_for(_due(scenario), scenario.sample_every)
        if every:
            sampling.install(world, every)
        sim.run(until=end)
    return world, sim


def _due(scenario: Scenario) -> int:
    return scenario.due_at_once + scenario.per_minute * scenario.minutes


def report(scenario: Scenario, world: World, sim: Sim) -> dict[str, Any]:
    names = {job_id: priority for job_id, (priority, _) in world.jobs.items()}
    per_priority: dict[str, dict[str, Any]] = {}
    grouped = occurrences(world.target.calls)
    expected = _expected(world, grouped)
    start = _starts(scenario, world, set(grouped) | expected)
    # Split by priority in one pass each: a million occurrences are too many to read three times.
    called_by: dict[Any, dict[tuple[str, int], list[CallRecord]]] = {p: {} for p in c.PRIORITIES}
    for key, calls in grouped.items():
        called_by.get(names.get(key[0]), {})[key] = calls
    wanted_by: dict[Any, set[tuple[str, int]]] = {p: set() for p in c.PRIORITIES}
    for key in expected:
        wanted_by.get(names.get(key[0]), set()).add(key)
    for priority in c.PRIORITIES:
        mine, wanted = called_by[priority], wanted_by[priority]
        firsts = [min(call.at_ms for call in calls) - start[key] for key, calls in mine.items()]
        per_priority[priority.value] = {
            "occurrences": len(wanted),
            "never_called": len(wanted - set(mine)),
            "called_twice": sum(
                1
                for key, calls in mine.items()
                if _first_attempts(calls) > 1 or len(calls) > world.allowed_calls.get(key[0], 1)
            ),
            "called_early": sum(1 for key, calls in mine.items() if min(x.at_ms for x in calls) < start[key]),
            "lateness_ms": _percentiles(firsts),
        }
    return {
        "scenario": {
            k: v
            for k, v in asdict(scenario).items()
            if k != "settings" and (k != "sample_every" or world.sampler is not None)
        },
        "settings": asdict(scenario.settings),
        "priorities": per_priority,
        "throttles": asdict(world.aws.dynamodb.throttles),
        "dropped_at_fence": world.dropped_at_fence,
        "in_flight_cap_hits": sum(q.cap_hits for q in world.queues.values()),
        "sent_after_instant": sum(q.sent_late for q in world.queues.values()),
        "copies_sent": sum(q.copies for q in world.queues.values()),
        "dead_letter_messages": sum(
            len(q.waiting) for q in world.aws.sqs.queues.values() if q.name == c.DEAD_LETTER_QUEUE_NAME
        ),
        "overlapping_ticks": _overlapping(world),
        "lambda": _lambda_figures(world),
        "sqs": {
            "duplicates_delivered": sum(q.duplicates for q in world.queues.values()),
            "passed_over": sum(q.passed_over for q in world.queues.values()),
            "entries_failed": world.aws.sqs.entries_failed,
            "delays_refused": world.aws.sqs.delays_refused,
        },
        **_burst(grouped),
        **_limit_figures(scenario, world, grouped),
        "ticks": [
            {
                "at_s": round(t.started_s - START_S, 1),
                "kind": t.kind,
                "claimers": t.claimers,
                "duration_s": None if t.duration_s is None else round(t.duration_s, 2),
                "out_of_time": t.out_of_time,
                "ran_past_deadline": t.duration_s is not None
                and t.duration_s > limits.TICK_TIMEOUT_S.value - 10,
                "killed": t.killed,
                "timed_out": t.timed_out,
                "throttled": t.throttled,
                "send_failures": t.send_failures,
                "claimed": t.claimed,
                "dispatched": t.dispatched,
                "sent_while_running": t.sent_while_running,
            }
            for t in world.ticks
            if t.claimed
            or t.dispatched
            or t.killed
            or t.timed_out
            or t.throttled
            or t.send_failures
            or (t.duration_s or 0) > 1
        ],
        "calls": dict(world.aws.dynamodb.calls) | {f"sqs.{k}": v for k, v in world.aws.sqs.calls.items()},
        "green_switches": sim.switches,
        "cpu": sim.cpu.summary(),
        "botocore_calls": {
            "direct": sum(client.direct_calls for client in world.aws.direct_clients),
            "full_path": sum(client.full_path_calls for client in world.aws.direct_clients),
        },
        **_cross_check(world),
        **sampling.report_of(world.sampler),
    }


def _lambda_figures(world: World) -> dict[str, Any]:
    """The account's concurrency as every function used it, and what Lambda throttled."""
    return {
        "account_peak": world.account.peak,
        "account_limit": world.account.limit,
        "functions": {
            name: {"peak": f.peak, "cold_starts": f.cold_starts, "throttles": f.throttles}
            for name, f in world.functions.items()
        },
        "event_sources": [
            {"queue": s.queue.name, "peak": s.peak, "allowed": int(s.allowed), "throttled": s.throttles}
            for s in world.event_sources
        ],
        "ticks_abandoned": world.scheduler_function.abandoned,
    }


def _starts(scenario: Scenario, world: World, keys: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Each occurrence's start, which lateness and earliness are measured from: inside its one-off
    job's spread window, or its instant."""
    one_offs = {job_id for job_id, (_, due_ms) in world.jobs.items() if due_ms is not None}
    window = scenario.window_seconds
    return {
        (job_id, at_ms): start_instant(job_id, at_ms, window) if job_id in one_offs else at_ms
        for job_id, at_ms in keys
    }


def _burst(grouped: dict[tuple[str, int], list[CallRecord]]) -> dict[str, Any]:
    """How the targets met the occurrences' first calls: the busiest second, and from the first to
    the last."""
    firsts = sorted(min(call.at_ms for call in calls) for calls in grouped.values())
    per_second = Counter(at_ms // 1000 for at_ms in firsts)
    return {
        "busiest_second_calls": max(per_second.values(), default=0),
        "first_calls_span_s": round((firsts[-1] - firsts[0]) / 1000, 1) if firsts else 0.0,
    }


def _limit_figures(
    scenario: Scenario, world: World, grouped: dict[tuple[str, int], list[CallRecord]]
) -> dict[str, Any]:
    """For a run on one limit key: the most starts in any second, the most calls open at once, and
    how long from the instant until the last first call (the drain)."""
    if not _limited(scenario):
        return {}
    starts = sorted(call.at_ms for calls in grouped.values() for call in calls)
    window_most = 0
    low = 0
    for high, at in enumerate(starts):
        while starts[low] <= at - 1000:
            low += 1
        window_most = max(window_most, high - low + 1)
    firsts = [min(call.at_ms for call in calls) for calls in grouped.values()]
    return {
        "limit": {
            "key": LIMIT_KEY,
            "per_second": scenario.limit_per_second,
            "max_concurrent": scenario.limit_concurrent,
            "max_starts_in_a_second": window_most,
            "max_running": world.target.most_open,
            "drain_s": round(max(firsts) / 1000 - START_S, 1) if firsts else None,
            "held_back": world.held_back,
        }
    }


def _overlapping(world: World) -> int:
    """Ticks that started while another one still ran (claimers apart)."""
    ticks = [t for t in world.ticks if t.kind == "tick"]
    spans = [(t.started_s, t.ended_s if t.ended_s is not None else t.started_s) for t in ticks]
    return sum(1 for n, (start, _) in enumerate(spans) if any(s <= start < e for s, e in spans[:n]))


def _cross_check(world: World) -> dict[str, Any]:
    """With both tables, how many requests the native table answered as moto did, and where not."""
    table = world.aws.dynamodb.table
    if not isinstance(table, CrossChecked):
        return {}
    return {
        "cross_check": {
            "compared": table.compared,
            "answers_differing": table.differences[:20],
            "items_differing": table.item_differences()[:20],
        }
    }


def _first_attempts(calls: list[CallRecord]) -> int:
    """Calls of one occurrence's first attempt: more than one is a duplicate (retries are not)."""
    attempts = [call.attempt for call in calls]
    return max(attempts.count(a) for a in set(attempts))


def _expected(world: World, called: dict[tuple[str, int], list[CallRecord]]) -> set[tuple[str, int]]:
    """Every occurrence that should have been called: the one-offs' instants, and each recurring
    job's instants that were called (the run ends mid-series)."""
    expected = set(called)
    expected |= {(job_id, due_ms) for job_id, (_, due_ms) in world.jobs.items() if due_ms is not None}
    return expected


def _percentiles(values: list[int]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "max": None}
    ordered = sorted(values)
    return {
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max": ordered[-1],
    }
