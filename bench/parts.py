"""The bench's parts, in the order `make bench` runs them; `make bench PART=<name>` runs one.

The scaling part is a child process at a lower CPU priority (it mostly loads its emulator, and counts
items, not seconds): it starts before the first part and is collected after the last, while the
timing measurements run in the foreground.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import (
    bench_next_runs,
    bulk_cancel,
    burst,
    console_page,
    cost,
    dead_listing,
    idle,
    idle_local,
    lateness,
    ledger,
    local_state,
    priority,
    processes,
    secret_reads,
    throughput,
)
from bench.harness import Aws, Repeated, Row
from bench.stack import Listener, running

# Jobs at once for `sundial local`, split 10:4:1 (40/16/4): enough for each queue alone to keep the
# emulator busy, so a burst's drain measures the emulator, and in the deployed split, so it drains
# in priority order.
WORKERS = 60
TICK_SECONDS = 60.0
SCALING_TIMEOUT_SECONDS = 900
SCALING_GOAL = 1.1
NEXT_RUNS_REPETITIONS = 5


@dataclass
class Context:
    """What the parts of one run share: a scratch directory, the committed figures, and the rows
    measured so far (the bursts' bar is the worker's writes per execution that the cost part counts)."""

    work: Path
    committed: list[dict[str, Any]]
    rows: dict[str, list[Row]] = field(default_factory=dict)
    scaling: Any = None  # the scaling child, once started


@dataclass(frozen=True)
class Part:
    name: str
    about: str
    measure: Callable[[Context], list[Row]]


def _in_process(context: Context) -> list[Row]:
    aws = Aws.start("bench-")
    try:
        rows = [throughput.measure(aws)]
        cost_rows, assumptions = cost.measure(aws)
    finally:
        aws.stop()
    for row in cost_rows:
        row.detail["assumptions"] = assumptions
    return rows + cost_rows


def _on_local_stack(context: Context) -> list[Row]:
    writes_per_execution = _worker_writes_per_execution(context)
    listener = Listener()
    try:
        with running(context.work, WORKERS, TICK_SECONDS) as stack:
            _say("the stack idle, for a minute")
            rows = [idle_local.measure(stack.pid)]
            rows += lateness.measure(stack, listener)
            # Before the flood, whose long jobs would still hold the emulator during the bursts.
            _say("three bursts of 1,000 jobs due in one second")
            rows += burst.measure(stack, listener, writes_per_execution)
            _say("priority isolation: five idle windows, a flood, five flooded windows")
            rows.append(priority.measure(stack, listener))
    except Exception:
        # The log lives in a directory that is about to go: show its end before it does.
        print((context.work / "sundial-local.log").read_text(errors="replace")[-4000:], file=sys.stderr)
        raise
    finally:
        listener.stop()
    return rows


def _worker_writes_per_execution(context: Context) -> float:
    """The item writes a worker makes per execution of a one-off sent by a tick, at the defaults, as
    the cost part counted them in this run, or else in the committed figures (the bursts' jobs are
    such one-offs)."""
    name = f"cost: one-off, sent by a tick [{cost.DEFAULT.label}]"
    measured = [row.as_dict() for row in context.rows.get("in-process", [])]
    figure = next((f for f in [*measured, *context.committed] if f["name"] == name), None)
    if figure is None:
        raise RuntimeError(f"no figure '{name}' measured or committed: run the in-process part first")
    calls: dict[str, float] = figure["detail"]["calls_per_execution"]["worker"]
    writes = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")
    return sum(count for operation, count in calls.items() if operation in writes)


def _idle(context: Context) -> list[Row]:
    aws = Aws.start("bench-idle-")
    try:
        start_ms = (time.time_ns() // 1_000_000 // cost.MINUTE_MS) * cost.MINUTE_MS + 17_000
        return idle.measure(aws, start_ms)
    finally:
        aws.stop()


def _ledger(context: Context) -> list[Row]:
    aws = Aws.start("bench-")
    try:
        return ledger.measure(aws)
    finally:
        aws.stop()


def _secret_reads(context: Context) -> list[Row]:
    aws = Aws.start("bench-")
    try:
        return secret_reads.measure(aws)
    finally:
        aws.stop()


def _local_state(context: Context) -> list[Row]:
    return local_state.with_and_without(context.work / "local-state")


def _local_state_startup(context: Context) -> list[Row]:
    return local_state.size_and_startup(context.work / "local-state-startup")


def _console(context: Context) -> list[Row]:
    return [console_page.measure(context.work / "console")]


def _dead_listing(context: Context) -> list[Row]:
    return [dead_listing.measure(context.work / "dead-listing")]


def _bulk_cancel(context: Context) -> list[Row]:
    return [bulk_cancel.measure(context.work / "bulk-cancel")]


def _next_runs(context: Context) -> list[Row]:
    runs = [bench_next_runs.measure() for _ in range(NEXT_RUNS_REPETITIONS)]
    cron = {"expression": bench_next_runs.CRON, "timezone": bench_next_runs.TIMEZONE}
    rate = {"expression": "rate(5 minutes)", "timezone": bench_next_runs.TIMEZONE}
    rows = []
    for name in runs[0]:
        figure = Repeated(tuple(run[name] for run in runs))
        detail = cron if "cron" in name else rate
        spread = figure.describe(1)
        rows.append(
            Row(
                f"next_runs {name.removesuffix('_us')}",
                round(figure.median, 1),
                "us",
                None,
                None,
                detail,
                spread,
            )
        )
    return rows


def start_scaling(context: Context) -> None:
    log = (context.work / "scaling.log").open("wb")
    command = [sys.executable, "-m", "bench.scaling", str(context.work / "scaling.json")]
    context.scaling = processes.spawn(command, stdout=log, stderr=log)


def _scaling(context: Context) -> list[Row]:
    if context.scaling is None:
        start_scaling(context)
    process = context.scaling
    process.wait(SCALING_TIMEOUT_SECONDS)
    output = context.work / "scaling.json"
    if process.returncode != 0 or not output.exists():
        log = (context.work / "scaling.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"the scaling child exited with {process.returncode}:\n{log}")
    result: dict[str, Any] = json.loads(output.read_text())
    ratio = result["ratio"]
    name = "scaling: index items read, 200k / 1k not yet due"
    return [Row(name, round(ratio, 3), "x", f"<= {SCALING_GOAL}", ratio <= SCALING_GOAL, result)]


PARTS = (
    Part("in-process", "tick throughput and cost on an in-process engine", _in_process),
    Part("idle", "a deployed stage's monthly bill with no jobs: its template and an idle tick", _idle),
    Part(
        "ledger",
        "the occurrence ledger's writes (never paused; a pause) and reads (a page), counted (a few minutes)",
        _ledger,
    ),
    Part(
        "local-stack",
        "start lateness, bursts and priority isolation on `sundial local` (about 15 min when loaded)",
        _on_local_stack,
    ),
    Part(
        "local-state", "the local stack with and without a state directory: five paired rounds", _local_state
    ),
    Part(
        "local-state-startup",
        "a state directory's size, and start-up with 100,000 jobs in it (a few minutes)",
        _local_state_startup,
    ),
    Part(
        "console", "the console's jobs page with 10,000 jobs in headless Chromium (about a minute)", _console
    ),
    Part(
        "dead-listing",
        "GET /jobs?status=dead, first page, 2 dead among 100,000 jobs on `sundial local` (a few minutes)",
        _dead_listing,
    ),
    Part(
        "bulk-cancel",
        "a bulk cancel of 10,000 jobs on `sundial local`, killed mid-way (about ten minutes)",
        _bulk_cancel,
    ),
    Part("next-runs", "next_runs per call", _next_runs),
    Part(
        "secret-reads",
        "Secrets Manager reads and KMS Decrypt calls per execution, cold and warm, and their cost",
        _secret_reads,
    ),
    Part(
        "scaling",
        "index items a tick reads among 200,000 jobs (a child at a lower priority, collected last)",
        _scaling,
    ),
)
NAMES = tuple(part.name for part in PARTS)


def selected(name: str | None) -> tuple[Part, ...]:
    """Every part, or the one named. Raises ValueError naming the parts for an unknown name."""
    if not name:
        return PARTS
    found = [part for part in PARTS if part.name == name]
    if not found:
        raise ValueError(f"no bench part '{name}'; the parts: {', '.join(NAMES)}")
    return tuple(found)


def _say(text: str) -> None:
    print(f"[bench] {text}", flush=True)
