"""One `make scale` goal at one scale, its report written as JSON: what the model mutations' runner
starts in a subprocess of the scratch copy, so that the bench/scale it imports is the mutated one.

    python -m tests.mutants.scale_run GOAL SCALE OUT.json

The JSON holds the goal's verdict, its headline figures (the ones `make scale` prints) and the whole
report. The run's wall and CPU seconds are kept apart: they are this host's, not the model's.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.scale import goals
from bench.scale.cpu import repeat_exactly
from bench.scale.scenario import run

# Host-dependent fields of a report: they differ between two runs of the same model.
HOST_FIELDS = {"wall_seconds", "cpu_seconds", "measured_s", "measured_over_charged"}


def main(name: str, scale: float, out: Path) -> None:
    repeat_exactly()
    started = time.monotonic()
    # Only the scenario goals: the creates goals' CPU is measured on the host, not charged from the
    # committed table, so two of their runs differ with no mutation at all.
    scenario_goals = {goal.name: goal for goal in goals.goals()}
    if name not in scenario_goals:
        raise SystemExit(f"no scenario goal named {name!r}")
    goal = scenario_goals[name]
    report = run(goals.scaled(goal.scenario, scale))
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    holds, headline = goal.holds(report), scenario_headline(report)
    out.write_text(
        json.dumps(
            {
                "goal": name,
                "scale": scale,
                "holds": holds,
                "headline": headline,
                "wall_seconds": round(time.monotonic() - started, 1),
                "report": without_host_fields(report),
            },
            indent=1,
            sort_keys=True,
        )
    )


def scenario_headline(report: dict[str, Any]) -> dict[str, Any]:
    """The figures `make scale` prints for a scenario, flattened to one name each."""
    figures: dict[str, Any] = {}
    for priority, counts in report["priorities"].items():
        for kind in ("never_called", "called_twice", "called_early"):
            figures[f"{kind}.{priority}"] = counts[kind]
        for percentile in ("p50", "p99", "max"):
            figures[f"lateness_ms.{percentile}.{priority}"] = counts["lateness_ms"][percentile]
    for kind in ("partition", "table", "index"):
        figures[f"dynamodb_throttles.{kind}"] = report["throttles"][kind]
    for where, count in report["throttles"]["by_key"].items():
        figures[f"dynamodb_throttles.partition.{where}"] = count
    for index, count in report["throttles"]["by_index"].items():
        figures[f"dynamodb_throttles.index.{index}"] = count
    ticks = report["ticks"]
    figures |= {
        "sent_after_instant": report["sent_after_instant"],
        "dropped_at_fence": report["dropped_at_fence"],
        "copies_sent": report["copies_sent"],
        "in_flight_cap_hits": report["in_flight_cap_hits"],
        "ticks_out_of_time": sum(t["out_of_time"] for t in ticks),
        "ticks_past_deadline": sum(t["ran_past_deadline"] or t["timed_out"] for t in ticks),
        "ticks_throttled": sum(t["throttled"] for t in ticks),
        "longest_tick_s": max((t["duration_s"] or 0 for t in ticks), default=0),
        "claimers": sum(t["kind"] == "claimer" for t in ticks),
        "busiest_second_calls": report["busiest_second_calls"],
        "first_calls_span_s": report["first_calls_span_s"],
        "lambda.account_peak": report["lambda"]["account_peak"],
        "lambda.ticks_abandoned": report["lambda"]["ticks_abandoned"],
    }
    for function, counts in report["lambda"]["functions"].items():
        figures[f"lambda.{function}.peak"] = counts["peak"]
        figures[f"lambda.{function}.throttles"] = counts["throttles"]
    for source in report["lambda"]["event_sources"]:
        figures[f"lambda.{source['queue']}.peak"] = source["peak"]
        figures[f"lambda.{source['queue']}.throttled"] = source["throttled"]
    for key, value in report.get("limit", {}).items():
        figures[f"limit.{key}"] = value
    return figures


def without_host_fields(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_host_fields(item) for key, item in value.items() if key not in HOST_FIELDS}
    if isinstance(value, list):
        return [without_host_fields(item) for item in value]
    return value


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), Path(sys.argv[3]))
