"""The table and the queues: names and keys from shared.constants, durable and encrypted."""

from __future__ import annotations

from typing import Any

import pytest

from local_stack.resources import table_definition
from shared import constants as c
from tests.infra.conftest import Synthesised

pytestmark = pytest.mark.infra


def _table(synthesised: Synthesised) -> dict[str, Any]:
    (table,) = synthesised.of_type("AWS::DynamoDB::Table").values()
    return table


def _gsi_shape(index: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...], str]:
    keys = tuple((k["AttributeName"], k["KeyType"]) for k in index["KeySchema"])
    return index["IndexName"], keys, index["Projection"]["ProjectionType"]


def test_table_declares_the_emulators_keys_and_indexes(synthesised: Synthesised) -> None:
    deployed = _table(synthesised)["Properties"]
    local = table_definition(c.TABLE_NAME)
    assert deployed["TableName"] == local["TableName"]
    assert deployed["BillingMode"] == local["BillingMode"]
    assert deployed["KeySchema"] == local["KeySchema"]
    assert sorted(map(str, deployed["AttributeDefinitions"])) == sorted(
        map(str, local["AttributeDefinitions"])
    )
    assert sorted(map(_gsi_shape, deployed["GlobalSecondaryIndexes"])) == sorted(
        map(_gsi_shape, local["GlobalSecondaryIndexes"])
    )


def test_due_and_listing_indexes_project_keys_only(synthesised: Synthesised) -> None:
    indexes = {i["IndexName"]: i for i in _table(synthesised)["Properties"]["GlobalSecondaryIndexes"]}
    assert set(indexes) == {c.DUE_INDEX_NAME, c.LIST_INDEX_NAME}
    assert {i["Projection"]["ProjectionType"] for i in indexes.values()} == {"KEYS_ONLY"}


def test_table_is_on_demand_recoverable_protected_encrypted_with_ttl(synthesised: Synthesised) -> None:
    synthesised.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "DeletionProtectionEnabled": True,
                "SSESpecification": {"SSEEnabled": True},
                "TimeToLiveSpecification": {"AttributeName": c.TTL_ATTRIBUTE, "Enabled": True},
            },
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def _queues(synthesised: Synthesised) -> dict[str, dict[str, Any]]:
    return {q["Properties"]["QueueName"]: q for q in synthesised.of_type("AWS::SQS::Queue").values()}


def test_three_priority_queues_and_one_dead_letter_queue(synthesised: Synthesised) -> None:
    assert set(_queues(synthesised)) == {*c.QUEUE_NAMES.values(), c.DEAD_LETTER_QUEUE_NAME}


@pytest.mark.parametrize("priority", c.PRIORITIES)
def test_priority_queue_visibility_and_redrive(synthesised: Synthesised, priority: c.Priority) -> None:
    queues = _queues(synthesised)
    properties = queues[c.QUEUE_NAMES[priority]]["Properties"]
    assert properties["VisibilityTimeout"] >= 6 * c.WORKER_FUNCTION_TIMEOUT_SECONDS
    assert properties["VisibilityTimeout"] == c.QUEUE_VISIBILITY_TIMEOUT_SECONDS
    redrive = properties["RedrivePolicy"]
    assert redrive["maxReceiveCount"] >= 5
    assert redrive["maxReceiveCount"] == c.MAX_RECEIVE_COUNT
    dead_letter_id = next(
        k for k, q in synthesised.resources.items() if q is queues[c.DEAD_LETTER_QUEUE_NAME]
    )
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": [dead_letter_id, "Arn"]}


def test_dead_letter_queue_keeps_messages_fourteen_days(synthesised: Synthesised) -> None:
    properties = _queues(synthesised)[c.DEAD_LETTER_QUEUE_NAME]["Properties"]
    assert properties["MessageRetentionPeriod"] == 14 * 24 * 3600 == c.DEAD_LETTER_RETENTION_DAYS * 86400
    assert "RedrivePolicy" not in properties


def test_every_queue_is_encrypted_and_refuses_plain_http(synthesised: Synthesised) -> None:
    for queue in _queues(synthesised).values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    policies = synthesised.of_type("AWS::SQS::QueuePolicy").values()
    protected = set()
    for policy in policies:
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Effect"] == "Deny"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        protected.update(q["Ref"] for q in policy["Properties"]["Queues"])
    assert protected == set(synthesised.of_type("AWS::SQS::Queue"))
