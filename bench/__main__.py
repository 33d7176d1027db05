"""`make bench`: every figure, measured part by part (bench/parts.py), printed beside its goal and
its committed value, and kept in bench/results.json as soon as each part ends (bench/results.py),
with the date, the machine (and its load when the part started) and the versions. Each timing
figure is the median of several runs.

    python -m bench                every part, in order (`make bench`)
    python -m bench --part NAME    one part (`make bench PART=NAME`), its figures alone replaced
    python -m bench --list         the parts

A part that fails is recorded as failed, with its error, and the others still run; the bench then
exits 1. Every child process ends with the bench (bench/processes.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import parts, processes, readme, results
from bench.cost_model import EVENTBRIDGE_SCHEDULER_PER_MILLION
from bench.harness import machine, versions

RESULTS = Path(__file__).with_name("results.json")
ERROR_CHARACTERS = 3000
# The parts whose figures the README's cost table shows (bench/readme.py).
PRICED_PARTS = frozenset({"in-process", "idle"})


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        for part in parts.PARTS:
            print(f"{part.name:<22} {part.about}")
        return 0
    try:
        chosen = parts.selected(args.part)
    except ValueError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    processes.install()
    committed = _committed()
    started = time.monotonic()
    run: dict[str, Any] = {"date": _now(), "machine": machine(), "versions": versions()}
    path = Path(args.results)
    document = results.read(path)
    with tempfile.TemporaryDirectory(prefix="sundial-bench-") as temp:
        context = parts.Context(Path(temp), committed.get("figures", []))
        try:
            if any(part.name == "scaling" for part in chosen) and len(chosen) > 1:
                parts.start_scaling(context)
            for part in chosen:
                status = _run(part, context)
                figures = [row.as_dict() for row in context.rows.get(part.name, [])]
                run["seconds"] = round(time.monotonic() - started, 1)
                document = results.with_part(document, part.name, figures, status, run)
                results.write(path, document)
        finally:
            processes.end_all()
    measured = {part.name for part in chosen}
    changes = results.compare(
        committed.get("figures", []), document["figures"], measured, chosen == parts.PARTS
    )
    _print(document, measured, changes, time.monotonic() - started)
    print(f"(details in {path})")
    if path == RESULTS and measured & PRICED_PARTS:
        written = readme.update(document["figures"])
        print("README.md: cost table written from these figures" if written else "README.md: cost table kept")
    return 1 if any(document["parts"][name]["status"] == results.FAILED for name in measured) else 0


def _run(part: parts.Part, context: parts.Context) -> dict[str, Any]:
    """Measures one part; its status: ok, or failed with the error's end."""
    _say(part.about)
    status: dict[str, Any] = {"date": _now(), "load_average_at_start": list(os.getloadavg())}
    started = time.monotonic()
    try:
        context.rows[part.name] = part.measure(context)
        status["status"] = results.OK
    except Exception as exc:
        status["status"] = results.FAILED
        status["error"] = "".join(traceback.format_exception(exc))[-ERROR_CHARACTERS:]
        _say(f"{part.name} FAILED: {exc!r} (recorded; the other parts still run)")
        print(status["error"], file=sys.stderr, flush=True)
    status["seconds"] = round(time.monotonic() - started, 1)
    return status


def _committed() -> dict[str, Any]:
    """The committed results, which this run is compared with; else the file as it is now."""
    relative = RESULTS.relative_to(RESULTS.parents[1])
    try:
        shown = subprocess.run(
            ["git", "show", f"HEAD:{relative}"],
            cwd=RESULTS.parents[1],
            capture_output=True,
            timeout=30,
            check=True,
        )
        document: dict[str, Any] = json.loads(shown.stdout)
        return document
    except (OSError, subprocess.SubprocessError, ValueError):
        return results.read(RESULTS)


