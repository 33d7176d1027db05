"""Two stages in one account, the default one and `staging` (conftest's configured stack), with the REST
API and with `sundial:api=http`: no alarm or dashboard graph of one reads a series of the other, and
what each stage's functions publish is what its own alarms and graphs read.

A series is a namespace, a metric name and its dimensions. A dimension that names a resource of the
template (a queue, a function) stands for the name CloudFormation gives that resource in the account:
its literal name when the template sets one, otherwise one generated from the stack's name, which
no other stack shares.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from aws_lambda_powertools import Metrics

from sundial.functions import clients
from sundial.shared import constants as c
from tests.infra.conftest import Synthesised

pytestmark = pytest.mark.infra

Series = tuple[str, str, frozenset[tuple[str, str]]]

# The property that holds a resource's name when the template sets one.
_NAME_PROPERTY = {
    "AWS::SQS::Queue": "QueueName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::ApiGateway::RestApi": "Name",
    "AWS::CloudWatch::Alarm": "AlarmName",
}
# Resources whose Ref is an id their service generates, unique in the account and region.
_GENERATED_ID = {"AWS::ApiGatewayV2::Api"}
# A deploy-time value (a queue's URL, a table's name) in a function's environment, where settings
# only check that something is there.
_DEPLOY_TIME = "resolved-at-deploy"


@pytest.fixture(scope="module", params=["rest", "http"])
def stages(request: pytest.FixtureRequest) -> tuple[Synthesised, Synthesised]:
    names = ("synthesised", "configured") if request.param == "rest" else ("http_api", "http_configured")
    default, staging = (request.getfixturevalue(name) for name in names)
    assert (default.stack_name, staging.stack_name) == ("Sundial", "Sundial-staging")
    return default, staging


def _name_in_account(stage: Synthesised, value: Any) -> str:
    """What a dimension's value is once deployed."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"].startswith("AWS::"):
        return f"<the account's {value['Ref']}>"  # The same for every stack in the account.
    if isinstance(value, dict) and set(value) in ({"Ref"}, {"Fn::GetAtt"}):
        logical_id = value["Ref"] if "Ref" in value else value["Fn::GetAtt"][0]
        resource = stage.resources[logical_id]
        if resource["Type"] in _GENERATED_ID:
            return f"<the id {resource['Type']} gives {stage.stack_name}'s {logical_id}>"
        assert resource["Type"] in _NAME_PROPERTY, f"a metric names a {resource['Type']}: add its name here"
        given = resource.get("Properties", {}).get(_NAME_PROPERTY[resource["Type"]])
        if given is None:
            return f"{stage.stack_name}-{logical_id}-<generated>"
        assert isinstance(given, str), f"{logical_id}'s name is built at deploy time: {given!r}"
        return given
    raise AssertionError(f"cannot tell which resource {value!r} names")


def _series(stage: Synthesised, namespace: str, name: str, dimensions: dict[str, Any]) -> Series:
    resolved = {key: _name_in_account(stage, value) for key, value in dimensions.items()}
    if "ApiId" in resolved and "Stage" in resolved:
        # An HTTP API's stage name (`$default`) is its own only within its API.
        resolved["Stage"] = _stage_of(resolved["ApiId"], resolved["Stage"])
    return namespace, name, frozenset(resolved.items())


def _stage_of(api: str, stage_name: str) -> str:
    return f"{api}/{stage_name}"


def _alarm_series(stage: Synthesised) -> dict[str, Series]:
    """Each alarm's series by the alarm's logical id (a math alarm contributes each of its metrics)."""
    read: dict[str, Series] = {}
    for logical_id, alarm in stage.of_type("AWS::CloudWatch::Alarm").items():
        properties = alarm["Properties"]
        stats = [m["MetricStat"]["Metric"] for m in properties.get("Metrics", []) if "MetricStat" in m]
        if not stats and "MetricName" not in properties:
            continue  # a Metrics Insights query: tests/infra/test_limit_alarms.py checks what it reads
        for index, metric in enumerate(stats or [properties]):
            dimensions = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            key = logical_id if not stats else f"{logical_id}[{index}]"
            read[key] = _series(stage, metric["Namespace"], metric["MetricName"], dimensions)
    return read


def _dashboard_body(stage: Synthesised) -> dict[str, Any]:
    """The body with each CloudFormation value replaced by the name it stands for."""
    (dashboard,) = stage.of_type("AWS::CloudWatch::Dashboard").values()
    body = dashboard["Properties"]["DashboardBody"]
    parts = body["Fn::Join"][1] if isinstance(body, dict) else [body]
    text = "".join(_name_in_account(stage, part) for part in parts)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _graph_series(stage: Synthesised) -> list[Series]:
    read = []
    for widget in _dashboard_body(stage)["widgets"]:
        for metric in widget["properties"].get("metrics", []):
            if all(isinstance(part, dict) for part in metric):
                continue  # a SEARCH: tests/infra/test_limit_alarms.py checks what it reads
            namespace, name, *rest = (part for part in metric if not isinstance(part, dict))
            assert "." not in (namespace, name), "a graph repeats its previous metric's fields"
            read.append(_series(stage, namespace, name, dict(zip(rest[::2], rest[1::2], strict=True))))
    return read


