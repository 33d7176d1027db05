"""What a deployed stage costs a month with no jobs at all: its resources counted in the template
`make synth` builds, and its idle tick measured on the emulator.

Free tiers are left out (the account's first 3 dashboards, 10 alarms, 10 custom metrics, 1 M SQS
requests and 1 M Lambda requests are shared with whatever else it runs), so the figure is what the
stage adds to a bill that already uses them.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Metrics

from bench import cost
from bench import cost_model as m
from bench.harness import Aws, Row
from sundial.shared import constants as c
from sundial.shared.engine.tick_report import TickReport

GOAL_DOLLARS_PER_MONTH = 5.00
MINUTES_PER_MONTH = m.SECONDS_PER_MONTH // 60
# CloudWatch, us-east-1: an alarm per metric it reads (a math expression's each, a Metrics Insights
# query's each series; one is assumed), a dashboard, a custom metric, all per month.
PRICE_PER_ALARM_METRIC = 0.10
PRICE_PER_DASHBOARD = 3.00
PRICE_PER_CUSTOM_METRIC = 0.30
PRICE_PER_KMS_KEY = 1.00
PRICE_PER_SECRET = 0.40
PRICE_PER_LOG_GB = 0.50
# An idle event source mapping long-polls its queue: Lambda keeps its minimum of pollers on it (AWS:
# "Using Lambda with Amazon SQS", scaling), each with a 20 s wait.
IDLE_POLLERS_PER_QUEUE = 5
LONG_POLL_SECONDS = 20
# The tick's "tick done" log line and the platform's START, END and REPORT lines, measured from the
# local stack's log of an idle tick.
TICK_LOG_BYTES = 1_500


@dataclass(frozen=True)
class Stage:
    """The template's resources the idle bill counts."""

    alarm_metrics: int
    dashboards: int
    kms_keys: int
    secrets: int
    polled_queues: int
    on_demand: bool

    @classmethod
    def of(cls, resources: dict[str, Any]) -> Stage:
        by_type: dict[str, list[dict[str, Any]]] = {}
        for resource in resources.values():
            by_type.setdefault(resource["Type"], []).append(resource.get("Properties", {}))
        (table,) = by_type["AWS::DynamoDB::Table"]
        return cls(
            alarm_metrics=sum(_metrics_read(alarm) for alarm in by_type.get("AWS::CloudWatch::Alarm", [])),
            dashboards=len(by_type.get("AWS::CloudWatch::Dashboard", [])),
            kms_keys=len(by_type.get("AWS::KMS::Key", [])),
            secrets=len(by_type.get("AWS::SecretsManager::Secret", [])),
            polled_queues=len(by_type.get("AWS::Lambda::EventSourceMapping", [])),
            on_demand=table.get("BillingMode") == "PAY_PER_REQUEST",
        )


def _metrics_read(alarm: dict[str, Any]) -> int:
    """The metrics an alarm is billed for: one, or each metric of its math expression."""
    queries = alarm.get("Metrics")
    if not queries:
        return 1
    return max(
        1, sum(1 for query in queries if "MetricStat" in query or "SELECT" in str(query.get("Expression")))
    )


def synthesised_resources(context: dict[str, Any]) -> dict[str, Any]:
    """A stage's resources, as `make synth` writes them with this context."""
    from infra.app import build_app

    with tempfile.TemporaryDirectory(prefix="sundial-idle-") as outdir:
        app, stack = build_app(outdir, context)
        template = app.synth().get_stack_by_name(stack.stack_name).template
    resources: dict[str, Any] = json.loads(json.dumps(template["Resources"]))
    return resources


def idle_tick_metrics() -> list[str]:
    """The custom metrics the tick handler publishes for a tick that found nothing."""
    from sundial.functions import scheduler

    scheduler.record_tick(TickReport())
    published: Metrics = scheduler.metrics
    names = list(published.metric_set)
    published.clear_metrics()
    return names


def monthly(stage: Stage, tick: cost.FixedTick, tick_metrics: list[str]) -> dict[str, float]:
    """Dollars a month by item."""
    ticks = MINUTES_PER_MONTH
    tick_seconds = tick.calls * cost.AWS_CALL_MS / 1000 / cost.TICK_THREADS
    polls = stage.polled_queues * IDLE_POLLERS_PER_QUEUE * m.SECONDS_PER_MONTH / LONG_POLL_SECONDS
    bill = {
        "alarms": stage.alarm_metrics * PRICE_PER_ALARM_METRIC,
        "dashboard": stage.dashboards * PRICE_PER_DASHBOARD,
        "custom metrics of the idle tick": len(set(tick_metrics)) * PRICE_PER_CUSTOM_METRIC,
        "kms keys": stage.kms_keys * PRICE_PER_KMS_KEY,
        "secrets": stage.secrets * PRICE_PER_SECRET,
        "tick invocations": ticks * m.PRICE_PER_LAMBDA_REQUEST,
        "tick duration": ticks * cost.MEMORY_GB["scheduler"] * tick_seconds * m.PRICE_PER_GB_SECOND,
        "tick reads": ticks * tick.bill.read_units * m.PRICE_PER_READ_UNIT if stage.on_demand else 0.0,
        "tick writes": ticks * tick.bill.write_units * m.PRICE_PER_WRITE_UNIT if stage.on_demand else 0.0,
        "tick logs": ticks * TICK_LOG_BYTES / 1e9 * PRICE_PER_LOG_GB,
        "idle queue polls": polls * m.PRICE_PER_SQS_REQUEST,
    }
    return {item: round(dollars, 3) for item, dollars in bill.items()}


# The stages priced: the defaults, and a stage for trials or tests without its dashboard.
STAGES: dict[str, dict[str, Any]] = {
    "default settings": {},
    "sundial:dashboard=false": {"sundial:dashboard": "false"},
}


def measure(aws: Aws, start_ms: int) -> list[Row]:
    tick = cost.empty_tick(aws, start_ms)
    tick_metrics = idle_tick_metrics()
    return [
        _row(name, Stage.of(synthesised_resources(context)), tick, tick_metrics)
        for name, context in STAGES.items()
    ]


def _row(name: str, stage: Stage, tick: cost.FixedTick, tick_metrics: list[str]) -> Row:
    bill = monthly(stage, tick, tick_metrics)
    total = round(sum(bill.values()), 2)
    return Row(
        f"idle stage ({name}, no jobs): dollars a month",
        total,
        "$/month",
        f"<= ${GOAL_DOLLARS_PER_MONTH:.2f}",
        total <= GOAL_DOLLARS_PER_MONTH,
        {
            "dollars_per_month": bill,
            "stage": stage.__dict__,
            "idle_tick": {
                "calls": tick.calls,
                "read_units": tick.bill.read_units,
                "write_units": tick.bill.write_units,
                "operations": dict(Counter(tick.operations)),
                "custom_metrics": tick_metrics,
            },
            "priced_as": {
                "free_tiers": "left out",
                "alarm": f"${PRICE_PER_ALARM_METRIC} a metric it reads",
                "dashboard": f"${PRICE_PER_DASHBOARD}",
                "custom_metric": f"${PRICE_PER_CUSTOM_METRIC}",
                "idle_pollers_per_queue": IDLE_POLLERS_PER_QUEUE,
                "long_poll_seconds": LONG_POLL_SECONDS,
                "tick_log_bytes": TICK_LOG_BYTES,
                "namespace": c.METRICS_NAMESPACE,
            },
        },
    )
