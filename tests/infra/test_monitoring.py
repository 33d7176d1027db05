"""Alarms to one encrypted topic, and the dashboard."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sundial.contract.bounds import WORKER_FUNCTION_TIMEOUT_SECONDS
from sundial.shared import constants as c
from tests.infra.conftest import Synthesised, _synthesise

pytestmark = pytest.mark.infra


def _alarms(synthesised: Synthesised) -> list[dict[str, Any]]:
    return [a["Properties"] for a in synthesised.of_type("AWS::CloudWatch::Alarm").values()]


def _find(synthesised: Synthesised, metric_name: str, **match: Any) -> list[dict[str, Any]]:
    return [
        a
        for a in _alarms(synthesised)
        if a.get("MetricName") == metric_name and all(a.get(k) == v for k, v in match.items())
    ]


def _function_id(synthesised: Synthesised, handler: str) -> str:
    (found,) = (
        k
        for k, f in synthesised.of_type("AWS::Lambda::Function").items()
        if f["Properties"]["Handler"] == handler
    )
    return found


def _queue_id(synthesised: Synthesised, name: str) -> str:
    return synthesised.own_ids()[name]


def test_every_alarm_notifies_the_one_topic(synthesised: Synthesised) -> None:
    (topic_id,) = synthesised.of_type("AWS::SNS::Topic")
    alarms = _alarms(synthesised)
    assert len(alarms) >= 10
    for alarm in alarms:
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
        # No data is no trouble, except for the alarm that watches for the tick to stop.
        expected = "breaching" if alarm.get("MetricName") == "Invocations" else "notBreaching"
        assert alarm["TreatMissingData"] == expected


def test_cloudwatch_may_publish_to_the_topic_for_these_alarms_only(synthesised: Synthesised) -> None:
    # A topic policy replaces SNS's default one: without this statement no alarm reaches anyone.
    (topic_id,) = synthesised.of_type("AWS::SNS::Topic")
    (policy,) = synthesised.of_type("AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    allows = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    (statement,) = allows
    assert statement["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert statement["Action"] == "sns:Publish"
    assert statement["Resource"] == {"Ref": topic_id}
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    sources = statement["Condition"]["ArnLike"]["aws:SourceArn"]
    alarm_ids = set(synthesised.of_type("AWS::CloudWatch::Alarm"))
    assert sorted(map(str, sources)) == sorted(str({"Fn::GetAtt": [a, "Arn"]}) for a in alarm_ids)


def test_an_alarm_fires_when_the_tick_stops(synthesised: Synthesised) -> None:
    # A disabled rule or a lost invoke permission shows as no invocations, not as errors.
    scheduler = _function_id(synthesised, "sundial.functions.scheduler.handler")
    (alarm,) = _find(synthesised, "Invocations", Namespace="AWS/Lambda")
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": scheduler}}]
    assert alarm["Statistic"] == "Sum"
    assert alarm["Period"] == 60
    assert alarm["ComparisonOperator"] == "LessThanThreshold"
    assert alarm["Threshold"] == 1
    assert alarm["TreatMissingData"] == "breaching"
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] <= 10


def test_the_topic_is_encrypted_with_the_stage_s_one_key(synthesised: Synthesised) -> None:
    (topic,) = synthesised.of_type("AWS::SNS::Topic").values()
    # One customer managed key a stage ($1 a month each): the header sealing key. test_iam_contract.py
    # holds each use of it to its own encryption context.
    (key_id,) = synthesised.of_type("AWS::KMS::Key")
    assert key_id.startswith("FunctionsHeaderKey")
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    key = synthesised.resources[key_id]["Properties"]
    assert key["EnableKeyRotation"] is True
    assert "cloudwatch.amazonaws.com" in json.dumps(key["KeyPolicy"])


def test_dead_letter_queue_alarm(synthesised: Synthesised) -> None:
    dead = _queue_id(synthesised, c.DEAD_LETTER_QUEUE_NAME)
    (alarm,) = _find(synthesised, "ApproximateNumberOfMessagesVisible", Namespace="AWS/SQS")
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dead, "QueueName"]}}]
    assert alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


# The dimensions of the default stage's own series (another stage's name their stack instead).
OWN_DIMENSIONS = [
    {"Name": "service", "Value": c.METRICS_SERVICE},
    {"Name": c.METRICS_STACK_DIMENSION, "Value": "Sundial"},
]


def test_dead_jobs_alarm_on_the_sundial_metric(synthesised: Synthesised) -> None:
    (alarm,) = _find(synthesised, c.Metric.DEAD.value, Namespace=c.METRICS_NAMESPACE)
    assert alarm["Dimensions"] == OWN_DIMENSIONS
    assert alarm["Statistic"] == "Sum"
    assert alarm["Threshold"] == 1  # >= 1 dead job, i.e. > 0


def test_a_recurring_job_dying_again_and_again_alarms_at_the_configured_streak(
    synthesised: Synthesised, configured: Synthesised
) -> None:
    for stack, threshold in ((synthesised, 3), (configured, 5)):
        (alarm,) = _find(stack, c.Metric.DEAD_OCCURRENCES_IN_A_ROW.value, Namespace=c.METRICS_NAMESPACE)
        assert (alarm["Statistic"], alarm["Threshold"]) == ("Maximum", threshold)
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


@pytest.mark.parametrize("metric_name", ["Errors", "Throttles"])
def test_scheduler_error_and_throttle_alarms(synthesised: Synthesised, metric_name: str) -> None:
    scheduler = _function_id(synthesised, "sundial.functions.scheduler.handler")
    (alarm,) = _find(synthesised, metric_name, Namespace="AWS/Lambda")
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": scheduler}}]


def test_scheduler_duration_alarm_below_its_timeout(synthesised: Synthesised) -> None:
    scheduler = _function_id(synthesised, "sundial.functions.scheduler.handler")
    timeout_ms = synthesised.resources[scheduler]["Properties"]["Timeout"] * 1000
    (alarm,) = _find(synthesised, "Duration", Namespace="AWS/Lambda")
    assert alarm["Statistic"] == "Maximum"
    assert 0.5 * timeout_ms <= alarm["Threshold"] < timeout_ms


def test_oldest_message_age_alarm_per_priority_queue(synthesised: Synthesised) -> None:
    alarms = _find(synthesised, "ApproximateAgeOfOldestMessage", Namespace="AWS/SQS")
    watched = {a["Dimensions"][0]["Value"]["Fn::GetAtt"][0] for a in alarms}
    assert watched == {_queue_id(synthesised, name) for name in c.QUEUE_NAMES.values()}
    # Above the longest legitimate wait: the full SQS delay plus a job running its whole timeout.
    assert all(a["Threshold"] > c.MAX_DELAY_SECONDS + WORKER_FUNCTION_TIMEOUT_SECONDS for a in alarms)


def test_start_lateness_p99_alarm(synthesised: Synthesised, configured: Synthesised) -> None:
    (alarm,) = _find(synthesised, c.Metric.START_LATENESS_MS.value, Namespace=c.METRICS_NAMESPACE)
    assert alarm["ExtendedStatistic"] == "p99"
    assert alarm["Dimensions"] == OWN_DIMENSIONS
    assert alarm["Threshold"] == 1000
    (configured_alarm,) = _find(configured, c.Metric.START_LATENESS_MS.value)
    assert configured_alarm["Threshold"] == 2500


def test_email_subscription_only_when_configured(synthesised: Synthesised, configured: Synthesised) -> None:
    synthesised.template.resource_count_is("AWS::SNS::Subscription", 0)
    configured.template.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "ops@example.com"}
    )


def test_a_stage_without_a_dashboard_keeps_every_alarm(
    synthesised: Synthesised, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The dashboard is most of an idle stage's bill (docs/operations.md, "What a stage costs idle").
    bare = _synthesise(tmp_path_factory.mktemp("cdk.out.bare"), {"sundial:dashboard": "false"})

    bare.template.resource_count_is("AWS::CloudWatch::Dashboard", 0)
    assert "DashboardName" not in bare.template.to_json().get("Outputs", {})
    alarms = {props["AlarmDescription"] for props in _alarm_properties(bare)}
    assert alarms == {props["AlarmDescription"] for props in _alarm_properties(synthesised)}
    assert "DashboardName" in synthesised.template.to_json()["Outputs"]


def _alarm_properties(stage: Synthesised) -> list[dict[str, Any]]:
    return [resource["Properties"] for resource in stage.of_type("AWS::CloudWatch::Alarm").values()]


def test_dashboard_shows_throughput_lateness_queues_dead_jobs_and_errors(synthesised: Synthesised) -> None:
    (dashboard,) = synthesised.of_type("AWS::CloudWatch::Dashboard").values()
    # The body is a string with tokens (queue and function names) joined in: keep the literal parts.
    parts = dashboard["Properties"]["DashboardBody"]["Fn::Join"][1]
    body = "".join(part if isinstance(part, str) else "<token>" for part in parts)
    for metric in c.Metric:
        assert metric.value in body, metric
    for needle in (
        "p50",
        "p99",
        "ApproximateNumberOfMessagesVisible",
        "ApproximateAgeOfOldestMessage",
        "Errors",
        "Throttles",
        "5XXError",
        '"Sundial","JobsDead","service","sundial","stack","Sundial"',
    ):
        assert needle in body, needle
