"""The CPU the engine's code costs on the model, as a committed table, so that a seed repeats.

A simulation counts its tasks' CPU in segments (bench/scale/runtime.py): a segment runs from the
request or wait that resumed a task to the next one. Its kind is the task's function and those two
ends, e.g. `sundial.functions.worker.handler|dynamodb.UpdateItem|sqs.SendMessageBatch`. The table
holds the mean CPU of each kind, measured here on calibration scenarios and imports (the api
function's batch creates) by `make scale-calibrate` (`python -m bench.scale.cpu`), with the machine
it ran on; `--add-missing` measures only the kinds the table lacks and adds them at its speed. A run
charges each segment its kind's mean, and a kind the table lacks the mean over every segment
measured; the report says how many such segments there were, and how far this host's measurement of
the same run is from what the table charged (`cpu` in a scenario's report). `make scale` first holds
the table to the code (`--check`): a small check scenario must cost within 20% of what it cost when
the table was made, at the speed the host runs a fixed reference piece of work now against the speed
it ran it then. The check wants a quiet machine: with three test suites side by side on two cores
the same table measured 1.24-1.35x, so `make test` asserts only that the check tells a stale table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).with_name("cpu_table.json")
# How far this host may measure a run from what the table charged before the table is stale.
TOLERANCE = 0.20
HASH_SEED = "0"


@dataclass(frozen=True)
class CpuTable:
    seconds: dict[str, float]
    fallback_seconds: float
    reference_seconds: float  # the host's speed when measured: see reference_seconds()
    check_scenario_seconds: float  # what check_scenario() measured then, the median of three


def reference_seconds() -> float:
    """CPU seconds of a fixed piece of work like the engine's (an item through JSON and back, its
    fields walked), the best of five: how fast this host runs Python now. A table measured on a
    busier or slower host is compared at the speed it was measured at."""
    item = {
        "pk": {"S": "JOB#01Q3EB3K4GAYVH2XZ1F6R3HP23"},
        "status": {"S": "queued"},
        "due": {"S": "high#03#1893488400000#lease"},
        "target": {"M": {"url": {"S": "https://jobs.example.com/ok/1"}, "method": {"S": "POST"}}},
        "schedule": {"M": {"kind": {"S": "rate"}, "every": {"N": "60"}}},
        "version": {"N": "12"},
    }
    best = float("inf")
    for _ in range(5):
        started = time.thread_time()
        for n in range(3000):
            copy = json.loads(json.dumps({**item, "version": {"N": str(n)}}))
            sum(len(str(value)) for value in copy.values())
        best = min(best, time.thread_time() - started)
    return best


def repeat_exactly() -> None:
    """Runs this process again under a fixed string hash seed, unless it has one: the engine and
    the model iterate sets of job ids, whose order, and so the run's, follows the seed."""
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        os.execve(
            sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, "PYTHONHASHSEED": HASH_SEED}
        )


@cache
def committed() -> CpuTable:
    data = json.loads(TABLE_PATH.read_text())
    return CpuTable(
        seconds=data["seconds"],
        fallback_seconds=data["fallback_seconds"],
        reference_seconds=data["reference_seconds"],
        check_scenario_seconds=data["check_scenario_seconds"],
    )


def _scenarios() -> list[Any]:
    """What the table is measured on: the goals' kinds of work at a size that runs in minutes (a
    burst due at once, with failures and retries, limits, a killed tick, schedules, a spread window)."""
    from bench.scale.goals import RECOMMENDED, _settings
    from bench.scale.scenario import Scenario

    recommended = replace(_settings(RECOMMENDED), cpu="measured")
    defaults = replace(_settings({}), cpu="measured")
    return [
        Scenario(due_at_once=2_000, recurring=200, failing=0.05, settings=recommended),
        Scenario(due_at_once=2_000, per_minute=300, minutes=3, failing=0.05, settings=defaults),
        Scenario(due_at_once=2_000, kill_tick_after_sends=500, settings=recommended),
        Scenario(due_at_once=1_000, window_seconds=120, settings=recommended),
        Scenario(due_at_once=500, limit_per_second=20.0, limit_concurrent=10, settings=defaults),
        replace(check_scenario(), settings=defaults),
    ]


def _imports() -> list[Any]:
    """The api function's kinds of work, as `make scale`'s import goals run it: batch creates from
    imports side by side, from one import with many requests in flight, and on a table too small
    for them, whose throttled writes the batch's writers wait out."""
    from bench.scale.creates import RECOMMENDED_DUE_SHARDS, RECOMMENDED_STAGE, Imports
    from bench.scale.goals import RECOMMENDED

    settings = {**RECOMMENDED, "due_shards": RECOMMENDED_DUE_SHARDS, "cpu": "measured"}
    return [
        Imports("side-by-side", 30, 200, *RECOMMENDED_STAGE, settings),
        Imports("one", 1, 3_000, *RECOMMENDED_STAGE, settings, in_flight=30),
        Imports("throttled", 10, 300, *RECOMMENDED_STAGE, {**settings, "quota_wcu": "1500"}),
    ]


def _measure_imports(totals: dict[str, list[float]]) -> None:
    from bench.scale import creates

    for imports in _imports():
        for kind, (count, seconds) in creates.measure_cpu(imports).items():
            tally = totals.setdefault(kind, [0, 0.0])
            tally[0] += count
            tally[1] += seconds


