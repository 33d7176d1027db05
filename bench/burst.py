"""A burst: 1,000 one-off jobs due in the same second on the local stack, three times.

The jobs are loaded straight into the table as the API stores them (PENDING, due at the instant,
priorities a third each), so that loading them is no part of what is measured; the stack's own tick
claims them and its workers run them. Lateness per priority says whether the queues keep their
order under load; the drain rate (jobs started per second, from the instant to the last start) is
held to the emulator's limit: its raw conditional-write rate, measured on the same emulator just
before, over the writes one execution needs. The emulator serialises DynamoDB, so on it a burst's
lateness measures the write path; in AWS it is the workers' concurrency (docs/operations.md).
"""

from __future__ import annotations

import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ulid import ULID

from bench.harness import (
    Repeated,
    Row,
    batch_write,
    client,
    http_target,
    now_ms,
    pending_job,
    percentile,
    raw_claim,
)
from bench.stack import Listener, LocalStack
from sundial.contract.vocabulary import Priority
from sundial.local_stack.resources import ensure_resources
from sundial.shared import constants as c
from sundial.shared.store import items

JOBS = 1000
REPETITIONS = 3
# Loaded this long before the instant: within it lies one 60 s tick at least 15 s before the instant
# (the horizon), which claims the burst and sends it with delays.
LEAD_SECONDS = 85.0
GRACE_SECONDS = 120.0
RAW_UPDATES = 500
RAW_THREADS = 8
GOAL_DRAIN = 0.8


def raw_write_rate(stack: LocalStack, run: int) -> float:
    """Conditional UpdateItems per second on the stack's own emulator, on a table of their own."""
    region = "us-east-1"
    dynamodb = client("dynamodb", stack.endpoint_url, region)
    sqs = client("sqs", stack.endpoint_url, region)
    table = ensure_resources(dynamodb, sqs, prefix=f"raw-burst-{run}-").table_name
    later = now_ms() + 24 * 3600 * 1000
    loaded = [
        items.job_to_item(pending_job(str(ULID()), later + n, Priority.LOW, later), "bench-raw")
        for n in range(RAW_UPDATES)
    ]
    batch_write(dynamodb, table, loaded)

    def update(item: dict[str, Any]) -> None:
        raw_claim(dynamodb, table, item)

    started = time.perf_counter()
    with ThreadPoolExecutor(RAW_THREADS) as pool:
        list(pool.map(update, loaded))
    return len(loaded) / (time.perf_counter() - started)


def one_burst(stack: LocalStack, listener: Listener, run: int) -> dict[str, Any]:
    region = "us-east-1"
    dynamodb = client("dynamodb", stack.endpoint_url, region)
    instant_s = int(time.time() + LEAD_SECONDS)
    instant_ms = instant_s * 1000
    rng = random.Random(run)
    priorities = {}
    jobs = []
    for n in range(JOBS):
        priority = c.PRIORITIES[n % 3]
        job = pending_job(str(ULID()), instant_ms, priority, now_ms())
        job = job.model_copy(update={"target": http_target(listener.url(f"ok/burst-{run}"))})
        priorities[job.id] = priority
        jobs.append(items.job_to_item(job, "bench-burst"))
    rng.shuffle(jobs)
    batch_write(dynamodb, c.TABLE_NAME, jobs)
    deadline = instant_s + GRACE_SECONDS
    while time.time() < deadline:
        if len({call.job_id for call in listener.calls()} & priorities.keys()) == JOBS:
            break
        time.sleep(0.5)
    time.sleep(3.0)  # time for a second call of any job to show
    counts = dict.fromkeys(priorities, 0)
    first: dict[str, float] = {}
    for call in listener.calls():
        if call.job_id in counts:
            counts[call.job_id] += 1
            first[call.job_id] = min(first.get(call.job_id, call.received_at), call.received_at)
    late = {p: [first[j] - instant_s for j in first if priorities[j] == p] for p in c.PRIORITIES}
    every = [v for values in late.values() for v in values]
    last = max(every) if every else float("nan")
    return {
        "lateness": {
            p.value: {
                "p50": percentile(values, 0.5),
                "p99": percentile(values, 0.99),
                "max": max(values) if values else float("nan"),
            }
            for p, values in late.items()
        },
        "all_p50": percentile(every, 0.5),
        "all_p99": percentile(every, 0.99),
        "earliest": min(every) if every else float("nan"),
        "started": len(first),
        "once": sum(1 for n in counts.values() if n == 1),
        "drain_per_second": len(first) / last if last > 0 else float("nan"),
    }


def measure(stack: LocalStack, listener: Listener, writes_per_execution: float) -> list[Row]:
    runs, raws = [], []
    for n in range(REPETITIONS):
        raws.append(raw_write_rate(stack, n))
        runs.append(one_burst(stack, listener, n))
    limits = [raw / writes_per_execution for raw in raws]
    drain = Repeated(tuple(r["drain_per_second"] / limit for r, limit in zip(runs, limits, strict=True)))
    lateness = {
        (p.value, q): Repeated(tuple(r["lateness"][p.value][q] for r in runs))
        for p in c.PRIORITIES
        for q in ("p50", "p99", "max")
    }
    ordered = (
        lateness[("high", "p99")].median
        < lateness[("medium", "p50")].median
        < lateness[("low", "p50")].median
    )
    once = sum(r["once"] for r in runs)
    earliest = min(r["earliest"] for r in runs)
    detail = {
        "jobs_per_burst": JOBS,
        "bursts": REPETITIONS,
        "writes_per_execution": writes_per_execution,
        "raw_conditional_writes_per_second": [round(v, 1) for v in raws],
        "limit_executions_per_second": [round(v, 1) for v in limits],
        "drain_executions_per_second": [round(r["drain_per_second"], 1) for r in runs],
        "lateness_seconds": {f"{p} {q}": figure.as_dict(3) for (p, q), figure in lateness.items()},
        "per_run": runs,
    }
    rows = [
        Row(
            f"burst of {JOBS:,} due in one second: {p} lateness p50 / p99 / max",
            round(lateness[(p, "p99")].median, 3),
            "s (p99)",
            "high p99 < medium p50 < low p50" if p == "high" else None,
            ordered if p == "high" else None,
            detail if p == "high" else {},
            f"p50 {lateness[(p, 'p50')].median:.2f} / p99 {lateness[(p, 'p99')].median:.2f} / "
            f"max {lateness[(p, 'max')].median:.2f} s; p99 {lateness[(p, 'p99')].describe(2)}",
        )
        for p in ("high", "medium", "low")
    ]
    rows.append(
        Row(
            "burst: jobs called exactly once, never early",
            once,
            f"of {JOBS * REPETITIONS}",
            f"= {JOBS * REPETITIONS}, none early",
            once == JOBS * REPETITIONS and earliest >= 0,
            spread=f"earliest start {earliest:+.3f} s",
        )
    )
    rows.append(
        Row(
            "burst drain rate / the emulator's limit (raw conditional writes/s / writes per execution)",
            round(drain.median, 2),
            "x",
            f">= {GOAL_DRAIN}",
            drain.median >= GOAL_DRAIN,
            {
                "limits_executions_per_second": [round(v, 1) for v in limits],
                "drain_executions_per_second": [round(r["drain_per_second"], 1) for r in runs],
                "writes_per_execution": writes_per_execution,
            },
            drain.describe(2)
            + f"; {statistics.median([r['drain_per_second'] for r in runs]):.0f} jobs/s vs a limit of "
            + f"{statistics.median(limits):.0f} ({writes_per_execution:g} writes each)",
        )
    )
    return rows
