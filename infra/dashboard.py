"""The CloudWatch dashboard: throughput per status, lateness, limit keys, queues, dead jobs, errors."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.api import ApiMetrics
from infra.functions import Functions
from infra.queues import JobQueues
from sundial.shared import constants as c

ONE_MINUTE = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)
WIDTH = 12
THROUGHPUT = (
    c.Metric.CLAIMED,
    c.Metric.RECLAIMED,
    c.Metric.DISPATCHED,
    c.Metric.STARTED,
    c.Metric.SUCCEEDED,
    c.Metric.FAILED,
    c.Metric.DEAD,
    c.Metric.DUPLICATES_DROPPED,
    c.Metric.UNPARSABLE_MESSAGES,
)


def sundial_metric(
    stack_name: str, name: c.Metric, statistic: str, period: Duration = ONE_MINUTE
) -> cw.Metric:
    """A metric the functions of stack `stack_name` emit through Powertools: namespace Sundial,
    dimensions service=sundial and stack=`stack_name`. Another stage's series of the same name
    carries its own stack, so it never reaches this stage's alarms or graphs."""
    return cw.Metric(
        namespace=c.METRICS_NAMESPACE,
        metric_name=name.value,
        dimensions_map={"service": c.METRICS_SERVICE, c.METRICS_STACK_DIMENSION: stack_name},
        statistic=statistic,
        period=period,
    )


def per_key_search(stack_name: str, name: c.Metric, statistic: str, period: Duration = FIVE_MINUTES) -> str:
    """A SEARCH for the series of `name` the worker of stack `stack_name` publishes per limit key: one
    line per key that reported in the graph's time range. The schema asks for exactly these
    dimensions, and the quoted values match whole (another stage's stack name merely starts with
    this one's)."""
    schema = ",".join(
        [c.METRICS_NAMESPACE, c.METRICS_LIMIT_KEY_DIMENSION, "service", c.METRICS_STACK_DIMENSION]
    )
    terms = (
        f'MetricName="{name.value}" service="{c.METRICS_SERVICE}" {c.METRICS_STACK_DIMENSION}="{stack_name}"'
    )
    return f"SEARCH('{{{schema}}} {terms}', '{statistic}', {int(period.to_seconds())})"


def limit_wait_query(stack_name: str) -> str:
    """The Metrics Insights query for the oldest wait on any limit key of stack `stack_name`, in ms.
    An alarm cannot read a SEARCH, but it can read this query, and the keys it covers need not be
    known when the stack is deployed. Every name is quoted: Metrics Insights reserves many words."""
    schema = ", ".join(
        f'"{part}"'
        for part in (c.METRICS_NAMESPACE, c.METRICS_LIMIT_KEY_DIMENSION, "service", c.METRICS_STACK_DIMENSION)
    )
    return (
        f'SELECT MAX("{c.Metric.LIMIT_WAIT_MS.value}") FROM SCHEMA({schema}) '
        f"WHERE \"service\" = '{c.METRICS_SERVICE}' AND \"{c.METRICS_STACK_DIMENSION}\" = '{stack_name}'"
    )


def build_dashboard(
    scope: Construct,
    construct_id: str,
    *,
    functions: Functions,
    queues: JobQueues,
    api: ApiMetrics,
    alarms: Sequence[cw.IAlarm],
    limit_wait_alarm_ms: int,
) -> cw.Dashboard:
    dashboard = cw.Dashboard(scope, construct_id, default_interval=Duration.hours(3))
    dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", alarms=list(alarms), width=24))
    dashboard.add_widgets(*_job_widgets(Stack.of(scope).stack_name))
    dashboard.add_widgets(*_limit_widgets(Stack.of(scope).stack_name, limit_wait_alarm_ms))
    dashboard.add_widgets(*_queue_widgets(queues))
    dashboard.add_widgets(*_error_widgets(functions, api))
    return dashboard


def _graph(title: str, left: Sequence[cw.IMetric]) -> cw.GraphWidget:
    return cw.GraphWidget(title=title, left=list(left), width=WIDTH)