def _print(
    document: dict[str, Any], measured: set[str], changes: list[results.Change], seconds: float
) -> None:
    figures = [figure for figure in document["figures"] if figure.get("part") in measured]
    verdicts = {change.name: change for change in changes}
    width = min(90, max([len(figure["name"]) for figure in figures] or [10]))
    info = document["machine"]
    load, cpus = info["load_average_at_start"], info["cpu_count"] or 1
    print()
    print(f"Sundial benchmarks, {document['date']}, {info['uname']}, {cpus} CPUs")
    busy = " (a loaded machine: timing figures are slower than on an idle one)" if load[0] >= cpus else ""
    print(f"load average at start: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}{busy}")
    print(
        f"{'figure':<{width}}  {'value':>10}  {'unit':<10} {'goal':<24} {'met':<4} {'committed':<24} spread"
    )
    for figure in figures:
        met = "" if figure["met"] is None else ("yes" if figure["met"] else "NO")
        change = verdicts.get(figure["name"])
        against = _against(change)
        print(
            f"{figure['name'][:width]:<{width}}  {figure['value']:>10}  {figure['unit']:<10} "
            f"{figure['goal'] or '':<24} {met:<4} {against:<24} {figure.get('spread') or ''}"
        )
    _print_cost_assumptions(figures)
    moved = [
        change
        for change in changes
        if change.verdict in (results.BETTER, results.WORSE, results.NOT_MEASURED)
    ]
    if moved:
        print("moved beyond their spread, against the committed results:")
        for change in moved:
            print(f"  {change.describe()}")
    for name in sorted(measured):
        status = document["parts"][name]
        if status["status"] == results.FAILED:
            last_line = status["error"].strip().splitlines()[-1]
            print(f"part {name} FAILED after {status['seconds']:.0f} s: {last_line}")
    print(f"({seconds:.0f} s)")


def _against(change: results.Change | None) -> str:
    if change is None or change.before is None:
        return "new"
    return f"{change.verdict} ({change.before:g})"


def _print_cost_assumptions(figures: list[dict[str, Any]]) -> None:
    cost_figures = [figure for figure in figures if "assumptions" in figure.get("detail", {})]
    if not cost_figures:
        return
    print(f"EventBridge Scheduler: ${EVENTBRIDGE_SCHEDULER_PER_MILLION:.2f} per million invocations")
    print("cost assumptions:")
    for key, value in cost_figures[0]["detail"]["assumptions"].items():
        print(f"  {key}: {value}")
    print("bills: $ per million by service (Lambda by function); DynamoDB units an execution by cause:")
    for figure in cost_figures:
        detail = figure["detail"]
        if "dollars_per_million" not in detail or "write_units_by_cause" not in detail:
            continue
        services = dict(detail["dollars_per_million"])
        services.pop("lambda_requests", None)
        services.pop("lambda_gb_seconds", None)
        lambdas = {f"lambda {name}": value for name, value in detail["lambda_dollars_per_million"].items()}
        print(f"  {figure['name']}: ${figure['value']}")
        print(
            "    "
            + ", ".join(f"{name} {value:g}" for name, value in {**services, **lambdas}.items() if value)
        )
        for function, causes in detail["write_units_by_cause"].items():
            if causes:
                print(
                    f"    {function}: " + ", ".join(f"{cause} {units:g}" for cause, units in causes.items())
                )
        for function, causes in detail.get("read_units_by_cause", {}).items():
            if causes:
                reads = ", ".join(f"{cause} {units:g}" for cause, units in causes.items())
                print(f"    {function} reads: {reads}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description="Sundial's benchmarks.")
    parser.add_argument("--part", help=f"run one part only: {', '.join(parts.NAMES)}")
    parser.add_argument("--list", action="store_true", help="list the parts")
    parser.add_argument(
        "--results", default=str(RESULTS), help="the file kept part by part (compared with the committed one)"
    )
    return parser


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _say(text: str) -> None:
    print(f"[bench] {text}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
