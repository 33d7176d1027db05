"""The idle bill of `make bench PART=idle` (bench/idle.py): what it counts in a template, and that an
idle tick keeps no custom metric alive."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import cost, idle
from bench import cost_model as m

TEMPLATE = {
    "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"BillingMode": "PAY_PER_REQUEST"}},
    "Plain": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"MetricName": "Errors"}},
    "Math": {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "Metrics": [
                {"Id": "a", "MetricStat": {}},
                {"Id": "b", "MetricStat": {}},
                {"Id": "e", "Expression": "a + b"},
            ]
        },
    },
    "Insights": {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {"Metrics": [{"Id": "q", "Expression": 'SELECT MAX(LimitWaitMs) FROM "Sundial"'}]},
    },
    "Board": {"Type": "AWS::CloudWatch::Dashboard"},
    "Key": {"Type": "AWS::KMS::Key"},
    "Secret": {"Type": "AWS::SecretsManager::Secret"},
    "High": {"Type": "AWS::Lambda::EventSourceMapping"},
    "Low": {"Type": "AWS::Lambda::EventSourceMapping"},
}


def test_a_stage_is_counted_from_its_template() -> None:
    stage = idle.Stage.of(TEMPLATE)

    # An alarm is billed per metric it reads: a math expression's each, a query's one.
    assert stage.alarm_metrics == 1 + 2 + 1
    assert (stage.dashboards, stage.kms_keys, stage.secrets, stage.polled_queues) == (1, 1, 1, 2)
    assert stage.on_demand


def test_the_monthly_bill_prices_each_item() -> None:
    stage = idle.Stage.of(TEMPLATE)
    tick = cost.FixedTick(m.Bill(write_units=8, read_units=13), 33, Counter(), Counter(), Counter())

    bill = idle.monthly(stage, tick, ["JobsClaimed"])

    assert bill["alarms"] == pytest.approx(0.40)
    assert bill["dashboard"] == 3.00
    assert bill["custom metrics of the idle tick"] == pytest.approx(0.30)
    assert bill["tick invocations"] == pytest.approx(43_800 * 0.20 / 1e6, abs=0.001)
    assert bill["tick reads"] == pytest.approx(43_800 * 13 * 0.125 / 1e6, abs=0.001)
    assert bill["tick writes"] == pytest.approx(43_800 * 8 * 0.625 / 1e6, abs=0.001)
    # Five pollers a queue, each waiting 20 s a receive, all month.
    assert bill["idle queue polls"] == pytest.approx(2 * 5 * 730 * 3600 / 20 * 0.40 / 1e6, abs=0.001)


def test_an_idle_tick_keeps_no_custom_metric_alive() -> None:
    assert idle.idle_tick_metrics() == []