def _job_widgets(stack_name: str) -> list[cw.IWidget]:
    def own(name: c.Metric, statistic: str, period: Duration = ONE_MINUTE) -> cw.Metric:
        return sundial_metric(stack_name, name, statistic, period)

    throughput = [own(name, "Sum").with_(label=name.value) for name in THROUGHPUT]
    lateness = [
        own(c.Metric.START_LATENESS_MS, "p50").with_(label="start lateness p50"),
        own(c.Metric.START_LATENESS_MS, "p99").with_(label="start lateness p99"),
        own(c.Metric.OLDEST_DUE_LATENESS_MS, "Maximum").with_(label="oldest due job"),
    ]
    dead = own(c.Metric.DEAD, "Sum", FIVE_MINUTES).with_(label="dead jobs")
    streak = own(c.Metric.DEAD_OCCURRENCES_IN_A_ROW, "Maximum", FIVE_MINUTES)
    missed = own(c.Metric.MISSED_OCCURRENCES, "Sum", FIVE_MINUTES)
    return [
        _graph("Jobs per minute, by status", throughput),
        _graph("Lateness (ms)", lateness),
        _graph("Dead jobs", [dead, streak.with_(label="most occurrences of a recurring job dead in a row")]),
        _graph("Missed instants (misfire, overlap)", [missed.with_(label="instants passed over")]),
    ]


def _limit_widgets(stack_name: str, alarm_ms: int) -> list[cw.IWidget]:
    """Waits and held-back deliveries per limit key. Keys come and go with the jobs that name them,
    so each graph finds them with a SEARCH rather than naming them; a line is labelled by its key."""
    by_key = "${PROP('Dim." + c.METRICS_LIMIT_KEY_DIMENSION + "')}"

    def search(name: c.Metric, statistic: str) -> cw.SearchExpression:
        return cw.SearchExpression(
            expression=per_key_search(stack_name, name, statistic), label=by_key, period=FIVE_MINUTES
        )

    waits = cw.GraphWidget(
        title="Oldest wait per limit key (ms)",
        left=[search(c.Metric.LIMIT_WAIT_MS, "Maximum")],
        left_annotations=[cw.HorizontalAnnotation(value=alarm_ms, label="limit wait alarm")],
        width=WIDTH,
    )
    total = sundial_metric(stack_name, c.Metric.LIMIT_HELD_BACK, "Sum", FIVE_MINUTES).with_(label="all keys")
    held = _graph("Held-back deliveries per limit key", [search(c.Metric.LIMIT_HELD_BACK, "Sum"), total])
    return [waits, held]


def _queue_widgets(queues: JobQueues) -> list[cw.IWidget]:
    depth = [
        queue.metric_approximate_number_of_messages_visible(statistic="Maximum", label=queue_label)
        for queue_label, queue in _labelled(queues)
    ]
    in_flight = [
        queue.metric_approximate_number_of_messages_not_visible(statistic="Maximum", label=queue_label)
        for queue_label, queue in _labelled(queues)
    ]
    age = [
        queue.metric_approximate_age_of_oldest_message(statistic="Maximum", label=queue_label)
        for queue_label, queue in _labelled(queues)
    ]
    return [
        _graph("Queue depth (visible)", depth),
        _graph("In flight", in_flight),
        _graph("Oldest message age (s)", age),
    ]


def _labelled(queues: JobQueues) -> list[tuple[str, sqs.Queue]]:
    return [*((p.value, q) for p, q in queues.by_priority.items()), ("dead letter", queues.dead_letter)]


def _error_widgets(functions: Functions, api: ApiMetrics) -> list[cw.IWidget]:
    names = ("api", "scheduler", "worker")
    errors: list[cw.IMetric] = []
    for name, fn in zip(names, functions.all, strict=True):
        errors.append(fn.metric_errors(statistic="Sum", label=f"{name} errors"))
        errors.append(fn.metric_throttles(statistic="Sum", label=f"{name} throttles"))
    duration = [
        fn.metric_duration(statistic="p99", label=f"{name} p99")
        for name, fn in zip(names, functions.all, strict=True)
    ]
    http = [
        api.metric_client_error(statistic="Sum", label="4xx"),
        api.metric_server_error(statistic="Sum", label="5xx"),
        api.metric_count(statistic="Sum", label="requests"),
    ]
    return [
        _graph("Function errors and throttles", errors),
        _graph("Function duration p99 (ms)", duration),
        _graph("API requests", http),
    ]
