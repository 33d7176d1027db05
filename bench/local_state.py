"""What keeping the local stack's tables in a state directory costs, and what it holds.

- Start lateness p99 and create throughput on `sundial local`, in memory and on a state directory:
  five rounds, each a pair of runs (a fresh stack each) back to back, which goes first alternating;
  each figure is the median over the rounds of the pair's ratio, state over memory, so that a round
  on a busier moment of the machine weighs on both sides of its own ratio. The goal is within 10 %.
- The state's size per 10,000 jobs: the log after loading them, and the snapshot it compacts into.
- Start-up with 100,000 jobs in the state: how long the emulator takes to restore them (and to stop
  after its SIGTERM), and how long `sundial local` takes until its API answers (restore, then the
  start-up pass over the due index).

The 100,000 jobs are not created through the API (at a few dozen creates a second here, that would
take most of an hour): a child process loads job items, built by the store's own item code, into an
emulator on the state directory with BatchWriteItem, so that they pass through the same log, then
compacts them into a snapshot, as a long-lived directory would be.

Run alone: `python -m bench.local_state`, or one of its two parts: `make bench PART=local-state`
(with and without) or `PART=local-state-startup` (size and start-up).
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench import processes
from bench.harness import Repeated, Row, percentile
from bench.lateness import lateness_of, run_jobs, wait_for_calls
from bench.stack import Listener, LocalStack
from sundial.local_stack.child import free_port, wait_for_port
from sundial.local_stack.options import DEFAULT_WORKERS

ROUNDS = 5
JOBS = 120
LEAD_SECONDS = 10.0
SPREAD_SECONDS = 20.0
WORKERS = DEFAULT_WORKERS
TICK_SECONDS = 60.0
WITHIN = 0.10
SIZE_JOBS = 10_000
STARTUP_JOBS = 100_000
STARTUP_RUNS = 3
READY_SECONDS = 600.0
# The emulator stops within a few seconds of its SIGTERM, a restore included; past this it is killed.
STOP_SECONDS = 30.0


def measure(work: Path) -> list[Row]:
    return with_and_without(work / "with-and-without") + size_and_startup(work / "startup")


# --- lateness and throughput ----------------------------------------------------------------------


def with_and_without(work: Path) -> list[Row]:
    listener = Listener()
    runs: dict[str, list[dict[str, float]]] = {"memory": [], "state": []}
    try:
        for n in range(ROUNDS):
            for mode in ("memory", "state") if n % 2 == 0 else ("state", "memory"):
                place = work / f"{mode}-{n}"
                place.mkdir(parents=True)
                state = place / "state" if mode == "state" else None
                stack = LocalStack(place, WORKERS, TICK_SECONDS, state)
                try:
                    runs[mode].append(_one_run(stack, listener, seed=1000 * n + len(mode)))
                finally:
                    stack.stop()
    finally:
        listener.stop()
    return _rows(runs)


def _one_run(stack: LocalStack, listener: Listener, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    start = time.time()
    instants = sorted(start + LEAD_SECONDS + rng.uniform(0, SPREAD_SECONDS) for _ in range(JOBS))
    target = {"type": "http", "url": listener.url(f"ok/state-{seed}")}
    scheduled, create_seconds = run_jobs(stack, listener, instants, {"target": target})
    wait_for_calls(listener, scheduled)
    late, counts = lateness_of(listener, scheduled)
    return {
        "p99": percentile(late, 0.99),
        "creates_per_second": JOBS / create_seconds,
        "not_called_once": sum(1 for count in counts.values() if count != 1),
    }


def _rows(runs: dict[str, list[dict[str, float]]]) -> list[Row]:
    def figure(mode: str, name: str) -> Repeated:
        return Repeated(tuple(run[name] for run in runs[mode]))

    def ratios(name: str) -> Repeated:
        pairs = zip(runs["state"], runs["memory"], strict=True)
        return Repeated(tuple(state[name] / memory[name] for state, memory in pairs))

    p99 = {mode: figure(mode, "p99") for mode in runs}
    rate = {mode: figure(mode, "creates_per_second") for mode in runs}
    p99_ratio, rate_ratio = ratios("p99"), ratios("creates_per_second")
    detail = {
        "jobs_per_run": JOBS,
        "rounds": ROUNDS,
        "p99_ratios": p99_ratio.as_dict(3),
        "creates_per_second_ratios": rate_ratio.as_dict(3),
        "per_run": {mode: [{k: round(v, 4) for k, v in run.items()} for run in runs[mode]] for mode in runs},
    }
    return [
        Row(
            "state directory: start lateness p99, with / in memory",
            round(p99_ratio.median, 3),
            "x",
            f"<= {1 + WITHIN:.2f}",
            p99_ratio.median <= 1 + WITHIN,
            detail,
            f"ratio {p99_ratio.describe(2)}; p99 {p99['state'].median:.3f} s / {p99['memory'].median:.3f} s",
        ),
        Row(
            "state directory: creates per second, with / in memory",
            round(rate_ratio.median, 3),
            "x",
            f">= {1 - WITHIN:.2f}",
            rate_ratio.median >= 1 - WITHIN,
            spread=f"ratio {rate_ratio.describe(2)}; "
            f"{rate['state'].median:.1f}/s / {rate['memory'].median:.1f}/s",
        ),
    ]


# --- size and start-up ----------------------------------------------------------------------------


def size_and_startup(work: Path) -> list[Row]:
    work.mkdir(parents=True)
    state = work / "state"
    loaded = _load(state, work)
    starts = [_emulator_start(state, work, n) for n in range(STARTUP_RUNS)]
    emulator = Repeated(tuple(start for start, _ in starts))
    stops = Repeated(tuple(stop for _, stop in starts))
    local = _local_start(state, work)
    size = loaded["sizes"][str(SIZE_JOBS)]
    return [
        Row(
            f"state directory: size per {SIZE_JOBS:,} jobs (snapshot / log)",
            round(size["snapshot_bytes"] / 1e6, 2),
            "MB",
            None,
            None,
            loaded,
            f"log {size['log_bytes'] / 1e6:.2f} MB before compaction",
        ),
        Row(
            f"state directory: emulator start with {STARTUP_JOBS:,} jobs",
            round(emulator.median, 2),
            "s",
            spread=emulator.describe(2),
        ),
        Row(
            f"state directory: emulator stop (SIGTERM to exit) with {STARTUP_JOBS:,} jobs",
            round(stops.median, 2),
            "s",
            spread=stops.describe(2),
        ),
        Row(
            f"state directory: `sundial local` ready with {STARTUP_JOBS:,} jobs",
            round(local["ready_seconds"], 2),
            "s",
            None,
            None,
            local,
            f"of which the start-up pass {local['pass_seconds']:.2f} s; "
            f"a snapshot of them took {loaded['compact_seconds'][str(STARTUP_JOBS)]:.2f} s",
        ),
    ]


def _load(state: Path, work: Path) -> dict[str, Any]:
    output = work / "load.json"
    command = [sys.executable, "-m", "bench.local_state_load", str(state), str(output)]
    with (work / "load.log").open("wb") as log:
        process = processes.spawn([*command, str(SIZE_JOBS), str(STARTUP_JOBS)], stdout=log, stderr=log)
    try:
        process.wait(READY_SECONDS)
    finally:
        processes.end(process)
    if process.returncode != 0:
        tail = (work / "load.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"loading the state directory failed ({process.returncode}):\n{tail}")
    loaded: dict[str, Any] = json.loads(output.read_text())
    return loaded


def _emulator_start(state: Path, work: Path, n: int) -> tuple[float, float]:
    """Seconds from the command to the emulator listening, its tables restored; and from its
    SIGTERM to its exit."""
    port = free_port()
    started = time.monotonic()
    command = [
        sys.executable,
        "-m",
        "sundial.local_stack.cli",
        "emulator",
        "--port",
        str(port),
        "--state-dir",
        str(state),
    ]
    with (work / f"emulator-{n}.log").open("wb") as log:
        process = processes.spawn(command, stdout=log, stderr=log)
    try:
        wait_for_port("127.0.0.1", port, READY_SECONDS, process)
        ready = time.monotonic() - started
        stopping = time.monotonic()
        status = processes.end(process, STOP_SECONDS)
        if status != 0:
            raise RuntimeError(f"the emulator stopped with {status}, not 0, after its SIGTERM")
        return ready, time.monotonic() - stopping
    finally:
        if process.returncode is None:
            processes.end(process, STOP_SECONDS)


def _local_start(state: Path, work: Path) -> dict[str, float]:
    """Seconds from the command to `sundial local` answering GET /health, and its start-up pass."""
    started = time.monotonic()
    stack = LocalStack(work, WORKERS, TICK_SECONDS, state)
    try:
        _wait_healthy(stack.url)
        ready = time.monotonic() - started
    finally:
        stack.stop()
    log = stack.log_path.read_text(errors="replace")
    passes = [line for line in log.splitlines() if "restarted on saved state" in line]
    pass_seconds = float(passes[-1].rsplit("(", 1)[1].split(" s)")[0]) if passes else float("nan")
    return {"ready_seconds": round(ready, 3), "pass_seconds": pass_seconds}


def _wait_healthy(url: str) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {READY_SECONDS:.0f} s")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="sundial-bench-state-") as temp:
        rows = measure(Path(temp))
    for row in rows:
        met = "" if row.met is None else ("yes" if row.met else "NO")
        print(f"{row.name:<62} {row.value:>8} {row.unit:<4} {row.goal or '':<8} {met:<4} {row.spread or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
