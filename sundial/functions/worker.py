"""The worker Lambda: SQS batches of up to ten from the three priority queues, one job attempt per
record, the records of a batch side by side.

Each record runs in a thread of its own (Powertools' AsyncBatchProcessor awaits them together), so a
batch costs one invocation, one receive and one delete while no job waits for another's target.
Failed records are reported one by one (ReportBatchItemFailures), so one bad record never redelivers
its batch. A record that is not a job message can never succeed: it goes to the dead-letter queue
at once instead of cycling through redeliveries.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from sundial.functions import clients
from sundial.shared import constants as c
from sundial.shared import lifecycle, tracing
from sundial.shared.clock import SystemClock
from sundial.shared.dispatch import AlertMessage, JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.worker import AttemptResult, Outcome, Worker
from sundial.shared.models import Job
from sundial.shared.targets import Delivery, deliver
from sundial.shared.targets.alert_delivery import AlertNotice, deliver_alert

# Not in shared.constants.Metric: it counts messages, not jobs.
ATTEMPT_METRICS = {
    Outcome.SUCCEEDED: c.Metric.SUCCEEDED,
    Outcome.FAILED: c.Metric.FAILED,
    Outcome.DEAD: c.Metric.DEAD,
}

logger = Logger(service=c.METRICS_SERVICE)
metrics = Metrics(namespace=c.METRICS_NAMESPACE, service=c.METRICS_SERVICE)
tracer = Tracer(service=c.METRICS_SERVICE)
# The engine logs through the standard library: same JSON lines, same job keys.
copy_config_to_registered_loggers(source_logger=logger, include={"sundial.shared"})
# The records of a batch add metrics from their own threads; Metrics keeps them in plain dicts.
_metrics_lock = threading.Lock()


def _deliver(job: Job, delivery: Delivery, limit_seconds: float) -> None:
    deliver(
        job.target,
        delivery,
        timeout_seconds=limit_seconds,
        clients=clients.aws_clients(),
        allow_private=clients.settings().allow_private_targets,
        forbidden_queue_urls=clients.worker_dispatcher().own_queue_urls,
        keys=clients.delivery_keys(),
    )


def _send_route(job: Job, notice: AlertNotice) -> None:
    assert job.on_dead is not None  # send_route sends only to a job that has a route
    deliver_alert(
        job.on_dead,
        notice,
        clients=clients.aws_clients(),
        allow_private=clients.settings().allow_private_targets,
        keys=clients.delivery_keys(),
    )


@clients.lazy
def _worker() -> Worker:
    config = clients.settings()
    return Worker(
        EngineContext(clients.store(), clients.worker_dispatcher(), SystemClock()),
        _deliver,
        config.worker_id,
        history=config.history,
        route=_send_route,
    )


def _alert_errand(body: str) -> AlertMessage | None:
    """The tick's errand to send an owed route alert, when the record is one."""
    try:
        return AlertMessage.model_validate_json(body)
    except ValidationError:
        return None