def add_missing(path: Path = TABLE_PATH) -> list[str]:
    """Adds to the table at `path` the kinds of segment its scenarios never measured (the imports'),
    measured here and brought to the speed the table was made at; the kinds it has stay as they are.
    The kinds added."""
    data = json.loads(path.read_text())
    totals: dict[str, list[float]] = {}
    before = reference_seconds()
    _measure_imports(totals)
    speed = data["reference_seconds"] / ((before + reference_seconds()) / 2)
    added = sorted(kind for kind in totals if kind not in data["seconds"])
    for kind in added:
        count, seconds = totals[kind]
        data["seconds"][kind] = round(seconds * speed / count, 9)
        data["segments_by_kind"][kind] = int(count)
    data["seconds"] = dict(sorted(data["seconds"].items()))
    data["segments_by_kind"] = dict(sorted(data["segments_by_kind"].items()))
    data["added"] = {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "kinds": len(added),
        "speed_over_table": round(1 / speed, 3),
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    return added


def check_scenario() -> Any:
    """The small run the table is checked on (tests/bench/test_scale_repeats.py): created through
    the API's code, every write a request, failing targets and an overlapping tick's copies. The
    table keeps what it cost when measured, so that the check compares like with like."""
    from bench.scale.scenario import Scenario

    return Scenario(due_at_once=120, recurring=15, failing=0.2, overlap_tick_at=-59.95, through_api=True)


def calibrate() -> dict[str, Any]:
    from bench.scale.scenario import measure_cpu

    totals: dict[str, list[float]] = {}
    started = time.perf_counter()
    reference = reference_seconds()
    for scenario in _scenarios():
        for kind, (count, seconds) in measure_cpu(scenario).items():
            tally = totals.setdefault(kind, [0, 0.0])
            tally[0] += count
            tally[1] += seconds
    _measure_imports(totals)
    checks = [sum(seconds for _, seconds in measure_cpu(check_scenario()).values()) for _ in range(3)]
    segments = sum(count for count, _ in totals.values())
    spent = sum(seconds for _, seconds in totals.values())
    return {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "scenarios": len(_scenarios()) + len(_imports()),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "segments": int(segments),
        "reference_seconds": round((reference + reference_seconds()) / 2, 6),
        "fallback_seconds": round(spent / segments, 9) if segments else 0.0,
        "check_scenario_seconds": round(sorted(checks)[1], 6),
        "seconds": {kind: round(seconds / count, 9) for kind, (count, seconds) in sorted(totals.items())},
        "segments_by_kind": {kind: int(count) for kind, (count, _) in sorted(totals.items())},
    }


def drift(table: CpuTable | None = None) -> float:
    """What the check scenario costs this host now over what it cost when `table` was made, at the
    host's speed: the fixed reference work timed just before and just after, so a load that comes
    and goes slows both. Measured on botocore's full path, as the table is."""
    from bench.scale import direct, serializing
    from bench.scale.scenario import run

    table = table or committed()
    every, direct.FULL_PATH_EVERY = direct.FULL_PATH_EVERY, 1
    fast, serializing.FAST = serializing.FAST, False
    try:
        before = reference_seconds()
        measured = run(check_scenario())["cpu"]["measured_s"]
        speed = table.reference_seconds / ((before + reference_seconds()) / 2)
    finally:
        direct.FULL_PATH_EVERY = every
        serializing.FAST = fast
    return float(measured * speed / table.check_scenario_seconds)


def check(table: CpuTable | None = None, tries: int = 3) -> list[float]:
    """The drifts measured, up to `tries`, stopping at the first within TOLERANCE: a table the code
    has moved away from is off every time, a machine other work loads now and then only sometimes.
    The table holds when the last is within it."""
    drifts: list[float] = []
    for _ in range(tries):
        drifts.append(round(drift(table), 3))
        if within(drifts[-1]):
            break
    return drifts


def within(drift: float) -> bool:
    return 1 / (1 + TOLERANCE) <= drift <= 1 + TOLERANCE


def main(argv: list[str] | None = None) -> int:
    repeat_exactly()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=TABLE_PATH)
    parser.add_argument(
        "--check", action="store_true", help="check the committed table against this host; measure nothing"
    )
    parser.add_argument(
        "--add-missing",
        action="store_true",
        help="measure only the kinds the table lacks (the imports'), at its speed, and add them",
    )
    args = parser.parse_args(argv)
    if args.add_missing:
        added = add_missing(args.out)
        print(f"{len(added)} kinds of segment added to {args.out}", file=sys.stderr)
        return 0
    if args.check:
        drifts = check()
        holds = within(drifts[-1])
        print(
            f"CPU table: the check scenario costs {drifts}x what it cost when the table was made, at "
            f"this host's speed (within {TOLERANCE:.0%}: {'yes' if holds else 'NO, make scale-calibrate'})",
            file=sys.stderr,
        )
        return 0 if holds else 1
    table = calibrate()
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(
        f"{len(table['seconds'])} kinds of segment, {table['segments']} segments measured in "
        f"{table['wall_seconds']} s on {table['machine']['processor']}: {args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
