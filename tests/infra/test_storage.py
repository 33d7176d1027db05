"""The table and the queues: names and keys from sundial.shared.constants, durable and encrypted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sundial.contract.bounds import WORKER_FUNCTION_TIMEOUT_SECONDS
from sundial.contract.vocabulary import Priority
from sundial.local_stack.resources import table_definition
from sundial.shared import constants as c
from tests.infra.conftest import Synthesised, _synthesise

pytestmark = pytest.mark.infra
INDEXES = (c.DUE_INDEX_NAME, c.LIST_INDEX_NAME, *c.FILTER_INDEXES)


def _table(synthesised: Synthesised) -> dict[str, Any]:
    (table,) = synthesised.of_type("AWS::DynamoDB::Table").values()
    return table


def _gsi_shape(index: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...], str]:
    keys = tuple((k["AttributeName"], k["KeyType"]) for k in index["KeySchema"])
    return index["IndexName"], keys, index["Projection"]["ProjectionType"]


def test_table_declares_the_emulators_keys_and_indexes(synthesised: Synthesised) -> None:
    deployed = _table(synthesised)["Properties"]
    local = table_definition(c.TABLE_NAME)
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
    assert set(indexes) == {c.DUE_INDEX_NAME, c.LIST_INDEX_NAME, *c.FILTER_INDEXES}
    assert {i["Projection"]["ProjectionType"] for i in indexes.values()} == {"KEYS_ONLY"}
    for name in (c.LIST_INDEX_NAME, *c.FILTER_INDEXES):  # each sorts newest first by the job's id
        assert indexes[name]["KeySchema"][1] == {"AttributeName": c.LIST_SORT_ATTRIBUTE, "KeyType": "RANGE"}


def test_an_upgrade_adds_the_filter_indexes_one_per_deploy(tmp_path: Any) -> None:
    """CloudFormation creates at most one index per stack update: `sundial:listIndexes` steps them
    in, and until the backfill is done the functions read none of them (docs/operations.md)."""
    for declared in (0, 1):
        context = {"sundial:listIndexes": declared, "sundial:listingBackfilled": declared > 0}
        stack = _synthesise(tmp_path / str(declared), context)
        names = [i["IndexName"] for i in _table(stack)["Properties"]["GlobalSecondaryIndexes"]]
        assert names == [c.DUE_INDEX_NAME, c.LIST_INDEX_NAME, *c.FILTER_INDEXES[:declared]]
        functions = stack.of_type("AWS::Lambda::Function").values()
        (api,) = (f for f in functions if f["Properties"].get("Handler") == "sundial.functions.api.handler")
        ready = api["Properties"]["Environment"]["Variables"][c.ENV_LIST_INDEXES]
        assert ready == ",".join([c.LIST_INDEX_NAME, *c.FILTER_INDEXES[:declared]] if declared else [])


def test_table_is_on_demand_recoverable_encrypted_with_ttl(synthesised: Synthesised) -> None:
    synthesised.template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": {
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "SSESpecification": {"SSEEnabled": True},
                "TimeToLiveSpecification": {"AttributeName": c.TTL_ATTRIBUTE, "Enabled": True},
            },
        },
    )


def test_table_survives_deletes_and_replacements_but_not_a_failed_create(synthesised: Synthesised) -> None:
    (table,) = synthesised.of_type("AWS::DynamoDB::Table").values()
    # RETAIN_ON_UPDATE_OR_DELETE: a failed first deploy rolls the table back with everything else.
    assert table["DeletionPolicy"] == "RetainExceptOnCreate"
    assert table["UpdateReplacePolicy"] == "Retain"


def test_deletion_protection_is_opt_in(synthesised: Synthesised, configured: Synthesised) -> None:
    # DynamoDB refuses to delete a protected table, rollback included: on only once asked for.
    assert not _table(synthesised)["Properties"].get("DeletionProtectionEnabled", False)
    assert _table(configured)["Properties"]["DeletionProtectionEnabled"] is True


def test_a_failed_first_deploy_leaves_nothing_behind(synthesised: Synthesised) -> None:
    # "Retain" also holds when the create that made a resource rolls back, and the next deploy
    # then meets it; RetainExceptOnCreate (or Delete) does not.
    retained = {
        logical_id: resource["Type"]
        for logical_id, resource in synthesised.resources.items()
        if resource.get("DeletionPolicy", "Delete") not in ("Delete", "RetainExceptOnCreate")
    }
    assert not retained


# Properties that fix a resource's physical name: a fixed name is taken once per account and region.
NAME_PROPERTIES = {
    "AWS::DynamoDB::Table": "TableName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::IAM::Role": "RoleName",
    "AWS::KMS::Alias": "AliasName",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::Events::Rule": "Name",
    "AWS::Logs::LogGroup": "LogGroupName",
}


def _fixed_names(synthesised: Synthesised) -> dict[str, str]:
    """Logical id -> each physical name that is a plain string (a token is derived from the stack)."""
    return {
        logical_id: properties[NAME_PROPERTIES[resource["Type"]]]
        for logical_id, resource in synthesised.resources.items()
        if resource["Type"] in NAME_PROPERTIES
        and isinstance(
            (properties := resource.get("Properties", {})).get(NAME_PROPERTIES[resource["Type"]]), str
        )
    }


def test_no_physical_name_is_fixed(synthesised: Synthesised) -> None:
    assert not _fixed_names(synthesised)


def test_two_stages_deploy_side_by_side(synthesised: Synthesised, configured: Synthesised) -> None:
    # The configured stack is the "staging" stage: its own stack, and nothing named as the default's.
    assert (synthesised.stack_name, configured.stack_name) == ("Sundial", "Sundial-staging")
    assert not set(_fixed_names(synthesised).values()) & set(_fixed_names(configured).values())
    (default_api,) = synthesised.of_type("AWS::ApiGateway::RestApi").values()
    (staging_api,) = configured.of_type("AWS::ApiGateway::RestApi").values()
    assert default_api["Properties"]["Name"] != staging_api["Properties"]["Name"]


def _queues(synthesised: Synthesised) -> dict[str, dict[str, Any]]:
    """The local stack's queue name -> the deployed queue."""
    return {
        name: synthesised.resources[logical_id]
        for name, logical_id in synthesised.own_ids().items()
        if name != c.TABLE_NAME
    }