def record_handler(
    record: SQSRecord, deadline_ms: int | None = None, traced: list[tuple[str, str | None]] | None = None
) -> None:
    """One job message. Raising reports the record failed, and SQS redelivers it; the fence makes
    the redelivery harmless. `deadline_ms` is when the invocation ends: attempts nest inside it.
    `traced` collects each attempt's job id and trace id for the invocation's X-Ray segment."""
    try:
        message = JobMessage.model_validate_json(record.body)
    except ValidationError as exc:
        errand = _alert_errand(record.body)
        if errand is not None:
            _worker().send_owed_route(errand.job_id, errand.alert)
            return
        _dead_letter(record, str(exc.errors(include_url=False)[0]["msg"]))
        return
    logger.thread_safe_append_keys(job_id=message.job_id)
    try:
        result = _worker().process(message, deadline_ms)
        if traced is not None:
            traced.append((result.job_id, result.trace_id or tracing.trace_id_of(message.traceparent)))
        _record(result, message)
    except Exception:
        # Named here, since the batch only reports the record: its job waits for the redelivery or
        # for its lease, which can be minutes, and whoever looks should find why.
        logger.exception("the delivery failed; SQS delivers it again and the job's lease hands it on")
        _return_soon(record, message)
        raise
    finally:
        logger.thread_safe_remove_keys(["job_id", "attempt"])


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    clients.name_stack_on(metrics)
    # A processor per batch: it keeps per-batch state, and the local stack may run batches in threads.
    processor = AsyncBatchProcessor(EventType.SQS, raise_on_entire_batch_failure=False)
    deadline_ms = SystemClock().now_ms() + context.get_remaining_time_in_millis()
    records = event.get("Records") or []
    traced: list[tuple[str, str | None]] = []
    # A thread per record: a job's wait for its instant and its target's call hold only its own.
    with ThreadPoolExecutor(max(1, len(records)), thread_name_prefix="record") as pool:

        async def in_thread(record: SQSRecord) -> None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(pool, record_handler, record, deadline_ms, traced)

        response = async_process_partial_response(event, in_thread, processor, context)
    _annotate(traced)
    return dict(response)


def _annotate(traced: list[tuple[str, str | None]]) -> None:
    """Names the batch's jobs and traces on the invocation's segment, in its own thread: X-Ray's
    context does not follow the records' threads. A search `annotation.trace_id CONTAINS "<id>"`
    finds the invocation that ran an attempt of that trace."""
    if not traced:
        return
    tracer.put_annotation(key=c.JOB_ANNOTATION, value=" ".join(job_id for job_id, _ in traced))
    tracer.put_annotation(
        key=c.TRACE_ANNOTATION, value=" ".join(trace_id for _, trace_id in traced if trace_id)
    )


def _return_soon(record: SQSRecord, message: JobMessage) -> None:
    """A failed record comes back after about its job's lease (or at its instant, when it came
    early), not after the queue's visibility timeout of an hour and a half: held that long, a storm of
    failing records fills the queue's in-flight cap, and long polling then silently gets nothing.
    Should the change fail, the record comes back after the queue's timeout, as it did before."""
    until_due = math.ceil((message.due_at - SystemClock().now_ms()) / 1000)
    seconds = until_due if until_due > 0 else lifecycle.lease_seconds(message.timeout_seconds)
    try:
        clients.clients().sqs().change_message_visibility(
            QueueUrl=_queue_url(record, message),
            ReceiptHandle=record.receipt_handle,
            VisibilityTimeout=min(seconds, c.QUEUE_VISIBILITY_TIMEOUT_SECONDS),
        )
    except (ClientError, BotoCoreError):
        logger.warning("the failed record waits out the queue's visibility timeout", exc_info=True)


def _queue_url(record: SQSRecord, message: JobMessage) -> str:
    """The URL of the queue the record came from (named by its ARN), else of its priority's."""
    urls = clients.settings().queue_urls
    name = record.event_source_arn.rsplit(":", 1)[-1]
    return next((url for url in urls.values() if url.rsplit("/", 1)[-1] == name), urls[message.priority])


