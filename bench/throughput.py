"""Tick throughput: due jobs one tick claims and dispatches per second, over the emulator's raw
conditional-update rate measured on the same emulator in the same run.

The emulator is the bottleneck (it serialises every DynamoDB request), so the ratio says how much of
it the tick's own work wastes. Its SQS sends slow down as a queue grows (a drainer standing in for
the workers made that worse: it competes for the same emulator process), so the detail splits the
tick's seconds into its claims and its sends.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.harness import Aws, Row, batch_write, job_items, now_ms
from shared.clock import SystemClock
from shared.dispatch import Dispatcher
from shared.engine.scheduler import Scheduler
from shared.store import JobStore

DUE_JOBS = 2000
RAW_UPDATES = 400
THREADS = 8  # the tick's own parallelism
GOAL_RATIO = 0.7


def raw_rate(aws: Aws, threads: int) -> float:
    """Conditional UpdateItems per second on job items, each returning the new item (as a claim does)."""
    table = aws.resources.table_name
    later = now_ms() + 24 * 3600 * 1000
    loaded = list(job_items((later + n for n in range(RAW_UPDATES)), seed=threads))
    batch_write(aws.dynamodb, table, loaded)
    keys = [{"pk": item["pk"], "sk": item["sk"]} for item in loaded]

    def update(key: dict[str, Any]) -> None:
        aws.dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET #status = :queued, #version = #version + :one",
            ConditionExpression="#status IN (:pending, :failed)",
            ExpressionAttributeNames={"#status": "status", "#version": "version"},
            ExpressionAttributeValues={
                ":queued": {"S": "queued"},
                ":pending": {"S": "pending"},
                ":failed": {"S": "failed"},
                ":one": {"N": "1"},
            },
            ReturnValues="ALL_NEW",
        )

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(update, keys))
    return len(keys) / (time.perf_counter() - started)


class SendTimer:
    """Seconds the tick spent in its sends (one at a time, so their sum is wall time), from botocore
    hooks."""

    def __init__(self, sqs: Any) -> None:
        self.send_seconds = 0.0
        sqs.meta.events.register("before-call.sqs.SendMessageBatch", self._send_started)
        sqs.meta.events.register("after-call.sqs.SendMessageBatch", self._send_answered)

    def _send_started(self, context: dict[str, Any], **_: Any) -> None:
        context["bench_sent_at"] = time.perf_counter()

    def _send_answered(self, context: dict[str, Any], **_: Any) -> None:
        self.send_seconds += time.perf_counter() - context["bench_sent_at"]


def measure(aws: Aws) -> Row:
    raw_single = raw_rate(aws.on_same_emulator("raw1-"), 1)
    raw_parallel = raw_rate(aws.on_same_emulator("raw8-"), THREADS)
    ticked = aws.on_same_emulator("tick-")
    start = now_ms()
    batch_write(
        ticked.dynamodb, ticked.resources.table_name, job_items((start - n for n in range(DUE_JOBS)), 7)
    )
    clock = SystemClock()
    store = JobStore(ticked.dynamodb, ticked.resources.table_name, clock)
    res = ticked.resources
    scheduler = Scheduler(
        store, Dispatcher(ticked.sqs, res.queue_urls, res.dead_letter_queue_url, clock), clock
    )
    phases = SendTimer(ticked.sqs)
    started = time.perf_counter()
    report = scheduler.tick()
    seconds = time.perf_counter() - started
    rate = report.dispatched / seconds
    # What the tick would do if sends cost it nothing: the emulator's sends slow as queues grow.
    without_sends = report.dispatched / (seconds - phases.send_seconds)
    raw = max(raw_single, raw_parallel)
    detail = {
        "due_jobs": DUE_JOBS,
        "claimed": report.claimed,
        "dispatched": report.dispatched,
        "lost_races": report.lost_races,
        "tick_seconds": round(seconds, 2),
        "tick_jobs_per_second": round(rate, 1),
        "raw_updates_per_second_1_thread": round(raw_single, 1),
        f"raw_updates_per_second_{THREADS}_threads": round(raw_parallel, 1),
        "send_seconds": round(phases.send_seconds, 2),
        "ratio_with_sends_left_out": round(without_sends / max(raw_single, raw_parallel), 2),
    }
    ratio = rate / raw
    return Row(
        "tick throughput / raw update rate",
        round(ratio, 2),
        "x",
        f">= {GOAL_RATIO}",
        ratio >= GOAL_RATIO,
        detail,
    )
