"""Start lateness: three runs of 300 one-off jobs spread over the next 90 s, on the local stack's 60 s
tick; each figure is the median of the runs, with their range.

Lateness is the moment the target's request arrives minus the job's instant, both on this machine's
clock. Jobs due within the tick's horizon are sent by their create; the rest wait in the due index
for a tick, so both paths are measured.
"""

from __future__ import annotations

import random
import time

from bench.harness import Repeated, Row, percentile
from bench.stack import Listener, LocalStack, parse_rfc3339, rfc3339

JOBS = 300
SPREAD_SECONDS = 90.0
REPETITIONS = 3
# Time to create every job before the first one is due (creates run at a few dozen a second here).
LEAD_SECONDS = 20.0
GRACE_SECONDS = 15.0
GOAL_P99_SECONDS = 0.25


def run_jobs(
    stack: LocalStack, listener: Listener, instants: list[float], body: dict[str, object]
) -> tuple[dict[str, float], float]:
    """Creates one job per instant; returns {job id: instant} and the seconds the creates took."""
    started = time.monotonic()
    bodies = [{**body, "name": f"bench-{n}", "run_at": rfc3339(at)} for n, at in enumerate(instants)]
    jobs = stack.create_all(bodies)
    took = time.monotonic() - started
    return {job["id"]: parse_rfc3339(job["run_at"]) for job in jobs}, took


def wait_for_calls(listener: Listener, scheduled: dict[str, float]) -> None:
    """Until every job was called once (or GRACE_SECONDS after the last instant), then a little more,
    so that a second call of any job has time to show."""
    deadline = max(scheduled.values()) + GRACE_SECONDS
    while time.time() < deadline:
        called = {call.job_id for call in listener.calls()}
        if called >= scheduled.keys():
            break
        time.sleep(0.5)
    time.sleep(3.0)


def lateness_of(listener: Listener, scheduled: dict[str, float]) -> tuple[list[float], dict[str, int]]:
    """Seconds late of each job's first call, and how many calls each job had."""
    counts = dict.fromkeys(scheduled, 0)
    first: dict[str, float] = {}
    for call in listener.calls():
        if call.job_id in counts:
            counts[call.job_id] += 1
            first[call.job_id] = min(first.get(call.job_id, call.received_at), call.received_at)
    return [first[job_id] - scheduled[job_id] for job_id in first], counts


def one_run(stack: LocalStack, listener: Listener, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    start = time.time()
    instants = sorted(start + LEAD_SECONDS + rng.uniform(0, SPREAD_SECONDS) for _ in range(JOBS))
    target = {"type": "http", "url": listener.url(f"ok/lateness-{seed}")}
    scheduled, create_seconds = run_jobs(stack, listener, instants, {"target": target})
    created_by = time.time()
    wait_for_calls(listener, scheduled)
    late, counts = lateness_of(listener, scheduled)
    return {
        "p50": percentile(late, 0.5),
        "p99": percentile(late, 0.99),
        "max": max(late) if late else float("nan"),
        "earliest": min(late) if late else float("nan"),
        "once": sum(1 for n in counts.values() if n == 1),
        "never_called": sum(1 for n in counts.values() if n == 0),
        "called_more_than_once": sum(1 for n in counts.values() if n > 1),
        "create_seconds": create_seconds,
        "due_before_creates_finished": sum(1 for at in instants if at < created_by),
    }


def measure(stack: LocalStack, listener: Listener) -> list[Row]:
    runs = [one_run(stack, listener, seed=JOBS + n) for n in range(REPETITIONS)]
    figures = {name: Repeated(tuple(run[name] for run in runs)) for name in ("p50", "p99", "max")}
    once = int(sum(run["once"] for run in runs))
    total = JOBS * REPETITIONS
    earliest = min(run["earliest"] for run in runs)
    detail = {
        "jobs_per_run": JOBS,
        "runs": REPETITIONS,
        "spread_seconds": SPREAD_SECONDS,
        "figures_seconds": {name: figure.as_dict() for name, figure in figures.items()},
        "per_run": [{k: round(v, 4) for k, v in run.items()} for run in runs],
        "earliest_seconds": round(earliest, 4),
    }
    p99 = figures["p99"].median
    return [
        Row(
            "start lateness p50",
            round(figures["p50"].median, 4),
            "s",
            None,
            None,
            detail,
            figures["p50"].describe(),
        ),
        Row(
            "start lateness p99",
            round(p99, 4),
            "s",
            f"<= {GOAL_P99_SECONDS:.2f} s",
            p99 <= GOAL_P99_SECONDS,
            spread=figures["p99"].describe(),
        ),
        Row("start lateness max", round(figures["max"].median, 4), "s", spread=figures["max"].describe()),
        Row(
            "jobs called exactly once, never early",
            once,
            f"of {total}",
            f"= {total}, none early",
            once == total and earliest >= 0,
            spread=f"earliest start {earliest:+.3f} s",
        ),
    ]
