"""A bulk cancel of 10,000 matching jobs on `sundial local`, killed with SIGKILL mid-way and started
again: the end-to-end test tests/e2e/test_bulk_crash.py at 10,000 jobs (`make test` runs it at 450),
run as a child. The test asserts that every matching job was cancelled by exactly one write, that
none of the 100 others was touched and that the operation finished after the restart; once it has
passed, it writes what it counted and how long each stage took, which this part reports.

Run alone: `make bench PART=bulk-cancel` (about ten minutes on two loaded cores).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bench import processes
from bench.harness import Row

MATCHING = 10_000
TIMEOUT_SECONDS = 3600
TEST = "tests/e2e/test_bulk_crash.py"


def measure(work: Path) -> Row:
    work.mkdir(parents=True, exist_ok=True)
    report, log = work / "bulk-cancel.json", work / "bulk-cancel.log"
    env = {**os.environ, "SUNDIAL_BULK_JOBS": str(MATCHING), "SUNDIAL_BULK_REPORT": str(report)}
    command = [sys.executable, "-m", "pytest", TEST, "-q", "-p", "no:cacheprovider", "-o", "timeout=0"]
    command += ["--basetemp", str(work / "pytest")]
    with log.open("wb") as out:
        process = processes.spawn(command, stdout=out, stderr=out, env=env)
        process.wait(TIMEOUT_SECONDS)
    if process.returncode != 0 or not report.exists():
        raise RuntimeError(f"the bulk cancel test failed ({process.returncode}):\n{log.read_text()[-3000:]}")
    figures = json.loads(report.read_text())
    cancelled = int(figures["matching"])  # the test passed: each of them cancelled by one write
    detail = {
        **figures,
        "cancelled_exactly_once": cancelled,
        "others_touched": 0,
        "cancels_per_second": round(
            cancelled / (figures["until_kill_seconds"] + figures["after_restart_seconds"]), 1
        ),
        "what": "POST /jobs/actions cancel by name_prefix; SIGKILL of `sundial local` after a quarter; "
        "started again on the same emulator; every job item read back from the table",
    }
    name = "bulk cancel of 10k matching jobs, killed mid-way: cancelled exactly once"
    return Row(name, cancelled, f"of {MATCHING}", f"= {MATCHING}", cancelled == MATCHING, detail)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sundial-bench-bulk-") as temp:
        row = measure(Path(temp))
    print(f"{row.name}: {row.value} {row.unit}; {row.detail}")
