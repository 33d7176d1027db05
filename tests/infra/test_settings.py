"""Context keys: defaults, command-line strings, and errors that name the key."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.infra


def _settings(context: dict[str, Any]) -> Any:
    from aws_cdk import App

    from infra.settings import Settings

    return Settings.from_context(App(context=context).node)


def test_defaults() -> None:
    from sundial.contract.vocabulary import Priority

    settings = _settings({})
    assert dict(settings.max_concurrency) == {Priority.HIGH: 50, Priority.MEDIUM: 20, Priority.LOW: 5}
    assert settings.target_arns == ()
    assert settings.alarm_email is None
    # Every default deploys on a fresh account: no reservation, no protection a rollback would meet.
    assert settings.scheduler_reserved_concurrency is None
    assert settings.table_deletion_protection is False
    assert settings.target_kms_key_arns == ()
    assert dict(settings.provisioned_pollers) == {}
    assert (settings.precision, settings.history, settings.provisioned_capacity) == ("second", "all", None)


def test_an_upgrade_reads_only_the_indexes_declared_once_the_backfill_is_done() -> None:
    from sundial.shared import constants as c

    assert _settings({}).ready_indexes == (c.LIST_INDEX_NAME, *c.FILTER_INDEXES)
    assert _settings({"sundial:listIndexes": 0, "sundial:listingBackfilled": "false"}).ready_indexes == ()
    assert _settings({"sundial:listIndexes": "2"}).ready_indexes == (c.LIST_INDEX_NAME, *c.FILTER_INDEXES[:2])
    assert _settings({}).dead_occurrences_in_a_row == 3
    assert _settings({}).dashboard is True
    assert _settings({"sundial:dashboard": "false"}).dashboard is False


def test_the_api_is_rest_unless_http_is_chosen() -> None:
    from infra.settings import ApiKind

    assert _settings({}).api is ApiKind.REST
    assert _settings({"sundial:api": "rest"}).api is ApiKind.REST
    assert _settings({"sundial:api": "http"}).api is ApiKind.HTTP


def test_provisioned_capacity_defaults_and_overrides() -> None:
    from infra.capacity_settings import Capacity

    assert _settings({"sundial:billingMode": "provisioned"}).provisioned_capacity == Capacity()
    chosen = _settings(
        {"sundial:billingMode": "provisioned", "sundial:provisionedCapacity": {"readMax": 50, "writeMin": 20}}
    ).provisioned_capacity
    assert chosen == Capacity(read_max=50, write_min=20)


@pytest.mark.parametrize(
    ("context", "name"), [({}, "Sundial"), ({"sundial:stage": "prod-eu"}, "Sundial-prod-eu")]
)
def test_the_stage_names_the_stack(context: dict[str, Any], name: str) -> None:
    from aws_cdk import App

    from infra.settings import stack_name

    assert stack_name(App(context=context).node) == name


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("2,20", (2, 20)), ({"minimum": 3, "maximum": 30}, (3, 30)), ('{"minimum": 2, "maximum": 2}', (2, 2))],
)
def test_provisioned_pollers_from_cdk_json_or_the_command_line(raw: Any, expected: tuple[int, int]) -> None:
    from infra.capacity_settings import Pollers
    from sundial.contract.vocabulary import Priority

    pollers = _settings({"sundial:provisionedPollersHigh": raw}).provisioned_pollers
    assert dict(pollers) == {Priority.HIGH: Pollers(*expected)}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "arn:aws:sns:us-east-1:1:a, arn:aws:sns:us-east-1:1:b",
            ("arn:aws:sns:us-east-1:1:a", "arn:aws:sns:us-east-1:1:b"),
        ),
        ('["arn:aws:sns:us-east-1:1:a"]', ("arn:aws:sns:us-east-1:1:a",)),
        (["arn:aws:sns:us-east-1:1:a"], ("arn:aws:sns:us-east-1:1:a",)),
        ("", ()),
    ],
)
def test_target_arns_from_cdk_json_or_the_command_line(raw: Any, expected: tuple[str, ...]) -> None:
    assert _settings({"sundial:targetArns": raw}).target_arns == expected


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"sundial:maxConcurrencyHigh": "1"}, "sundial:maxConcurrencyHigh"),
        ({"sundial:maxConcurrencyLow": "1001"}, "2-1000"),
        ({"sundial:maxConcurrencyMedium": "many"}, "must be an integer"),
        ({"sundial:schedulerReservedConcurrency": 0}, "at least 1"),
        ({"sundial:targetArns": 5}, "list of strings"),
        ({"sundial:stage": "9lives"}, "sundial:stage"),
        ({"sundial:stage": "a_b"}, "letters, digits and hyphens"),
        (
            {"sundial:targetKmsKeyArns": "arn:aws:kms:us-east-1:123456789012:alias/jobs"},
            "alias ARN grants nothing",
        ),
        ({"sundial:tableDeletionProtection": "maybe"}, "true or false"),
        ({"sundial:provisionedPollersHigh": "1,10"}, "minimum of 2-200"),
        ({"sundial:provisionedPollersHigh": "20,10"}, "not below the minimum"),
        ({"sundial:provisionedPollersHigh": "many"}, "MIN,MAX"),
        ({"sundial:precision": "minute"}, "sundial:precision=.*second, sqs"),
        ({"sundial:history": "none"}, "sundial:history=.*all, failures"),
        ({"sundial:billingMode": "PAY_PER_REQUEST"}, "sundial:billingMode=.*on-demand, provisioned"),
        ({"sundial:provisionedCapacity": {"writeMax": 9}}, "needs sundial:billingMode=provisioned"),
        (
            {
                "sundial:billingMode": "provisioned",
                "sundial:provisionedCapacity": '{"writeMin": 9, "writeMax": 5}',
            },
            "min <= max",
        ),
        (
            {"sundial:billingMode": "provisioned", "sundial:provisionedCapacity": {"targetUtilization": 95}},
            "20-90",
        ),
        ({"sundial:billingMode": "provisioned", "sundial:provisionedCapacity": {"wcu": 5}}, "keys among"),
        ({"sundial:listIndexes": "5"}, "sundial:listIndexes=5: must be 0-4"),
        ({"sundial:listingBackfilled": "later"}, "true or false"),
        ({"sundial:dashboard": "sometimes"}, "sundial:dashboard.*true or false"),
        ({"sundial:api": "websocket"}, "sundial:api='websocket': must be one of rest, http"),
        ({"sundial:api": "HTTP"}, "sundial:api='HTTP': must be one of rest, http"),
        ({"sundial:deadOccurrencesInARow": 0}, "sundial:deadOccurrencesInARow=0: must be at least 1"),
        ({"sundial:provisionedPollersMedium": "1,10"}, "sundial:provisionedPollersMedium=.*minimum of 2-200"),
        ({"sundial:provisionedPollersLow": "few"}, "sundial:provisionedPollersLow=.*MIN,MAX"),
        ({"sundial:warmThroughput": "fast"}, "sundial:warmThroughput=.*WRITE,READ"),
        ({"sundial:warmThroughput": "3000"}, "4,000-40,000 write"),
        ({"sundial:warmThroughput": "40000,11000"}, "12,000-40,000 read"),
        ({"sundial:warmThroughput": 60000}, "per-table quota of 40,000, which a Service Quotas increase"),
    ],
)
def test_unusable_values_name_the_key(context: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _settings(context)


def test_an_arn_no_target_can_use_is_refused() -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_iam as iam

    from infra.targets import grant_targets

    stack = Stack(App(), "S")
    role = iam.Role(stack, "R", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    with pytest.raises(ValueError, match="sundial:targetArns"):
        grant_targets(stack, role, ["arn:aws:s3:::bucket"])


def test_the_due_shard_counts_are_read_and_bounded() -> None:
    chosen = _settings({"sundial:dueShards": "32", "sundial:dueShardsBefore": 8})
    assert (chosen.due_shards, chosen.due_shards_before) == (32, 8)
    assert (_settings({}).due_shards, _settings({}).due_shards_before) == (None, None)
    with pytest.raises(ValueError, match="sundial:dueShards=257"):
        _settings({"sundial:dueShards": 257})
    with pytest.raises(ValueError, match="sundial:dueShardsBefore"):
        _settings({"sundial:dueShardsBefore": "0"})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("40000", (40000, 12000)),
        (40000, (40000, 12000)),
        ("20000,30000", (20000, 30000)),
        ('{"write": 8000}', (8000, 12000)),
        ({"write": 8000, "read": 40000}, (8000, 40000)),
    ],
)
def test_warm_throughput_from_cdk_json_or_the_command_line(raw: Any, expected: tuple[int, int]) -> None:
    warm = _settings({"sundial:warmThroughput": raw}).warm_throughput
    assert (warm.write, warm.read) == expected
    assert _settings({}).warm_throughput is None


def test_every_queue_may_have_provisioned_pollers() -> None:
    from infra.capacity_settings import Pollers
    from sundial.contract.vocabulary import Priority

    context = {
        "sundial:provisionedPollersMedium": "30,30",
        "sundial:provisionedPollersLow": {"minimum": 2, "maximum": 20},
    }
    assert dict(_settings(context).provisioned_pollers) == {
        Priority.MEDIUM: Pollers(30, 30),
        Priority.LOW: Pollers(2, 20),
    }
