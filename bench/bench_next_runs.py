"""How long next_runs takes per call: the scheduler asks it once per job it moves on.

Run: python -m bench.bench_next_runs (or python bench/bench_next_runs.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sundial.shared.schedules import next_runs, parse_schedule

CRON = "cron(0/15 9-17 ? * MON-FRI *)"
TIMEZONE = "Europe/London"
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
# Each call asks from a different instant, a week and 37 minutes after the last, so no two calls
# share an answer and the cache of computed occurrences does not flatter the figures.
STRIDE_MS = (7 * 24 * 60 + 37) * 60_000
ITERATIONS = 3000


def _per_call_us(call: Callable[[int], object], iterations: int) -> float:
    started = time.perf_counter()
    for index in range(iterations):
        call(START_MS + index * STRIDE_MS)
    return (time.perf_counter() - started) / iterations * 1e6


def measure() -> dict[str, float]:
    """Microseconds per next_runs call: a cron expression for 1 and for 10 runs, each from a fresh
    instant; the same call repeated (answered from the cache); and a rate() for comparison."""
    cron = parse_schedule(CRON, TIMEZONE)
    rate = parse_schedule("rate(5 minutes)", TIMEZONE)
    next_runs(cron, START_MS, 10)  # warm up imports and the parse cache
    return {
        "cron_count_1_us": _per_call_us(lambda after: next_runs(cron, after, 1), ITERATIONS),
        "cron_count_10_us": _per_call_us(lambda after: next_runs(cron, after + 1, 10), ITERATIONS // 3),
        "cron_count_1_repeated_us": _per_call_us(lambda _: next_runs(cron, START_MS, 1), ITERATIONS),
        "rate_count_1_us": _per_call_us(lambda after: next_runs(rate, after, 1), ITERATIONS),
    }


if __name__ == "__main__":
    print(f"next_runs, {CRON} in {TIMEZONE}")
    for name, microseconds in measure().items():
        print(f"  {name:<26} {microseconds:8.1f} us")
