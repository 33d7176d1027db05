"""The three functions, their grants and the worker's event sources."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from sundial.contract.bounds import (
    LONGEST_TIMEOUT_SECONDS,
    MAX_EARLY_WAIT_SECONDS,
    SETTLE_HEADROOM_SECONDS,
    WORKER_FUNCTION_TIMEOUT_SECONDS,
)
from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from tests.infra.conftest import CONFIGURED_CONTEXT, Synthesised

pytestmark = pytest.mark.infra

HANDLERS = {
    "api": "sundial.functions.api.handler",
    "scheduler": "sundial.functions.scheduler.handler",
    "worker": "sundial.functions.worker.handler",
}


def _functions(synthesised: Synthesised) -> dict[str, tuple[str, dict[str, Any]]]:
    """Function name (api/scheduler/worker) -> (logical id, properties)."""
    by_handler = {
        f["Properties"]["Handler"]: (logical_id, f["Properties"])
        for logical_id, f in synthesised.of_type("AWS::Lambda::Function").items()
    }
    assert set(by_handler) == set(HANDLERS.values())
    return {name: by_handler[handler] for name, handler in HANDLERS.items()}


def _queue_ids(synthesised: Synthesised) -> dict[str, str]:
    """The local stack's queue name -> the deployed queue's logical id."""
    return {k: v for k, v in synthesised.own_ids().items() if k != c.TABLE_NAME}


def test_three_functions_python_312_or_newer_on_arm64_with_tracing(synthesised: Synthesised) -> None:
    for _, properties in _functions(synthesised).values():
        runtime = properties["Runtime"]
        assert runtime.startswith("python3.")
        assert int(runtime.removeprefix("python3.")) >= 12
        assert properties["Architectures"] == ["arm64"]
        assert properties["TracingConfig"] == {"Mode": "Active"}
        assert "LogGroup" in properties["LoggingConfig"]


def _header_key(synthesised: Synthesised) -> dict[str, Any]:
    (key_id,) = (k for k in synthesised.of_type("AWS::KMS::Key") if k.startswith("FunctionsHeaderKey"))
    return {"Fn::GetAtt": [key_id, "Arn"]}


def test_every_function_gets_the_same_environment_and_the_worker_its_signing_secret(
    synthesised: Synthesised,
) -> None:
    queue_ids = _queue_ids(synthesised)
    table_id = next(iter(synthesised.of_type("AWS::DynamoDB::Table")))
    expected = {
        c.ENV_TABLE_NAME: {"Ref": table_id},
        c.ENV_QUEUE_URL_HIGH: {"Ref": queue_ids[c.QUEUE_NAMES[Priority.HIGH]]},
        c.ENV_QUEUE_URL_MEDIUM: {"Ref": queue_ids[c.QUEUE_NAMES[Priority.MEDIUM]]},
        c.ENV_QUEUE_URL_LOW: {"Ref": queue_ids[c.QUEUE_NAMES[Priority.LOW]]},
        c.ENV_DEAD_LETTER_QUEUE_URL: {"Ref": queue_ids[c.DEAD_LETTER_QUEUE_NAME]},
        c.ENV_PRECISION: "second",
        c.ENV_HISTORY: "all",
        c.ENV_RETENTION_DAYS: "30",
        c.ENV_LIST_INDEXES: ",".join([c.LIST_INDEX_NAME, *c.FILTER_INDEXES]),
        "POWERTOOLS_SERVICE_NAME": "sundial",
        "POWERTOOLS_METRICS_NAMESPACE": "Sundial",
        c.ENV_STACK_NAME: "Sundial",
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "LOG_LEVEL": "INFO",
    }
    (signing_id,) = synthesised.of_type("AWS::SecretsManager::Secret")
    for name, (_, properties) in _functions(synthesised).items():
        # The worker alone signs deliveries.
        signing = {c.ENV_SIGNING_SECRET_ARN: {"Ref": signing_id}} if name == "worker" else {}
        # The API seals inline header values with the key, the worker opens them.
        sealing = {c.ENV_HEADER_KEY_ARN: _header_key(synthesised)} if name != "scheduler" else {}
        assert properties["Environment"]["Variables"] == expected | signing | sealing


def test_timeouts(synthesised: Synthesised) -> None:
    functions = _functions(synthesised)
    assert functions["scheduler"][1]["Timeout"] <= c.TICK_SECONDS
    # Below API Gateway's 29 s: the function never works on for a client that was told 504.
    assert functions["api"][1]["Timeout"] < 29


def test_a_job_of_the_longest_timeout_still_settles_inside_the_worker(synthesised: Synthesised) -> None:
    # The worker gets Lambda's longest invocation; the engine cuts each attempt to what is left of it
    # minus the settle headroom, so the longest timeout the API accepts must fit in what the deployed
    # function leaves after an early message's wait and that headroom.
    worker = _functions(synthesised)["worker"][1]
    assert worker["Timeout"] == WORKER_FUNCTION_TIMEOUT_SECONDS == 900
    assert 0 < SETTLE_HEADROOM_SECONDS < worker["Timeout"] / 10
    assert worker["Timeout"] - MAX_EARLY_WAIT_SECONDS - SETTLE_HEADROOM_SECONDS >= LONGEST_TIMEOUT_SECONDS


def test_the_scheduler_reserves_no_concurrency_unless_asked(
    synthesised: Synthesised, configured: Synthesised
) -> None:
    # A reservation must leave 100 unreserved: on an account with a limit of 10 or 50 it fails the deploy.
    assert "ReservedConcurrentExecutions" not in _functions(synthesised)["scheduler"][1]
    assert _functions(configured)["scheduler"][1]["ReservedConcurrentExecutions"] == 3


def test_stale_ticks_are_dropped(synthesised: Synthesised) -> None:
    scheduler_id, _ = _functions(synthesised)["scheduler"]
    synthesised.template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {"FunctionName": {"Ref": scheduler_id}, "MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60},
    )


def test_the_scheduler_may_invoke_itself_as_a_claimer_and_no_other_function(
    synthesised: Synthesised,
) -> None:
    scheduler_id, _ = _functions(synthesised)["scheduler"]
    invokes = {
        function: _granted(_statements(synthesised, function), "lambda:InvokeFunction")
        for function in HANDLERS
    }
    assert invokes == {"api": [], "scheduler": [{"Fn::GetAtt": [scheduler_id, "Arn"]}], "worker": []}


def _event_sources(synthesised: Synthesised) -> dict[str, dict[str, Any]]:
    """Queue name -> event source mapping properties."""
    names = {k: v for v, k in _queue_ids(synthesised).items()}
    return {
        names[m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]]: m["Properties"]
        for m in synthesised.of_type("AWS::Lambda::EventSourceMapping").values()
    }


def test_worker_has_one_event_source_per_queue(synthesised: Synthesised) -> None:
    worker_id, _ = _functions(synthesised)["worker"]
    sources = _event_sources(synthesised)
    assert set(sources) == set(c.QUEUE_NAMES.values())
    for mapping in sources.values():
        assert mapping["FunctionName"] == {"Ref": worker_id}
        assert mapping["BatchSize"] == 10
        # No batching window: a message never waits for a batch to fill.
        assert mapping.get("MaximumBatchingWindowInSeconds", 0) == 0
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_worker_concurrency_per_queue_defaults(synthesised: Synthesised) -> None:
    concurrency = {
        name: m["ScalingConfig"]["MaximumConcurrency"] for name, m in _event_sources(synthesised).items()
    }
    assert concurrency == {"sundial-high": 50, "sundial-medium": 20, "sundial-low": 5}


def test_context_sets_worker_concurrency_and_provisioned_pollers(configured: Synthesised) -> None:
    sources = _event_sources(configured)
    concurrency = {
        name: m["ScalingConfig"]["MaximumConcurrency"] for name, m in sources.items() if "ScalingConfig" in m
    }
    assert concurrency == {"sundial-medium": 30}
    # Provisioned mode replaces MaximumConcurrency on its queue (Lambda takes one or the other).
    high, low = sources["sundial-high"], sources["sundial-low"]
    assert high["ProvisionedPollerConfig"] == {"MinimumPollers": 5, "MaximumPollers": 50}
    assert low["ProvisionedPollerConfig"] == {"MinimumPollers": 2, "MaximumPollers": 4}
    assert "ScalingConfig" not in high and "ScalingConfig" not in low


def _statements(synthesised: Synthesised, function: str) -> list[dict[str, Any]]:
    _, properties = _functions(synthesised)[function]
    role_id = properties["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for policy in synthesised.of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> set[str]:
    actions = statement["Action"]
    return {actions} if isinstance(actions, str) else set(actions)


def _resources(statement: dict[str, Any]) -> list[Any]:
    found = statement["Resource"]
    return found if isinstance(found, list) else [found]


def _granted(statements: list[dict[str, Any]], action: str) -> list[Any]:
    resources: list[Any] = []
    for statement in statements:
        if action in _actions(statement):
            found = statement["Resource"]
            resources.extend(found if isinstance(found, list) else [found])
    return resources


def _queue_arn(synthesised: Synthesised, name: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [_queue_ids(synthesised)[name], "Arn"]}


@pytest.mark.parametrize(("function", "dead_letter"), [("api", False), ("scheduler", True), ("worker", True)])
def test_send_grants(synthesised: Synthesised, function: str, dead_letter: bool) -> None:
    sends = _granted(_statements(synthesised, function), "sqs:SendMessage")
    for name in c.QUEUE_NAMES.values():
        assert _queue_arn(synthesised, name) in sends
    assert (_queue_arn(synthesised, c.DEAD_LETTER_QUEUE_NAME) in sends) is dead_letter


def test_the_api_reads_the_depths_of_the_three_priority_queues_only(synthesised: Synthesised) -> None:
    reads = _granted(_statements(synthesised, "api"), "sqs:GetQueueAttributes")
    expected = [_queue_arn(synthesised, name) for name in c.QUEUE_NAMES.values()]
    assert sorted(map(str, reads)) == sorted(map(str, expected))
    assert not _granted(_statements(synthesised, "scheduler"), "sqs:GetQueueAttributes")


# What each function's code calls (test_iam_contract.py proves it calls no more).
TABLE_ACTIONS = {
    # Scan: GET /stats's census, kept for a bounded age (sundial/shared/service/stats.py).
    "api": {"GetItem", "PutItem", "UpdateItem", "Query", "BatchGetItem", "Scan"},
    # Query: its sent marks and a bulk operation's listing, whose jobs BatchGetItem fetches.
    "scheduler": {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem"},
    # ConditionCheckItem: a booked start's fence checks its limit shard in its transaction.
    "worker": {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"},
}
INDEXES = {
    "api": [c.LIST_INDEX_NAME, *c.FILTER_INDEXES, c.DUE_INDEX_NAME],
    "scheduler": [c.DUE_INDEX_NAME, c.LIST_INDEX_NAME, *c.FILTER_INDEXES],
    "worker": [],
}


@pytest.mark.parametrize("function", HANDLERS)
def test_table_access_is_what_the_code_calls(synthesised: Synthesised, function: str) -> None:
    table_id = next(iter(synthesised.of_type("AWS::DynamoDB::Table")))
    table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
    on_table: set[str] = set()
    on_indexes: list[Any] = []
    for statement in _statements(synthesised, function):
        dynamo = {a.removeprefix("dynamodb:") for a in _actions(statement) if a.startswith("dynamodb:")}
        if not dynamo:
            continue
        for resource in _resources(statement):
            if resource == table_arn:
                on_table |= dynamo
            else:
                assert dynamo == {"Query"}, statement
                on_indexes.append(resource)
    # No BatchWriteItem, DescribeTable or stream reads; Scan for the api alone.
    assert on_table == TABLE_ACTIONS[function]
    expected = [{"Fn::Join": ["", [table_arn, f"/index/{name}"]]} for name in INDEXES[function]]
    assert sorted(map(str, on_indexes)) == sorted(map(str, expected))


def test_only_the_worker_consumes_the_priority_queues(synthesised: Synthesised) -> None:
    for function in HANDLERS:
        receives = _granted(_statements(synthesised, function), "sqs:ReceiveMessage")
        expected = (
            [_queue_arn(synthesised, n) for n in c.QUEUE_NAMES.values()] if function == "worker" else []
        )
        assert sorted(map(str, receives)) == sorted(map(str, expected))


TARGET_ACTIONS = ("lambda:InvokeFunction", "sqs:SendMessage", "sns:Publish", "events:PutEvents")


def test_worker_may_call_no_target_by_default(synthesised: Synthesised) -> None:
    statements = _statements(synthesised, "worker")
    for action in TARGET_ACTIONS:
        assert all(isinstance(r, dict) for r in _granted(statements, action)), action


def test_worker_may_call_exactly_the_targets_in_context(configured: Synthesised) -> None:
    statements = _statements(configured, "worker")
    arns = CONFIGURED_CONTEXT["sundial:targetArns"]
    invoked = {r for r in _granted(statements, "lambda:InvokeFunction") if isinstance(r, str)}
    assert invoked == {arns[0], arns[0] + ":*", arns[1], arns[1] + ":*"}
    sent = {r for r in _granted(statements, "sqs:SendMessage") if isinstance(r, str)}
    assert sent == {arns[2]}
    assert _granted(statements, "sns:Publish") == [arns[3]]
    assert _granted(statements, "events:PutEvents") == [arns[4]]
    assert not _granted(_statements(configured, "api"), "lambda:InvokeFunction")
    # The scheduler invokes itself (its claimers), never a target.
    assert all(
        isinstance(r, dict) for r in _granted(_statements(configured, "scheduler"), "lambda:InvokeFunction")
    )
    # The one action each target type calls, not what a grant helper adds (GetQueueUrl, ...).
    for arn, action in (
        (arns[2], "sqs:SendMessage"),
        (arns[3], "sns:Publish"),
        (arns[4], "events:PutEvents"),
    ):
        assert [_actions(s) for s in statements if arn in _resources(s)] == [{action}]


def test_worker_may_use_the_target_keys_in_context(synthesised: Synthesised, configured: Synthesised) -> None:
    # By default no function may use any key but the one that seals header values
    # (tests/infra/test_secret_grants.py).
    for function in HANDLERS:
        statements = _statements(synthesised, function)
        kms = [s for s in statements if any(a.startswith("kms:") for a in _actions(s))]
        assert all(_resources(s) == [_header_key(synthesised)] for s in kms), function
    (key,) = [CONFIGURED_CONTEXT["sundial:targetKmsKeyArns"]]
    statements = _statements(configured, "worker")
    assert _granted(statements, "kms:GenerateDataKey") == [key]
    assert sorted(map(str, _granted(statements, "kms:Decrypt"))) == sorted(
        map(str, [key, _header_key(configured)])
    )


def test_function_roles_write_only_their_own_log_group(synthesised: Synthesised) -> None:
    for function, (_, properties) in _functions(synthesised).items():
        log_group_id = properties["LoggingConfig"]["LogGroup"]["Ref"]
        writes = _granted(_statements(synthesised, function), "logs:PutLogEvents")
        assert writes == [{"Fn::GetAtt": [log_group_id, "Arn"]}]
    synthesised.template.has_resource_properties(
        "AWS::Logs::LogGroup", {"RetentionInDays": Match.any_value()}
    )
    for role in synthesised.of_type("AWS::IAM::Role").values():
        if "lambda.amazonaws.com" in str(role["Properties"]["AssumeRolePolicyDocument"]):
            assert "ManagedPolicyArns" not in role["Properties"]


def test_precision_and_history_reach_every_function(
    synthesised: Synthesised, configured: Synthesised
) -> None:
    for stack, expected in ((synthesised, ("second", "all")), (configured, ("sqs", "failures"))):
        for _, properties in _functions(stack).values():
            variables = properties["Environment"]["Variables"]
            assert (variables[c.ENV_PRECISION], variables[c.ENV_HISTORY]) == expected
