"""Start lateness: 500 one-off jobs spread over the next two minutes, on the local stack's 60 s tick.

Lateness is the moment the target's request arrives minus the job's instant, both on this machine's
clock. Jobs due within the tick's horizon are sent by their create; the rest wait in the due index
for a tick, so both paths are measured.
"""

from __future__ import annotations

import random
import time

from bench.harness import Row, percentile
from bench.stack import Listener, LocalStack, parse_rfc3339, rfc3339

JOBS = 500
SPREAD_SECONDS = 120.0
# Time to create every job before the first one is due (creates run at a few dozen a second here).
LEAD_SECONDS = 20.0
GRACE_SECONDS = 15.0
GOAL_P99_SECONDS = 1.0


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


def measure(stack: LocalStack, listener: Listener) -> list[Row]:
    rng = random.Random(JOBS)
    start = time.time()
    instants = sorted(start + LEAD_SECONDS + rng.uniform(0, SPREAD_SECONDS) for _ in range(JOBS))
    target = {"type": "http", "url": listener.url("ok/lateness")}
    scheduled, create_seconds = run_jobs(stack, listener, instants, {"target": target})
    created_by = time.time()
    wait_for_calls(listener, scheduled)
    late, counts = lateness_of(listener, scheduled)
    once = sum(1 for n in counts.values() if n == 1)
    detail = {
        "jobs": JOBS,
        "spread_seconds": SPREAD_SECONDS,
        "create_seconds": round(create_seconds, 1),
        "due_before_creates_finished": sum(1 for at in instants if at < created_by),
        "never_called": sum(1 for n in counts.values() if n == 0),
        "called_more_than_once": sum(1 for n in counts.values() if n > 1),
        "earliest_seconds": round(min(late), 4) if late else None,
    }
    p99 = percentile(late, 0.99)
    return [
        Row("start lateness p50", round(percentile(late, 0.5), 4), "s", None, None, detail),
        Row(
            "start lateness p99", round(p99, 4), "s", f"<= {GOAL_P99_SECONDS:.1f} s", p99 <= GOAL_P99_SECONDS
        ),
        Row("start lateness max", round(max(late), 4) if late else float("nan"), "s"),
        Row("jobs called exactly once", once, f"of {JOBS}", f"= {JOBS}", once == JOBS),
    ]
