"""Waits per limit key as operators see them: the dashboard's SEARCH graphs and the wait alarm's
Metrics Insights query read exactly the series the worker publishes per key, of their own stage
alone, and the alarm keeps to the rules CloudWatch sets for an alarm on a query
(tests/functions/test_metrics_limits.py checks the worker's side)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from typing import Any

import pytest

from sundial.shared import constants as c
from tests.infra.conftest import Synthesised
from tests.infra.test_stages_isolated import _dashboard_body, _environment

pytestmark = pytest.mark.infra

WORKER_HANDLER = "sundial.functions.worker.handler"
# CloudWatch evaluates an alarm on a Metrics Insights query over the last three hours only, in whole
# minutes (Metrics Insights has no high-resolution data).
INSIGHTS_WINDOW_SECONDS = 3 * 3600
QUERY = re.compile(
    r'SELECT (?P<function>[A-Z]+)\("(?P<metric>\w+)"\) FROM SCHEMA\((?P<schema>[^)]*)\) WHERE (?P<where>.+)'
)
CONDITION = re.compile(r"\"(?P<name>\w+)\" = '(?P<value>[^']*)'")
SEARCH = re.compile(
    r"SEARCH\('\{(?P<schema>[^}]*)\} (?P<terms>[^']*)', '(?P<statistic>\w+)', (?P<period>\d+)\)"
)
TERM = re.compile(r'(?P<name>\w+)="(?P<value>[^"]*)"')
BY_KEY_LABEL = "${PROP('Dim.limit_key')}"


@pytest.fixture(scope="module")
def stages(synthesised: Synthesised, configured: Synthesised) -> tuple[Synthesised, Synthesised]:
    assert (synthesised.stack_name, configured.stack_name) == ("Sundial", "Sundial-staging")
    return synthesised, configured


def _published_per_key(stage: Synthesised) -> tuple[str, dict[str, str]]:
    """The namespace and dimensions of a per-key line the stage's worker writes, in its deployed
    environment."""
    from aws_lambda_powertools.metrics import MetricUnit

    from sundial.functions import clients, worker

    (function,) = (
        f
        for f in stage.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == WORKER_HANDLER
    )
    out = io.StringIO()
    with _environment(function["Properties"]["Environment"]["Variables"]), contextlib.redirect_stdout(out):
        try:
            clients.name_stack_on(worker.metrics)
            worker._add_per_key("payments-api", (c.Metric.LIMIT_WAIT_MS, MetricUnit.Milliseconds, 1))
        finally:
            # Powertools keeps dimensions in class-wide state: leave none to the next stage or test.
            worker.metrics.clear_default_dimensions()
            worker.metrics.clear_metrics()
    (line,) = out.getvalue().splitlines()
    blob = json.loads(line)
    (directive,) = blob["_aws"]["CloudWatchMetrics"]
    (names,) = directive["Dimensions"]
    return directive["Namespace"], {name: blob[name] for name in names}


def _wait_alarm(stage: Synthesised) -> dict[str, Any]:
    (alarm,) = (
        a["Properties"]
        for a in stage.of_type("AWS::CloudWatch::Alarm").values()
        if any(m.get("Expression", "").startswith("SELECT") for m in a["Properties"].get("Metrics", []))
    )
    properties: dict[str, Any] = alarm
    return properties


def _query(alarm: dict[str, Any]) -> tuple[str, str, str, list[str], dict[str, str]]:
    (metric,) = alarm["Metrics"]
    found = QUERY.fullmatch(metric["Expression"])
    assert found, metric["Expression"]
    namespace, *dimensions = (part.strip().strip('"') for part in found["schema"].split(","))
    conditions = found["where"].split(" AND ")
    where = {}
    for condition in conditions:
        matched = CONDITION.fullmatch(condition)
        assert matched, condition
        where[matched["name"]] = matched["value"]
    return found["function"], found["metric"], namespace, dimensions, where


def _widget(stage: Synthesised, title: str) -> dict[str, Any]:
    (widget,) = (w for w in _dashboard_body(stage)["widgets"] if w["properties"].get("title") == title)
    properties: dict[str, Any] = widget["properties"]
    return properties


def _searches(widget: dict[str, Any]) -> list[tuple[str, dict[str, str], str, list[str], dict[str, str]]]:
    """Each SEARCH of a graph: its label, its options, its statistic, its schema and its terms."""
    found = []
    for metric in widget["metrics"]:
        if len(metric) != 1 or "expression" not in metric[0]:
            continue
        options = metric[0]
        matched = SEARCH.fullmatch(options["expression"])
        assert matched, options["expression"]
        schema = [part.strip() for part in matched["schema"].split(",")]
        terms = {m["name"]: m["value"] for m in TERM.finditer(matched["terms"])}
        assert int(matched["period"]) % 60 == 0
        found.append((options["label"], options, matched["statistic"], schema, terms))
    return found


def test_the_wait_alarm_reads_the_oldest_wait_of_every_key_of_its_own_stage(
    stages: tuple[Synthesised, Synthesised],
) -> None:
    for own, other in (stages, stages[::-1]):
        namespace, dimensions = _published_per_key(own)
        assert dimensions[c.METRICS_STACK_DIMENSION] == own.stack_name
        function, metric, queried, schema, where = _query(_wait_alarm(own))
        assert (function, metric, queried) == ("MAX", c.Metric.LIMIT_WAIT_MS.value, namespace)
        # SCHEMA keeps to series with exactly these dimensions: the worker's per-key ones.
        assert sorted(schema) == sorted(dimensions)
        # Every dimension but the key is pinned to the stage's own value; the key is left free.
        keyed = {name: value for name, value in dimensions.items() if name != c.METRICS_LIMIT_KEY_DIMENSION}
        assert where == keyed
        assert where[c.METRICS_STACK_DIMENSION] != other.stack_name


@pytest.mark.parametrize(("which", "seconds"), [("synthesised", 300), ("configured", 600)])
def test_the_wait_alarm_fires_past_the_stages_setting(
    which: str, seconds: int, request: pytest.FixtureRequest
) -> None:
    stage: Synthesised = request.getfixturevalue(which)
    alarm = _wait_alarm(stage)
    (topic_id,) = stage.of_type("AWS::SNS::Topic")
    assert alarm["AlarmActions"] == [{"Ref": topic_id}]
    assert alarm["Threshold"] == seconds * 1000  # LimitWaitMs is in milliseconds
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert f"{seconds} s" in alarm["AlarmDescription"]
    # No report is no wait: a stage whose keys hold nothing back stays quiet.
    assert alarm["TreatMissingData"] == "notBreaching"
    # One breaching report within a hold's longest delay keeps it in alarm: a held occurrence
    # reports its wait each time it looks again, up to SQS's longest delay apart.
    assert alarm["DatapointsToAlarm"] == 1
    (metric,) = alarm["Metrics"]
    assert metric["Period"] * alarm["EvaluationPeriods"] >= c.MAX_DELAY_SECONDS


@pytest.mark.parametrize("which", ["synthesised", "configured"])
def test_the_wait_alarm_keeps_to_the_rules_for_an_alarm_on_a_query(
    which: str, request: pytest.FixtureRequest
) -> None:
    alarm = _wait_alarm(request.getfixturevalue(which))
    # A query alarm holds its one query in Metrics, and none of a single metric's fields.
    for field in ("MetricName", "Namespace", "Dimensions", "Statistic", "ExtendedStatistic", "Period"):
        assert field not in alarm, field
    (metric,) = alarm["Metrics"]
    assert metric["ReturnData"] is True
    assert set(metric) <= {"Id", "Expression", "Label", "Period", "ReturnData"}
    assert re.fullmatch(r"[a-z][A-Za-z0-9_]*", metric["Id"])
    # Whole minutes, and a window within the three hours CloudWatch evaluates a query over.
    assert metric["Period"] % 60 == 0
    assert metric["Period"] * alarm["EvaluationPeriods"] <= INSIGHTS_WINDOW_SECONDS
    assert 1 <= alarm["DatapointsToAlarm"] <= alarm["EvaluationPeriods"]


def test_the_dashboard_graphs_waits_and_holds_per_key_of_its_own_stage(
    stages: tuple[Synthesised, Synthesised],
) -> None:
    thresholds = {"Sundial": 300_000, "Sundial-staging": 600_000}
    for own, other in (stages, stages[::-1]):
        namespace, dimensions = _published_per_key(own)
        pinned = {name: value for name, value in dimensions.items() if name != c.METRICS_LIMIT_KEY_DIMENSION}

        waits = _widget(own, "Oldest wait per limit key (ms)")
        held = _widget(own, "Held-back deliveries per limit key")
        for widget, metric, statistic in (
            (waits, c.Metric.LIMIT_WAIT_MS, "Maximum"),
            (held, c.Metric.LIMIT_HELD_BACK, "Sum"),
        ):
            (search,) = _searches(widget)
            label, _, searched_statistic, schema, terms = search
            # A line per key, named by its key.
            assert label == BY_KEY_LABEL
            assert searched_statistic == statistic
            assert schema[0] == namespace and sorted(schema[1:]) == sorted(dimensions)
            assert terms == {"MetricName": metric.value, **pinned}
            assert terms[c.METRICS_STACK_DIMENSION] != other.stack_name
        # The alarm's threshold drawn on the waits, and every key's total beside the per-key holds.
        (line,) = waits["annotations"]["horizontal"]
        assert line["value"] == thresholds[own.stack_name]
        totals = [m for m in held["metrics"] if len(m) > 1]
        assert [m[:2] for m in totals] == [[namespace, c.Metric.LIMIT_HELD_BACK.value]]
        (total,) = totals
        assert dict(zip(total[2:-1:2], total[3:-1:2], strict=True)) == pinned


def test_the_setting_defaults_to_five_minutes_and_names_its_key_when_unusable() -> None:
    from aws_cdk import App

    from infra.settings import Settings

    assert Settings.from_context(App(context={}).node).limit_wait_alarm_seconds == 300
    chosen = Settings.from_context(App(context={"sundial:limitWaitAlarmSeconds": "90"}).node)
    assert chosen.limit_wait_alarm_seconds == 90
    with pytest.raises(ValueError, match="sundial:limitWaitAlarmSeconds=0: must be at least 1"):
        Settings.from_context(App(context={"sundial:limitWaitAlarmSeconds": 0}).node)
