"""`make bench`: every figure, measured in one run, printed as a table with its spread and its goal,
and written to bench/results.json with the date, the machine (and its load when the run started)
and the versions it ran with. Each timing figure is the median of several runs.

Order: the scaling child starts first at a lower CPU priority (it mostly loads its emulator, and
counts items, not seconds); the timing measurements run meanwhile in the foreground.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    bench_next_runs,
    burst,
    console_page,
    cost,
    lateness,
    local_state,
    priority,
    secret_reads,
    throughput,
)
from bench.cost_model import EVENTBRIDGE_SCHEDULER_PER_MILLION
from bench.harness import Aws, Row, machine, versions
from bench.stack import Listener, running

RESULTS = Path(__file__).with_name("results.json")
# Jobs at once for `sundial local`, split 10:4:1 (40/16/4): enough for each queue alone to keep the
# emulator busy, so a burst's drain measures the emulator, and in the deployed split, so it drains
# in priority order.
WORKERS = 60
TICK_SECONDS = 60.0
SCALING_TIMEOUT_SECONDS = 900
SCALING_GOAL = 1.1


def main() -> int:
    started = time.monotonic()
    info = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(),
    }
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="sundial-bench-") as temp:
        work = Path(temp)
        scaling = _start_scaling(work)
        try:
            in_process = _in_process()
            rows += in_process
            rows += _on_local_stack(work, _worker_writes_per_execution(in_process))
            rows += _local_state(work)
            rows.append(_console_page(work))
            rows += _next_runs()
            rows.append(_scaling_row(scaling, work))
        finally:
            if scaling.poll() is None:
                scaling.kill()
    info["seconds"] = round(time.monotonic() - started, 1)
    _write(info, rows)
    _print(info, rows)
    return 0


def _on_local_stack(work: Path, writes_per_execution: float) -> list[Row]:
    _say("start lateness, priority isolation and bursts on `sundial local` (about 15 min when loaded)")
    listener = Listener()
    try:
        with running(work, WORKERS, TICK_SECONDS) as stack:
            rows = lateness.measure(stack, listener)
            # Before the flood, whose long jobs would still hold the emulator during the bursts.
            _say("three bursts of 1,000 jobs due in one second")
            rows += burst.measure(stack, listener, writes_per_execution)
            _say("priority isolation: five idle windows, a flood, five flooded windows")
            rows.append(priority.measure(stack, listener))
    except Exception:
        # The log lives in a directory that is about to go: show its end before it does.
        print((work / "sundial-local.log").read_text(errors="replace")[-4000:], file=sys.stderr)
        raise
    finally:
        listener.stop()
    return rows


def _local_state(work: Path) -> list[Row]:
    _say("the local stack with and without a state directory; 100,000 jobs in one (about 10 minutes)")
    return local_state.measure(work / "local-state")


def _console_page(work: Path) -> Row:
    _say("the console's jobs page with 10,000 jobs in headless Chromium (about a minute)")
    return console_page.measure(work / "console")


def _in_process() -> list[Row]:
    _say("tick throughput and cost on an in-process engine")
    aws = Aws.start("bench-")
    try:
        rows = [throughput.measure(aws)]
        cost_rows, assumptions = cost.measure(aws)
        rows += secret_reads.measure(aws)
    finally:
        aws.stop()
    for row in cost_rows:
        row.detail["assumptions"] = assumptions
    return rows + cost_rows


def _worker_writes_per_execution(rows: list[Row]) -> float:
    """The item writes a worker makes per execution of a one-off sent by a tick, at the
    defaults, as the cost run counted them (the burst's jobs are such one-offs)."""
    row = next(r for r in rows if r.name == f"cost: one-off, sent by a tick [{cost.DEFAULT.label}]")
    calls: dict[str, float] = row.detail["calls_per_execution"]["worker"]
    writes = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")
    return sum(count for operation, count in calls.items() if operation in writes)


def _next_runs() -> list[Row]:
    _say("next_runs per call")
    figures = bench_next_runs.measure()
    cron = {"expression": bench_next_runs.CRON, "timezone": bench_next_runs.TIMEZONE}
    rate = {"expression": "rate(5 minutes)", "timezone": bench_next_runs.TIMEZONE}
    return [
        Row(
            f"next_runs {name.removesuffix('_us')}",
            round(us, 1),
            "us",
            None,
            None,
            cron if "cron" in name else rate,
        )
        for name, us in figures.items()
    ]


def _start_scaling(work: Path) -> subprocess.Popen[bytes]:
    log = (work / "scaling.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "bench.scaling", str(work / "scaling.json")],
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _scaling_row(process: subprocess.Popen[bytes], work: Path) -> Row:
    _say("waiting for the scaling child (200,000 jobs to load)")
    process.wait(SCALING_TIMEOUT_SECONDS)
    output = work / "scaling.json"
    if process.returncode != 0 or not output.exists():
        raise RuntimeError(f"the scaling child failed:\n{(work / 'scaling.log').read_text()[-3000:]}")
    result: dict[str, Any] = json.loads(output.read_text())
    ratio = result["ratio"]
    return Row(
        "scaling: index items read, 200k / 1k not yet due",
        round(ratio, 3),
        "x",
        f"<= {SCALING_GOAL}",
        ratio <= SCALING_GOAL,
        result,
    )


def _write(info: dict[str, Any], rows: list[Row]) -> None:
    RESULTS.write_text(json.dumps({**info, "figures": [row.as_dict() for row in rows]}, indent=2) + "\n")


def _print(info: dict[str, Any], rows: list[Row]) -> None:
    width = min(100, max(len(row.name) for row in rows))
    load = info["machine"]["load_average_at_start"]
    cpus = info["machine"]["cpu_count"] or 1
    print()
    print(f"Sundial benchmarks, {info['date']}, {info['machine']['uname']}, {cpus} CPUs")
    busy = " (a loaded machine: timing figures are slower than on an idle one)" if load[0] >= cpus else ""
    print(f"load average at start: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}{busy}")
    print(f"{'figure':<{width}}  {'value':>10}  {'unit':<10} {'goal':<32} {'met':<4} spread")
    for row in rows:
        met = "" if row.met is None else ("yes" if row.met else "NO")
        print(
            f"{row.name[:width]:<{width}}  {row.value:>10}  {row.unit:<10} {row.goal or '':<32} {met:<4} "
            f"{row.spread or ''}"
        )
    print(f"EventBridge Scheduler: ${EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f} per million invocations")
    cost_rows = [row for row in rows if "assumptions" in row.detail]
    if cost_rows:
        print("cost assumptions:")
        for key, value in cost_rows[0].detail["assumptions"].items():
            print(f"  {key}: {value}")
    print(f"({info['seconds']:.0f} s; details in bench/{RESULTS.name})")


def _say(text: str) -> None:
    print(f"[bench] {text}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
