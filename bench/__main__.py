"""`make bench`: every figure of issue 7, measured in one run, printed as a table with its goal, and
written to bench/results.json with the date, the machine and the versions it ran with.

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

from bench import bench_next_runs, console_page, cost, lateness, priority, throughput
from bench.cost_model import EVENTBRIDGE_SCHEDULER_PER_MILLION
from bench.harness import Aws, Row, machine, versions
from bench.stack import Listener, running

RESULTS = Path(__file__).with_name("results.json")
# Worker threads for `sundial local`: the medium pool (2/7 of them) must keep up with 500 jobs in two
# minutes while each thread waits out the second or two a message arrives early.
WORKERS = 42
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
            rows += _on_local_stack(work)
            rows.append(_console_page(work))
            rows += _in_process()
            rows += _next_runs()
            rows.append(_scaling_row(scaling, work))
        finally:
            if scaling.poll() is None:
                scaling.kill()
    info["seconds"] = round(time.monotonic() - started, 1)
    _write(info, rows)
    _print(info, rows)
    return 0


def _on_local_stack(work: Path) -> list[Row]:
    _say("start lateness and priority isolation on `sundial local` (about 4 minutes)")
    listener = Listener()
    try:
        with running(work, WORKERS, TICK_SECONDS) as stack:
            rows = lateness.measure(stack, listener)
            rows.append(priority.measure(stack, listener))
    except Exception:
        # The log lives in a directory that is about to go: show its end before it does.
        print((work / "sundial-local.log").read_text(errors="replace")[-4000:], file=sys.stderr)
        raise
    finally:
        listener.stop()
    return rows


def _console_page(work: Path) -> Row:
    _say("the console's jobs page with 10,000 jobs in headless Chromium (about a minute)")
    return console_page.measure(work / "console")


def _in_process() -> list[Row]:
    _say("tick throughput and cost on an in-process engine")
    aws = Aws.start("bench-")
    try:
        rows = [throughput.measure(aws)]
        cost_rows, assumptions = cost.measure(aws)
    finally:
        aws.stop()
    for row in cost_rows:
        row.detail["assumptions"] = assumptions
    return rows + cost_rows


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
    width = max(len(row.name) for row in rows)
    print()
    print(
        f"Sundial benchmarks, {info['date']}, {info['machine']['uname']}, {info['machine']['cpu_count']} CPUs"
    )
    print(f"{'figure':<{width}}  {'value':>10}  {'unit':<10} {'goal':<12} met")
    for row in rows:
        met = "" if row.met is None else ("yes" if row.met else "NO")
        print(f"{row.name:<{width}}  {row.value:>10}  {row.unit:<10} {row.goal or '':<12} {met}")
    print(f"EventBridge Scheduler: ${EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f} per million invocations")
    print(f"({info['seconds']:.0f} s; details in bench/{RESULTS.name})")


def _say(text: str) -> None:
    print(f"[bench] {text}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