def _published(stage: Synthesised) -> dict[str, Series]:
    """What each function publishes, by handler: its own metrics code, run in its deployed environment."""
    published: dict[str, Series] = {}
    for function in stage.of_type("AWS::Lambda::Function").values():
        handler = function["Properties"]["Handler"]
        metrics = getattr(importlib.import_module(handler.rpartition(".")[0]), "metrics", None)
        if not isinstance(metrics, Metrics):
            continue  # The API publishes no metric of its own.
        variables = function["Properties"]["Environment"]["Variables"]
        with _environment(variables):
            blob = _one_metric_published(metrics)
        (directive,) = blob["_aws"]["CloudWatchMetrics"]
        (dimension_names,) = directive["Dimensions"]
        (metric,) = directive["Metrics"]
        dimensions = {name: blob[name] for name in dimension_names}
        published[handler] = (directive["Namespace"], metric["Name"], frozenset(dimensions.items()))
        # Powertools that were set up from the environment rather than in code agree with it.
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == directive["Namespace"]
        assert variables["POWERTOOLS_SERVICE_NAME"] == dimensions["service"]
    assert published, "no function publishes metrics"
    return published


@contextmanager
def _environment(variables: dict[str, Any]) -> Iterator[None]:
    """The process's environment as a function's deployed one, read afresh by the functions' settings."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith(("SUNDIAL_", "POWERTOOLS_"))]:
            patch.delenv(name)
        for name, value in variables.items():
            patch.setenv(name, value if isinstance(value, str) else _DEPLOY_TIME)
        clients.reset()
        try:
            yield
        finally:
            clients.reset()


def _one_metric_published(metrics: Metrics) -> dict[str, Any]:
    """The EMF blob of one metric, set up as a handler sets it up at the start of an invocation."""
    try:
        clients.name_stack_on(metrics)
        metrics.add_metric(name=c.Metric.DEAD, unit="Count", value=1)
        # As the log line that CloudWatch reads the metric from.
        blob: dict[str, Any] = json.loads(json.dumps(metrics.serialize_metric_set()))
        return blob
    finally:
        # Powertools keeps dimensions in class-wide state: leave none to the next stage or test.
        metrics.clear_default_dimensions()
        metrics.clear_metrics()


def _without_name(series: Series) -> tuple[str, frozenset[tuple[str, str]]]:
    namespace, _, dimensions = series
    return namespace, dimensions


def _both_ways(stages: tuple[Synthesised, Synthesised]) -> Iterator[tuple[Synthesised, Synthesised]]:
    yield stages
    yield stages[1], stages[0]


def test_no_alarm_or_graph_of_one_stage_reads_a_series_of_the_other(
    stages: tuple[Synthesised, Synthesised],
) -> None:
    for own, other in _both_ways(stages):
        others = {*_alarm_series(other).values(), *_graph_series(other)}
        for alarm, series in _alarm_series(own).items():
            assert series not in others, f"{own.stack_name}'s {alarm} reads {other.stack_name}'s {series}"
        for series in _graph_series(own):
            assert series not in others, f"{own.stack_name}'s dashboard graphs {other.stack_name}'s {series}"


def _own_names(stage: Synthesised) -> set[str]:
    """The names the stage's queues, functions, table, API (and its stages) and alarms have in the
    account."""
    names = {
        _name_in_account(stage, {"Ref": logical_id})
        for logical_id, resource in stage.resources.items()
        if resource["Type"] in {*_NAME_PROPERTY, *_GENERATED_ID}
    }
    for resource in stage.of_type("AWS::ApiGatewayV2::Stage").values():
        properties = resource["Properties"]
        names.add(_stage_of(_name_in_account(stage, properties["ApiId"]), properties["StageName"]))
    return names


def test_every_aws_series_names_the_stages_own_resources(stages: tuple[Synthesised, Synthesised]) -> None:
    default, staging = stages
    assert _own_names(default).isdisjoint(_own_names(staging))
    for own in stages:
        names = _own_names(own)
        read = [*_alarm_series(own).values(), *_graph_series(own)]
        aws = [series for series in read if series[0].startswith("AWS/")]
        assert {series[0] for series in aws} == {"AWS/SQS", "AWS/Lambda", "AWS/ApiGateway"}
        for namespace, name, dimensions in aws:
            for key, value in dimensions:
                assert value in names, f"{own.stack_name} reads {namespace} {name} of {key}={value}"


def test_each_stage_publishes_exactly_what_its_alarms_and_graphs_read(
    stages: tuple[Synthesised, Synthesised],
) -> None:
    published = {stage.stack_name: _published(stage) for stage in stages}
    for own, other in _both_ways(stages):
        emitters = published[own.stack_name]
        assert set(emitters) == {"sundial.functions.scheduler.handler", "sundial.functions.worker.handler"}
        # One series per metric name for the whole stage, and none the other stage publishes to.
        (own_series,) = {_without_name(series) for series in emitters.values()}
        assert own_series not in {_without_name(series) for series in published[other.stack_name].values()}
        alarmed = {series[1] for series in _alarm_series(own).values()}
        assert {c.Metric.DEAD, c.Metric.START_LATENESS_MS, c.Metric.DEAD_OCCURRENCES_IN_A_ROW} <= alarmed
        for series in [*_alarm_series(own).values(), *_graph_series(own)]:
            if series[0] == c.METRICS_NAMESPACE:
                assert _without_name(series) == own_series, f"{own.stack_name} reads {series}"


def test_the_alarm_panel_shows_the_stages_own_alarms(stages: tuple[Synthesised, Synthesised]) -> None:
    for own in stages:
        (panel,) = (w for w in _dashboard_body(own)["widgets"] if w["type"] == "alarm")
        own_alarms = {_name_in_account(own, {"Ref": a}) for a in own.of_type("AWS::CloudWatch::Alarm")}
        assert set(panel["properties"]["alarms"]) == own_alarms
