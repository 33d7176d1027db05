"""`make scale`: the goal scenarios on the model, each figure printed beside its goal.

SCALE_ARGS="--only NAME" runs one; "--scale F" multiplies every job count by F (0.1 for a quick
look; the goals are about F=1)."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bench.scale.scenario import Scenario, run
from bench.scale.world import Settings

RECOMMENDED = {
    "provisioned_pollers": "true",
    "max_concurrency.high": "300",
    "max_concurrency.medium": "300",
    "max_concurrency.low": "200",
    "warm_wcu": "40000",
}


def _settings(pairs: dict[str, str]) -> Settings:
    settings = Settings()
    for key, value in pairs.items():
        settings.set(key, value)
    return settings


@dataclass(frozen=True)
class Goal:
    name: str
    scenario: Scenario
    says: str
    holds: Callable[[dict[str, Any]], bool]


def _exactly_once(report: dict[str, Any]) -> bool:
    return all(
        p["never_called"] == 0 and p["called_twice"] == 0 and p["called_early"] == 0
        for p in report["priorities"].values()
    )


def _p99(report: dict[str, Any], most_ms: float, high_ms: float | None = None) -> bool:
    ok = all((p["lateness_ms"]["p99"] or 0) <= most_ms for p in report["priorities"].values())
    high = report["priorities"]["high"]["lateness_ms"]["p99"] or 0
    return ok and (high_ms is None or high <= high_ms)


def _no_tick_past_deadline(report: dict[str, Any]) -> bool:
    return not any(t["ran_past_deadline"] or t["timed_out"] for t in report["ticks"])


def goals() -> list[Goal]:
    recommended = _settings(RECOMMENDED)
    return [
        Goal(
            "100k-at-once-recommended",
            Scenario(due_at_once=100_000, settings=recommended),
            "exactly once; p99 <= 10 s (high <= 5 s); no tick past its deadline",
            lambda r: _exactly_once(r) and _p99(r, 10_000, 5_000) and _no_tick_past_deadline(r),
        ),
        Goal(
            "100k-at-once-defaults",
            Scenario(due_at_once=100_000),
            "exactly once; figures reported",
            _exactly_once,
        ),
        Goal(
            "100k-killed-tick",
            Scenario(due_at_once=100_000, kill_tick_at=40, overlap_tick_at=30, settings=recommended),
            "nothing lost; copies dropped at the fence",
            _exactly_once,
        ),
        Goal(
            "steady-100k-a-minute",
            Scenario(per_minute=100_000, minutes=5, settings=recommended),
            "exactly once; p99 <= 1 s",
            lambda r: _exactly_once(r) and _p99(r, 1_000),
        ),
        Goal(
            "design-peak",
            Scenario(active=10_000_000, per_minute=10_000, minutes=10),
            "exactly once; p99 <= 1 s",
            lambda r: _exactly_once(r) and _p99(r, 1_000),
        ),
        Goal(
            "1M-at-09:00",
            Scenario(due_at_once=1_000_000, settings=recommended),
            "sent before its instant; exactly once; within 10 min wall",
            _exactly_once,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="make scale")
    parser.add_argument("--only", action="append")
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    for goal in goals():
        if args.only and goal.name not in args.only:
            continue
        s = goal.scenario
        scenario = replace(
            s, due_at_once=int(s.due_at_once * args.scale), per_minute=int(s.per_minute * args.scale)
        )
        started = time.monotonic()
        report = run(scenario)
        wall = time.monotonic() - started
        lateness = {p: v["lateness_ms"] for p, v in report["priorities"].items()}
        counts = {
            p: {k: v[k] for k in ("occurrences", "never_called", "called_twice", "called_early")}
            for p, v in report["priorities"].items()
        }
        longest = max((t["duration_s"] or 0 for t in report["ticks"]), default=0)
        print(f"== {goal.name}  (scale {args.scale:g}, {wall:.0f} s wall)")
        print(f"   goal:     {goal.says}")
        print(f"   measured: {json.dumps(counts)}")
        print(
            f"             lateness {json.dumps(lateness)}; throttles {report['throttles']}; "
            f"longest tick {longest} s; out of time {sum(t['out_of_time'] for t in report['ticks'])}"
        )
        print(f"   holds:    {'yes' if goal.holds(report) else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
