"""The scheduler Lambda: EventBridge fires it once a minute, and each such event is one tick of the
engine. A tick with more due than it can take by its deadline invokes this same function with shares
of the shards (sundial/shared/engine/claimers.py): each such event is a claimer's pass over them."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from sundial.functions import clients
from sundial.shared import constants as c
from sundial.shared.clock import SystemClock
from sundial.shared.engine.claimers import ClaimRequest, LambdaClaimers
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.engine.tick_report import TickReport
from sundial.shared.service.operations import Operations

# The tick's deadline, this long before the Lambda times out: the sends under way finish, claimed jobs
# not sent are released and the sent marks written.
SAFETY_MARGIN_MS = 10_000
# After its own work, a tick advances bulk operations for at most this long: the next tick starts
# on time (a local stack runs its ticks one after another).
OPERATIONS_MS = 20_000

logger = Logger(service=c.METRICS_SERVICE)
metrics = Metrics(namespace=c.METRICS_NAMESPACE, service=c.METRICS_SERVICE)
tracer = Tracer(service=c.METRICS_SERVICE)


@clients.lazy
def _scheduler() -> Scheduler:
    # Lambda names the function it runs; elsewhere (a local stack) no claimer is at hand.
    name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    claimers = LambdaClaimers(clients.clients().client("lambda"), name) if name else None
    engine = EngineContext(clients.store(), clients.dispatcher(), SystemClock())
    return Scheduler(engine, claimers=claimers)


@clients.lazy
def _operations() -> Operations:
    return Operations(clients.store(), clients.acting_service(), SystemClock(), threads="bulk-tick")


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    clients.name_stack_on(metrics)
    clock = SystemClock()
    deadline_ms = clock.now_ms() + context.get_remaining_time_in_millis() - SAFETY_MARGIN_MS
    request = ClaimRequest.of(event)
    if request is not None:
        report = _scheduler().tick(deadline_ms, shards=request.shards)
        record_tick(report)
        logger.info("claimer done", extra={"shards": request.shards, "report": asdict(report)})
        return _answer(report)
    return _tick(EventBridgeEvent(event), clock, deadline_ms)


def _tick(event: EventBridgeEvent, clock: SystemClock, deadline_ms: int) -> dict[str, Any]:
    report = _scheduler().tick(deadline_ms)
    record_tick(report)
    _annotate(report)
    logger.info("tick done", extra={"event_time": event.time, "report": asdict(report)})
    try:
        running = _operations().advance_all(min(deadline_ms, clock.now_ms() + OPERATIONS_MS))
    except Exception:
        # The tick's own work is done and counted; an operation goes on from its last slice saved.
        logger.exception("advancing bulk operations failed")
    else:
        if running:
            logger.info("bulk operations still running", extra={"operations": running})
    return _answer(report)


def _answer(report: TickReport) -> dict[str, Any]:
    return {"claimed": report.claimed, "reclaimed": report.reclaimed, "dispatched": report.dispatched}


def _annotate(report: TickReport) -> None:
    """Names the first jobs the tick sent, and their traces, on its X-Ray segment: an occurrence's
    tick is found by `annotation.trace_id CONTAINS "<id>"`, as its API call and its worker are."""
    if report.sent_jobs:
        tracer.put_annotation(key=c.JOB_ANNOTATION, value=" ".join(report.sent_jobs))
    if report.sent_traces:
        tracer.put_annotation(key=c.TRACE_ANNOTATION, value=" ".join(report.sent_traces))


def record_tick(report: TickReport) -> None:
    """Publishes what the tick did. Only what happened: a custom metric is billed for every hour it
    has a value, and a stage's idle ticks would otherwise keep six of them alive all month ($1.80).
    Their alarms read no data as nothing happened, and the dashboard's graphs show a gap for zero."""
    published = {
        c.Metric.CLAIMED: (MetricUnit.Count, report.claimed),
        c.Metric.RECLAIMED: (MetricUnit.Count, report.reclaimed),
        c.Metric.DISPATCHED: (MetricUnit.Count, report.dispatched),
        c.Metric.DEAD: (MetricUnit.Count, report.dead),
        c.Metric.MISSED_OCCURRENCES: (MetricUnit.Count, report.missed),
        c.Metric.OLDEST_DUE_LATENESS_MS: (MetricUnit.Milliseconds, report.oldest_lateness_ms),
    }
    for name, (unit, value) in published.items():
        if value:
            metrics.add_metric(name=name, unit=unit, value=value)
    if report.dead_jobs:
        # Both a lost attempt that ended its occurrence and an alert a worker left owed.
        logger.warning("tick sent dead-job alerts", extra={"job_ids": report.dead_jobs})
