"""Tick throughput: one tick over 1,000 due jobs, against the emulator's raw cost of the same work,
three times, on one emulator in one run.

The same work is what the tick had to do, done without Sundial: as many conditional UpdateItems
on job items (each returning the new item, as a claim does) from as many threads as the tick's, and
alongside them, from one thread as the tick's sender, as many SendMessageBatch calls carrying as many
messages of the same size. The emulator is the bottleneck (it serialises every request, and its
sends slow down as a queue grows), so the ratio of the raw work's seconds to the tick's says how
much the tick adds to what the emulator must do anyway.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.harness import Aws, Repeated, Row, batch_write, job_items, now_ms, raw_claim
from sundial.contract.vocabulary import Priority
from sundial.shared.clock import SystemClock
from sundial.shared.dispatch import Dispatcher, JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.store import JobStore

DUE_JOBS = 1000
THREADS = 8  # the tick's own parallelism (Scheduler's default)
REPETITIONS = 3
GOAL_RATIO = 0.8


class SendCounter:
    """The tick's SendMessageBatch calls: how many, with how many entries, from botocore hooks."""

    def __init__(self, sqs: Any) -> None:
        self.calls = 0
        self.entries = 0
        self.bodies: list[str] = []
        sqs.meta.events.register("provide-client-params.sqs.SendMessageBatch", self._sent)

    def _sent(self, params: dict[str, Any], **_: Any) -> None:
        self.calls += 1
        self.entries += len(params.get("Entries", []))
        self.bodies += [entry["MessageBody"] for entry in params.get("Entries", [])]


def tick_once(aws: Aws) -> tuple[float, dict[str, Any], SendCounter]:
    start = now_ms()
    batch_write(aws.dynamodb, aws.resources.table_name, job_items((start - n for n in range(DUE_JOBS)), 7))
    clock = SystemClock()
    store = JobStore(aws.dynamodb, aws.resources.table_name, clock)
    res = aws.resources
    sends = SendCounter(aws.sqs)
    dispatcher = Dispatcher(aws.sqs, res.queue_urls, res.dead_letter_queue_url, clock)
    scheduler = Scheduler(EngineContext(store, dispatcher, clock), THREADS)
    started = time.perf_counter()
    report = scheduler.tick()
    seconds = time.perf_counter() - started
    counts = {"claimed": report.claimed, "dispatched": report.dispatched, "lost_races": report.lost_races}
    return seconds, counts, sends


def raw_once(aws: Aws, updates: int, sends: SendCounter) -> float:
    """The same count of conditional updates (THREADS threads) and, alongside, of batch sends."""
    table = aws.resources.table_name
    later = now_ms() + 24 * 3600 * 1000
    loaded = list(job_items((later + n for n in range(updates)), seed=updates))
    batch_write(aws.dynamodb, table, loaded)
    urls = list(aws.resources.queue_urls.values())
    per_call = max(1, round(sends.entries / max(1, sends.calls)))
    bodies = sends.bodies or [
        JobMessage(job_id="x", token="t", due_at=0, priority=Priority.LOW).model_dump_json()
    ]

    def update(item: dict[str, Any]) -> None:
        raw_claim(aws.dynamodb, table, item)

    def send_all() -> None:
        for n in range(sends.calls):
            entries: Any = [
                {"Id": str(i), "MessageBody": bodies[(n * per_call + i) % len(bodies)], "DelaySeconds": 0}
                for i in range(per_call)
            ]
            aws.sqs.send_message_batch(QueueUrl=urls[n % len(urls)], Entries=entries)

    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool, ThreadPoolExecutor(1) as sender:
        sent = sender.submit(send_all)
        list(pool.map(update, loaded))
        sent.result()
    return time.perf_counter() - started


def measure(aws: Aws) -> Row:
    ratios, runs = [], []
    for n in range(REPETITIONS):
        tick_seconds, counts, sends = tick_once(aws.on_same_emulator(f"tick{n}-"))
        raw_seconds = raw_once(aws.on_same_emulator(f"raw{n}-"), counts["claimed"], sends)
        ratios.append(raw_seconds / tick_seconds)
        runs.append(
            {
                **counts,
                "tick_seconds": round(tick_seconds, 2),
                "tick_jobs_per_second": round(counts["dispatched"] / tick_seconds, 1),
                "send_calls": sends.calls,
                "send_entries": sends.entries,
                "raw_seconds": round(raw_seconds, 2),
                "ratio": round(raw_seconds / tick_seconds, 3),
            }
        )
    repeated = Repeated(tuple(ratios))
    ratio = repeated.median
    return Row(
        "tick throughput / the emulator's raw cost of the same work",
        round(ratio, 2),
        "x",
        f">= {GOAL_RATIO}",
        ratio >= GOAL_RATIO,
        {"due_jobs": DUE_JOBS, "threads": THREADS, "ratios": repeated.as_dict(3), "runs": runs},
        repeated.describe(2),
    )