def test_three_priority_queues_and_one_dead_letter_queue(synthesised: Synthesised) -> None:
    assert set(_queues(synthesised)) == {*c.QUEUE_NAMES.values(), c.DEAD_LETTER_QUEUE_NAME}


@pytest.mark.parametrize("priority", c.PRIORITIES)
def test_priority_queue_visibility_and_redrive(synthesised: Synthesised, priority: Priority) -> None:
    queues = _queues(synthesised)
    properties = queues[c.QUEUE_NAMES[priority]]["Properties"]
    assert properties["VisibilityTimeout"] >= 6 * WORKER_FUNCTION_TIMEOUT_SECONDS
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
    protected: set[str] = set()
    for policy in policies:
        (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
        assert statement["Effect"] == "Deny"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        protected.update(q["Ref"] for q in policy["Properties"]["Queues"])
    assert protected == set(synthesised.of_type("AWS::SQS::Queue"))


def test_provisioned_billing_scales_the_table_and_each_index(
    synthesised: Synthesised, configured: Synthesised
) -> None:
    assert not synthesised.of_type("AWS::ApplicationAutoScaling::ScalableTarget")
    table_id, table = next(iter(configured.of_type("AWS::DynamoDB::Table").items()))
    properties = table["Properties"]
    assert properties.get("BillingMode", "PROVISIONED") == "PROVISIONED"  # CloudFormation's default
    assert properties["ProvisionedThroughput"] == {"ReadCapacityUnits": 5, "WriteCapacityUnits": 10}
    for index in properties["GlobalSecondaryIndexes"]:
        assert index["ProvisionedThroughput"] == {"ReadCapacityUnits": 5, "WriteCapacityUnits": 10}
    targets = configured.of_type("AWS::ApplicationAutoScaling::ScalableTarget")
    scaled = {}
    for logical_id, target in targets.items():
        p = target["Properties"]
        resource = json.dumps(p["ResourceId"])
        assert table_id in resource
        where = next((i for i in INDEXES if f"/index/{i}" in resource), "table")
        scaled[(where, p["ScalableDimension"].rsplit(":", 1)[-1])] = (
            p["MinCapacity"],
            p["MaxCapacity"],
            logical_id,
        )
    assert {key: bounds[:2] for key, bounds in scaled.items()} == {
        (where, dimension): ((5, 1000) if dimension == "ReadCapacityUnits" else (10, 1500))
        for where in ("table", *INDEXES)
        for dimension in ("ReadCapacityUnits", "WriteCapacityUnits")
    }
    policies = configured.of_type("AWS::ApplicationAutoScaling::ScalingPolicy").values()
    tracked = {policy["Properties"]["ScalingTargetId"]["Ref"] for policy in policies}
    assert tracked == {bounds[2] for bounds in scaled.values()}
    for policy in policies:
        config = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]
        assert config["TargetValue"] == 60


def test_warm_throughput_warms_the_table_and_every_index(synthesised: Synthesised, tmp_path: Any) -> None:
    """A burst writes the table and each index it moves a key of: each serves its own warm
    throughput, so `sundial:warmThroughput` raises them all (docs/operations.md, "Sizing")."""
    assert "WarmThroughput" not in _table(synthesised)["Properties"]
    warmed = _table(_synthesise(tmp_path, {"sundial:warmThroughput": "40000,20000"}))["Properties"]
    expected = {"WriteUnitsPerSecond": 40000, "ReadUnitsPerSecond": 20000}
    assert warmed["WarmThroughput"] == expected
    indexes = {i["IndexName"]: i.get("WarmThroughput") for i in warmed["GlobalSecondaryIndexes"]}
    assert indexes == dict.fromkeys(INDEXES, expected)