def _record(result: AttemptResult, message: JobMessage) -> None:
    logger.thread_safe_append_keys(attempt=result.attempt)
    if result.outcome is Outcome.DROPPED:
        _add_metric(c.Metric.DUPLICATES_DROPPED, MetricUnit.Count, 1)
        logger.info("duplicate or stale delivery dropped at the fence")
        return
    if result.outcome is Outcome.DEFERRED:
        logger.info("arrived early; sent again with a delay")
        return
    if result.outcome is Outcome.HELD:
        _add_metric(c.Metric.LIMIT_HELD_BACK, MetricUnit.Count, 1)
        # The key the gate held it by: the job's own, even when the message named none or another.
        key = result.limit_key or message.limit_key
        if key is not None:
            # The wait so far, not only once it ends: a key that never lets its occurrences start
            # would otherwise report no wait at all, and its alarm would stay quiet.
            since = message.held_since
            waited = 0 if since is None else max(0, SystemClock().now_ms() - since)
            _add_per_key(
                key,
                (c.Metric.LIMIT_HELD_BACK, MetricUnit.Count, 1),
                (c.Metric.LIMIT_WAIT_MS, MetricUnit.Milliseconds, waited),
            )
        logger.info(
            "held back by its limit key; sent again for later", extra={"delay_ms": result.limit_wait_ms}
        )
        return
    _add_metric(c.Metric.STARTED, MetricUnit.Count, 1)
    if result.limit_key is not None and result.limit_wait_ms is not None:
        _add_per_key(
            result.limit_key, (c.Metric.LIMIT_WAIT_MS, MetricUnit.Milliseconds, result.limit_wait_ms)
        )
    if result.lateness_ms is not None:
        _add_metric(c.Metric.START_LATENESS_MS, MetricUnit.Milliseconds, result.lateness_ms)
    if result.outcome in ATTEMPT_METRICS:
        _add_metric(ATTEMPT_METRICS[result.outcome], MetricUnit.Count, 1)
    if result.dead_in_a_row is not None:
        _add_metric(c.Metric.DEAD_OCCURRENCES_IN_A_ROW, MetricUnit.Count, result.dead_in_a_row)
    if result.missed:
        _add_metric(c.Metric.MISSED_OCCURRENCES, MetricUnit.Count, result.missed)
        logger.warning("the settle passed instants over", extra={"missed": result.missed})
    level = logger.info if result.outcome is Outcome.SUCCEEDED else logger.warning
    level(
        "attempt finished",
        extra={"outcome": result.outcome.value, "error": result.error, "lateness_ms": result.lateness_ms},
    )


def _add_metric(name: str, unit: MetricUnit, value: float) -> None:
    with _metrics_lock:
        metrics.add_metric(name=name, unit=unit, value=value)


def _add_per_key(key: str, *added: tuple[c.Metric, MetricUnit, float]) -> None:
    """Publishes `added` under the limit key as a dimension besides the shared ones: a series per
    key (docs/operations.md, "Waits per limit key"). The shared Metrics object holds one set of
    dimensions for the whole invocation, so these go out now in an EMF line of their own, which also
    puts a hold on the graph and the alarm at once rather than when the batch's longest job ends."""
    if is_metrics_disabled():
        return
    keyed = EphemeralMetrics(namespace=c.METRICS_NAMESPACE, service=c.METRICS_SERVICE)
    with _metrics_lock:
        shared = dict(metrics.default_dimensions)
    for name, value in shared.items():
        keyed.add_dimension(name=name, value=str(value))
    keyed.add_dimension(name=c.METRICS_LIMIT_KEY_DIMENSION, value=key)
    for metric, unit, value in added:
        keyed.add_metric(name=metric.value, unit=unit, value=value)
    line = json.dumps(keyed.serialize_metric_set(), separators=(",", ":")) + "\n"
    # One write, as a log record is written: print's two (the line, then its end) could let another
    # record's thread put its log line between them, and CloudWatch would read neither.
    with _metrics_lock:
        sys.stdout.write(line)


def _dead_letter(record: SQSRecord, reason: str) -> None:
    body = {
        "error": f"not a job message: {reason}",
        "message_id": record.message_id,
        "source": record.event_source_arn,
        "body": record.body,
    }
    clients.clients().sqs().send_message(
        QueueUrl=clients.settings().dead_letter_queue_url, MessageBody=json.dumps(body)
    )
    _add_metric(c.Metric.UNPARSABLE_MESSAGES, MetricUnit.Count, 1)
    logger.error(
        "unparsable message sent to the dead-letter queue",
        extra={"message_id": record.message_id, "reason": reason},
    )
