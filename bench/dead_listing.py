"""`GET /jobs?status=dead`, its first page, with 2 dead jobs among 100,000 on `sundial local`.

The 2 jobs die for real: created first on a stack with a state directory, their http target a port
nothing listens on, no retries. The stack is stopped, and a child (bench/local_state_load.py) loads
100,000 newer pending jobs, built by the store's own item code, into the same state directory: the 2
dead jobs are the oldest of all, as in the case where a filter read the whole listing index and gave
empty pages. The stack is started again on that state, and the first page is read over HTTP, the
request as a client makes it, timed from the request to the last byte of the answer.

Run alone: `make bench PART=dead-listing` (a few minutes: most of it the load and the restart).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench import processes
from bench.harness import Row, percentile
from bench.stack import LocalStack, rfc3339

JOBS = 100_000
DEAD = 2
LOADS = 20
GOAL_SECONDS = 0.5
# As `sundial local` ticks by default: each tick's writes make the emulator regroup its indexes.
TICK_SECONDS = 60.0
WORKERS = 4
DIE_SECONDS = 120.0
LOAD_SECONDS = 900.0
FIRST_BATCH = 1_000  # through the emulator's requests and log; the rest straight into its tables
STARTUP_PASS = "restarted on saved state"
NOWHERE = "http://127.0.0.1:9/dead"  # the discard port: nothing answers, so every attempt fails


def measure(work: Path) -> Row:
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state"
    dead = _two_dead_jobs(work, state)
    _load(state, work)
    (work / "listing").mkdir()
    stack = LocalStack(work / "listing", WORKERS, TICK_SECONDS, state)
    try:
        _wait_healthy(stack.url)
        _wait_for_startup_pass(stack)
        times, pages = [], []
        for n in range(LOADS + 1):  # the first warms the API handler's imports; not counted
            seconds, page = _first_page(stack.url)
            if n:
                times.append(seconds)
                pages.append(page)
    finally:
        stack.stop()
    found = [[job["id"] for job in page["jobs"]] for page in pages]
    both = sum(1 for ids in found if sorted(ids) == sorted(dead))
    if both != len(pages):
        raise RuntimeError(f"the first page held {found[0]}, not the dead jobs {dead}")
    median = statistics.median(times)
    detail: dict[str, Any] = {
        "jobs_in_table": JOBS + DEAD,
        "dead": DEAD,
        "loads": LOADS,
        "pages_with_both_dead": both,
        "total_answered": pages[0].get("total"),
        "next_token": pages[0].get("next_token"),
        "min_s": round(min(times), 3),
        "median_s": round(median, 3),
        "p90_s": round(percentile(times, 0.9), 3),
        "max_s": round(max(times), 3),
        "what": "GET /jobs?status=dead over HTTP on `sundial local`, request to the answer's last byte",
    }
    name = "GET /jobs?status=dead first page, 2 dead among 100k (median)"
    spread = f"median of {len(times)}, range {min(times):.3f}-{max(times):.3f}; both dead on every page"
    return Row(name, round(median, 3), "s", f"<= {GOAL_SECONDS}", median <= GOAL_SECONDS, detail, spread)


def _two_dead_jobs(work: Path, state: Path) -> list[str]:
    (work / "dying").mkdir()
    stack = LocalStack(work / "dying", WORKERS, TICK_SECONDS, state)
    try:
        ids = []
        for n in range(DEAD):
            body = {
                "name": f"dies-{n}",
                "run_at": rfc3339(time.time() + 2),
                "target": {"type": "http", "url": NOWHERE},
                "max_retries": 0,
            }
            ids.append(stack.create(body)["id"])
        deadline = time.monotonic() + DIE_SECONDS
        while not all(_get(f"{stack.url}/jobs/{job_id}")["status"] == "dead" for job_id in ids):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the jobs {ids} did not die within {DIE_SECONDS:.0f} s")
            time.sleep(0.5)
        return ids
    finally:
        stack.stop()


def _load(state: Path, work: Path) -> None:
    output = work / "load.json"
    counts = [str(FIRST_BATCH), str(JOBS)]
    command = [sys.executable, "-m", "bench.local_state_load", str(state), str(output), *counts]
    with (work / "load.log").open("wb") as log:
        process = processes.spawn(command, stdout=log, stderr=log)
    try:
        process.wait(LOAD_SECONDS)
    finally:
        processes.end(process)
    if process.returncode != 0:
        tail = (work / "load.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"loading the state directory failed ({process.returncode}):\n{tail}")


def _wait_healthy(url: str) -> None:
    """The banner can come before the API answers while the start-up pass reads a large state."""
    deadline = time.monotonic() + LOAD_SECONDS
    while True:
        try:
            _get(f"{url}/health")
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _wait_for_startup_pass(stack: LocalStack) -> None:
    """The start-up pass over a restored state reads the due index while the API already answers:
    pages timed during it would measure the pass."""
    deadline = time.monotonic() + LOAD_SECONDS
    while STARTUP_PASS not in stack.log_path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"`sundial local` never logged '{STARTUP_PASS}'")
        time.sleep(0.5)


def _first_page(url: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    page = _get(f"{url}/jobs?status=dead")
    return time.perf_counter() - started, page


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=60) as answer:
        found: dict[str, Any] = json.loads(answer.read())
    return found


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sundial-bench-dead-") as temp:
        row = measure(Path(temp))
    print(f"{row.name}: {row.value} {row.unit} (goal {row.goal}: {'met' if row.met else 'NOT met'})")
    print(f"  {row.spread}; {row.detail}")
