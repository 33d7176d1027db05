"""Scaling: due-index items a tick reads with 1,000 due jobs among 1,000 and among 200,000 not-yet-due.

Items, not seconds: the emulator answers an index query by scanning the whole table, so its time
grows with the table while DynamoDB's does not. What must not grow is what the tick reads.

Loading 200,000 items takes the emulator minutes (it re-sizes a whole item for every attribute it
sets), so `python -m bench` runs this module in a child process at a lower CPU priority, alongside
the measurements that mostly wait, and collects its figures at the end. Run alone:
`python -m bench.scaling [OUTPUT.json]`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from itertools import chain
from typing import Any

from bench.harness import Aws, batch_write, job_items, now_ms
from sundial.shared.clock import SystemClock
from sundial.shared.dispatch import Dispatcher
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.store import JobStore

DUE_JOBS = 1000
NOT_YET_DUE = (1000, 200_000)
DAY_MS = 24 * 3600 * 1000
# Not-yet-due jobs spread over the next month, as a real table's would be.
SPREAD_MS = 30 * DAY_MS
NICENESS = 10


class QueryCounter:
    """Counts what the tick's index queries return (Items) and what DynamoDB would say it examined
    (ScannedCount), from the responses themselves: a botocore hook at the client's boundary."""

    def __init__(self, dynamodb: Any) -> None:
        self.queries = 0
        self.items = 0
        self.scanned = 0
        self._lock = threading.Lock()
        dynamodb.meta.events.register("after-call.dynamodb.Query", self._count)

    def _count(self, parsed: dict[str, Any], **_: Any) -> None:
        with self._lock:
            self.queries += 1
            self.items += int(parsed.get("Count", 0))
            self.scanned += int(parsed.get("ScannedCount", 0))


def one_case(aws: Aws, not_yet_due: int) -> dict[str, Any]:
    """Loads DUE_JOBS overdue jobs and `not_yet_due` jobs beyond the tick's horizon, then ticks once."""
    table = aws.resources.table_name
    start = now_ms()
    due = (start - 1000 - n for n in range(DUE_JOBS))
    later = (start + DAY_MS + n * SPREAD_MS // not_yet_due for n in range(not_yet_due))
    loading = time.perf_counter()
    loaded = batch_write(aws.dynamodb, table, job_items(chain(due, later), seed=not_yet_due))
    load_seconds = time.perf_counter() - loading
    counter = QueryCounter(aws.dynamodb)
    clock = SystemClock()
    store = JobStore(aws.dynamodb, table, clock)
    dispatcher = Dispatcher(aws.sqs, aws.resources.queue_urls, aws.resources.dead_letter_queue_url, clock)
    ticking = time.perf_counter()
    report = Scheduler(EngineContext(store, dispatcher, clock)).tick()
    return {
        "due_jobs": DUE_JOBS,
        "not_yet_due": not_yet_due,
        "items_loaded": loaded,
        "rows_read": report.rows_read,
        "claimed": report.claimed,
        "dispatched": report.dispatched,
        "queries": counter.queries,
        "query_items": counter.items,
        "query_scanned_count": counter.scanned,
        "load_seconds": round(load_seconds, 1),
        "tick_seconds": round(time.perf_counter() - ticking, 1),
    }


def measure() -> dict[str, Any]:
    aws = Aws.start("scale-")
    try:
        # One table per case on one emulator: each index query scans only its own table.
        cases = [one_case(aws.on_same_emulator(f"scale-{n}-"), n) for n in NOT_YET_DUE]
    finally:
        aws.stop()
    small, large = cases
    return {
        "cases": cases,
        "ratio": large["rows_read"] / small["rows_read"] if small["rows_read"] else float("nan"),
    }


def main(argv: list[str]) -> int:
    # Lowered before the emulator starts, so that the emulator child inherits it too.
    os.nice(NICENESS)
    result = measure()
    text = json.dumps(result, indent=2)
    if len(argv) > 1:
        with open(argv[1], "w", encoding="utf-8") as output:
            output.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
