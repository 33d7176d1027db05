"""Priority isolation: high-priority lateness p99 while the low queue holds a flood, over the same
p99 when the stack is idle, as the median of five pairs of windows.

Five idle windows come first, then the flood, then five flooded windows; the i-th flooded window's
p99 over the i-th idle one's is one ratio. The flood (low jobs whose target holds each low worker
for seconds) is created before the flooded windows start, and its target is a process of its own
(bench/sleeper.py), so neither its creates nor its held calls sit on the measured path: the
listener that timestamps high calls and the API that creates them. It is sized to keep the low
queue deep for all five flooded windows, the low pool running a few of its jobs at a time.
"""

from __future__ import annotations

import random
import statistics
import time

from bench.harness import Repeated, Row, percentile
from bench.lateness import lateness_of, run_jobs, wait_for_calls
from bench.sleeper import sleeper
from bench.stack import Listener, LocalStack
from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c

HIGH_JOBS = 100
WINDOW_SECONDS = 15.0
LEAD_SECONDS = 6.0
WINDOWS = 5
FLOOD_JOBS = 100
FLOOD_TARGET_SECONDS = 30.0
GOAL_RATIO = 1.5


def high_window(stack: LocalStack, listener: Listener, seed: int) -> list[float]:
    rng = random.Random(seed)
    start = time.time()
    instants = sorted(start + LEAD_SECONDS + rng.uniform(0, WINDOW_SECONDS) for _ in range(HIGH_JOBS))
    body = {"priority": "high", "target": {"type": "http", "url": listener.url(f"ok/high-{seed}")}}
    scheduled, _ = run_jobs(stack, listener, instants, body)
    wait_for_calls(listener, scheduled)
    late, _ = lateness_of(listener, scheduled)
    return late


def measure(stack: LocalStack, listener: Listener) -> Row:
    idle = [percentile(high_window(stack, listener, seed=n), 0.99) for n in range(WINDOWS)]
    low_queue = c.QUEUE_NAMES[Priority.LOW]
    with sleeper() as sleeping:
        flood_target = {"type": "http", "url": f"{sleeping}/sleep/{FLOOD_TARGET_SECONDS}/flood"}
        started = time.monotonic()
        stack.create_all(
            [
                {"name": f"flood-{n}", "priority": "low", "target": flood_target, "timeout_seconds": 120}
                for n in range(FLOOD_JOBS)
            ]
        )
        flood_create_seconds = time.monotonic() - started
        depths = [stack.queue_depth(low_queue)]
        flooded = []
        for n in range(WINDOWS):
            flooded.append(percentile(high_window(stack, listener, seed=100 + n), 0.99))
            depths.append(stack.queue_depth(low_queue))
    ratios = Repeated(tuple(f / i if i > 0 else float("nan") for f, i in zip(flooded, idle, strict=True)))
    ratio = ratios.median
    detail = {
        "high_jobs_per_window": HIGH_JOBS,
        "window_seconds": WINDOW_SECONDS,
        "windows": WINDOWS,
        "idle_p99_s": [round(v, 4) for v in idle],
        "flooded_p99_s": [round(v, 4) for v in flooded],
        "ratios": ratios.as_dict(3),
        "median_idle_p99_s": round(statistics.median(idle), 4),
        "median_flooded_p99_s": round(statistics.median(flooded), 4),
        "flood_jobs": FLOOD_JOBS,
        "flood_target_seconds": FLOOD_TARGET_SECONDS,
        "flood_create_seconds": round(flood_create_seconds, 1),
        "low_queue_depth_before_each_flooded_window_and_after": depths,
    }
    return Row(
        "priority isolation (high p99 flooded / idle)",
        round(ratio, 2),
        "x",
        f"<= {GOAL_RATIO}",
        ratio <= GOAL_RATIO,
        detail,
        ratios.describe(2)
        + f"; p99 idle {statistics.median(idle):.3f} s, flooded {statistics.median(flooded):.3f} s",
    )
