"""Priority isolation: high-priority lateness p99 while the low queue holds a flood, over the same
p99 when the stack is idle.

The flood is sized to what the emulator takes (its sends slow down as a queue grows): a few hundred
low jobs, due at once, whose target holds each low worker for seconds, so the low queue stays deep
for the whole high-priority window.
"""

from __future__ import annotations

import random
import time

from bench.harness import Row, percentile
from bench.lateness import lateness_of, run_jobs, wait_for_calls
from bench.stack import Listener, LocalStack
from shared import constants as c

HIGH_JOBS = 300
WINDOW_SECONDS = 30.0
LEAD_SECONDS = 8.0
FLOOD_JOBS = 300
FLOOD_TARGET_SECONDS = 2.0
GOAL_RATIO = 1.5


def high_window(stack: LocalStack, listener: Listener, seed: int) -> list[float]:
    rng = random.Random(seed)
    start = time.time()
    instants = sorted(start + LEAD_SECONDS + rng.uniform(0, WINDOW_SECONDS) for _ in range(HIGH_JOBS))
    body = {"priority": "high", "target": {"type": "http", "url": listener.url("ok/high")}}
    scheduled, _ = run_jobs(stack, listener, instants, body)
    wait_for_calls(listener, scheduled)
    late, _ = lateness_of(listener, scheduled)
    return late


def measure(stack: LocalStack, listener: Listener) -> Row:
    idle = high_window(stack, listener, seed=1)
    flood_target = {"type": "http", "url": listener.url(f"sleep/{FLOOD_TARGET_SECONDS}/flood")}
    started = time.monotonic()
    stack.create_all(
        [{"name": f"flood-{n}", "priority": "low", "target": flood_target} for n in range(FLOOD_JOBS)]
    )
    flood_create_seconds = time.monotonic() - started
    low_queue = c.QUEUE_NAMES[c.Priority.LOW]
    depth_before = stack.queue_depth(low_queue)
    flooded = high_window(stack, listener, seed=2)
    depth_after = stack.queue_depth(low_queue)
    idle_p99, flooded_p99 = percentile(idle, 0.99), percentile(flooded, 0.99)
    ratio = flooded_p99 / idle_p99 if idle_p99 > 0 else float("nan")
    detail = {
        "high_jobs_per_window": HIGH_JOBS,
        "idle_p99_s": round(idle_p99, 4),
        "flooded_p99_s": round(flooded_p99, 4),
        "idle_p50_s": round(percentile(idle, 0.5), 4),
        "flooded_p50_s": round(percentile(flooded, 0.5), 4),
        "flood_jobs": FLOOD_JOBS,
        "flood_create_seconds": round(flood_create_seconds, 1),
        "low_queue_depth_at_window_start": depth_before,
        "low_queue_depth_at_window_end": depth_after,
    }
    return Row(
        "priority isolation (high p99 flooded / idle)",
        round(ratio, 2),
        "x",
        f"<= {GOAL_RATIO}",
        ratio <= GOAL_RATIO,
        detail,
    )
