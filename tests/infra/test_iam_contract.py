"""Least privilege, proven: every AWS call the functions make in the test suite is allowed by the
synthesised template, and so is every hop from one AWS service to another.

The calls are recorded by running tests/functions and tests/adapter with botocore's hooks
(tests/infra/aws_calls.py). Each distinct call is then evaluated as IAM would: the function's role
must allow it, and no resource policy of the resource may deny it. Target calls are evaluated on the
stack configured with `sundial:targetArns`; the rest on the default stack. The table of calls, with
the statement that grants each, is printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from infra.api import ROUTES
from sundial.shared import constants as c
from sundial.shared.constants import PRIORITIES
from sundial.shared.targets.sealing import CONTEXT_KEY as SEALING_CONTEXT_KEY
from tests.infra import contract
from tests.infra.aws_calls import CALLS_ENV, RECORDED_SUITES, Recorder, install
from tests.infra.conftest import CONFIGURED_CONTEXT, CONTRACT_TABLE, Synthesised
from tests.infra.contract import Call, Template, load_calls, requests
from tests.infra.policies import ACCOUNT, REGION, Decision, Request, Statement, evaluate
from tests.infra.test_api_and_tick import _methods

pytestmark = pytest.mark.infra

ROOT = Path(__file__).resolve().parents[2]
_ARNS = CONFIGURED_CONTEXT["sundial:targetArns"]
# A target call is checked as if the deployer had named its target: the configured one of its kind.
_SECRETS = CONFIGURED_CONTEXT["sundial:secretArns"]
TARGET_STAND_INS = {
    "lambda": _ARNS[0],
    "sqs": _ARNS[2],
    "sns": _ARNS[3],
    "events": _ARNS[4],
    # A header's secret reference is checked as if the deployer had named it in sundial:secretArns.
    "secretsmanager": _SECRETS[0],
    "ssm": _SECRETS[1],
}
ESM_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")


# A recording to check instead of recording anew (to work on this test without waiting for the suites).
REUSE_ENV = "SUNDIAL_AWS_CALLS_FROM"


@pytest.fixture(scope="session")
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The recorded calls: this run's own when it ran the recorded suites whole before this module,
    else those of a run of the suites in a process of their own."""
    if os.environ.get(REUSE_ENV):
        return Path(os.environ[REUSE_ENV]).read_text().splitlines()
    if _ran_the_recorded_suites_first(request.session):
        return install().lines()
    path = tmp_path_factory.mktemp("aws-calls") / "calls.jsonl"
    environment = {**os.environ, CALLS_ENV: str(path), "AWS_DEFAULT_REGION": "us-east-1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.infra.aws_calls"]
    result = subprocess.run(
        [*command, *RECORDED_SUITES],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    # A failing test there is reported by its own run; the calls made before it still count here.
    assert result.returncode in (0, 1) and path.exists(), result.stdout[-4000:] + result.stderr[-4000:]
    return path.read_text().splitlines()


def _ran_the_recorded_suites_first(session: pytest.Session) -> bool:
    here = Path(__file__).resolve()
    items = list(session.items)
    first = next(i for i, item in enumerate(items) if Path(item.path).resolve() == here)
    before = {Path(item.path).resolve() for item in items[:first]}
    wanted = {p.resolve() for suite in RECORDED_SUITES for p in (ROOT / suite).glob("test_*.py")}
    return wanted <= before


@pytest.fixture(scope="session")
def template(synthesised: Synthesised) -> Template:
    return Template(synthesised.resources)


@pytest.fixture(scope="session")
def configured_template(configured: Synthesised) -> Template:
    return Template(configured.resources)


def _decide(call: Call, template: Template, configured: Template) -> Iterator[tuple[Request, Decision]]:
    for request, own in requests(call, template, TARGET_STAND_INS):
        if not own:  # a job target or a secret: granted through context, on the configured stack
            decision = evaluate(configured.role_statements(call.function), request)
            key = "secretArns" if request.action.startswith(("secretsmanager:", "ssm:")) else "targetArns"
            yield request, Decision(decision.allowed, decision.by, f"with sundial:{key}: ")
            continue
        # A role's call in its own account: its policies must allow it, and no Deny of the resource's
        # own policy may forbid it.
        denials = [s for s in template.resource_statements(own) if s.body["Effect"] == "Deny"]
        denial = evaluate(denials, request)
        yield request, denial if denial.by else evaluate(template.role_statements(call.function), request)


def test_every_recorded_call_is_granted_and_none_is_denied(
    recorded: list[str], template: Template, configured_template: Template
) -> None:
    calls, unattributed = load_calls(recorded)
    rows, refused = [], []
    for call, count in sorted(calls.values(), key=lambda pair: pair[0].key):
        for request, decision in _decide(call, template, configured_template):
            row = (
                call.function,
                f"{call.service}:{call.operation}",
                count,
                request,
                decision,
                call.first_test,
            )
            rows.append(row)
            if not decision.allowed:
                refused.append(row)
    CONTRACT_TABLE.append(
        f"{'function':9} {'call':32} {'calls':>6}  {'IAM action on resource':<72} granted by"
    )
    for function, operation, count, request, decision, _ in rows:
        on = f"{request.action} on {request.resource.replace(f':{REGION}:{ACCOUNT}:', ':…:')}"
        verdict = decision.label if decision.allowed else f"DENIED ({decision.label})"
        CONTRACT_TABLE.append(f"{function:9} {operation:32} {count:>6}  {on:<72} {verdict}")
    CONTRACT_TABLE.append(
        f"({unattributed} calls made by test setup and checks, not by a function, left out)"
    )
    assert {row[0] for row in rows} == set(contract.FUNCTIONS), "a function made no recorded call"
    assert not refused, "\n".join(
        f"{r[0]} {r[1]}: {r[3].action} on {r[3].resource} (first made by {r[5]})" for r in refused
    )


def test_a_missing_grant_is_caught(recorded: list[str], template: Template) -> None:
    """The contract fails the day a grant goes: drop the worker's DeleteItem and its owed-alert
    clearing is refused."""
    calls, _ = load_calls(recorded)
    worker_deletes = [c for c, _ in calls.values() if c.function == "worker" and c.operation == "DeleteItem"]
    assert worker_deletes, "no recorded call of the worker clears an owed alert"
    statements = [
        s for s in template.role_statements("worker") if "dynamodb:DeleteItem" not in str(s.body["Action"])
    ]
    for request, _ in requests(worker_deletes[0], template, TARGET_STAND_INS):
        assert not evaluate(statements, request).allowed


# --- the hops between services, each through its resource policy ----------------------------------


def _alarms(template: Template) -> dict[str, str]:
    """Alarm logical id -> the logical id of the topic it notifies."""
    alarms = {}
    for alarm_id, alarm in template.of_type("AWS::CloudWatch::Alarm").items():
        (action,) = alarm["Properties"]["AlarmActions"]
        alarms[alarm_id] = action["Ref"]
    return alarms


def test_cloudwatch_may_publish_every_alarm_to_its_topic(template: Template) -> None:
    alarms = _alarms(template)
    assert alarms
    for alarm_id, topic_id in alarms.items():
        request = Request(
            "sns:Publish",
            template.arn(topic_id),
            service="cloudwatch.amazonaws.com",
            context={
                "aws:SecureTransport": "true",
                "aws:SourceAccount": ACCOUNT,
                "aws:SourceArn": template.arn(alarm_id),
            },
        )
        decision = evaluate(template.resource_statements(topic_id), request)
        assert decision.allowed, f"{alarm_id} cannot publish to {topic_id}: {decision.label}"
        CONTRACT_TABLE.append(f"hop  CloudWatch alarm {alarm_id} -> sns:Publish: {decision.label}")


def test_another_accounts_alarm_may_not_publish(template: Template) -> None:
    (topic_id,) = template.of_type("AWS::SNS::Topic")
    stranger = f"arn:aws:cloudwatch:{REGION}:210987654321:alarm:theirs"
    request = Request(
        "sns:Publish",
        template.arn(topic_id),
        service="cloudwatch.amazonaws.com",
        context={
            "aws:SecureTransport": "true",
            "aws:SourceAccount": "210987654321",
            "aws:SourceArn": stranger,
        },
    )
    assert not evaluate(template.resource_statements(topic_id), request).allowed


def _as_cloudwatch(action: str, key: str, context: Mapping[str, str]) -> Request:
    return Request(
        action,
        key,
        service="cloudwatch.amazonaws.com",
        context={"aws:SecureTransport": "true", "aws:SourceAccount": ACCOUNT, **context},
    )


def test_cloudwatch_may_use_the_topics_key_for_the_topic_alone(template: Template) -> None:
    for topic_id, topic in template.of_type("AWS::SNS::Topic").items():
        key_id = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
        key, policy = template.arn(key_id), template.resource_statements(key_id)
        for action in ("kms:GenerateDataKey", "kms:Decrypt"):
            # SNS asks for the topic's data keys under the topic's ARN as encryption context.
            topics = {"kms:EncryptionContext:aws:sns:topicArn": template.arn(topic_id)}
            decision = evaluate(policy, _as_cloudwatch(action, key, topics))
            assert decision.allowed, f"{topic_id}'s key refuses {action} to CloudWatch"
            CONTRACT_TABLE.append(f"hop  SNS {topic_id} -> {action} for CloudWatch: {decision.label}")
            # The same key seals header values under a job's context: CloudWatch may not open them.
            sealed = {f"kms:EncryptionContext:{SEALING_CONTEXT_KEY}": "01JD0000000000000000000000"}
            assert not evaluate(policy, _as_cloudwatch(action, key, sealed)).allowed, action
            assert not evaluate(policy, _as_cloudwatch(action, key, {})).allowed, action


def test_the_functions_use_the_stage_key_under_a_job_s_context_alone(template: Template) -> None:
    (key_id,) = template.of_type("AWS::KMS::Key")
    key = template.arn(key_id)
    topics = {"aws:SecureTransport": "true", "kms:EncryptionContext:aws:sns:topicArn": "arn:aws:sns:…"}
    sealed = {"aws:SecureTransport": "true", f"kms:EncryptionContext:{SEALING_CONTEXT_KEY}": "01JD"}
    for function, action in (("api", "kms:Encrypt"), ("worker", "kms:Decrypt")):
        statements = template.role_statements(function)
        assert evaluate(statements, Request(action, key, context=sealed)).allowed, function
        assert not evaluate(statements, Request(action, key, context=topics)).allowed, function


def test_eventbridge_may_invoke_the_scheduler(template: Template) -> None:
    ((rule_id, rule),) = template.of_type("AWS::Events::Rule").items()
    (target,) = rule["Properties"]["Targets"]
    function_id = target["Arn"]["Fn::GetAtt"][0]
    assert function_id == template.function_id("scheduler")
    request = Request(
        "lambda:InvokeFunction",
        template.arn(function_id),
        service="events.amazonaws.com",
        context={"aws:SourceArn": template.arn(rule_id), "aws:SourceAccount": ACCOUNT},
    )
    decision = evaluate(template.resource_statements(function_id), request)
    assert decision.allowed, decision.label
    CONTRACT_TABLE.append(f"hop  EventBridge {rule_id} -> lambda:InvokeFunction: {decision.label}")


def test_api_gateway_may_invoke_the_api_function_on_every_route(
    synthesised: Synthesised, template: Template
) -> None:
    function_id = template.function_id("api")
    (api_id,) = template.of_type("AWS::ApiGateway::RestApi")
    (stage,) = template.of_type("AWS::ApiGateway::Stage").values()
    synthesised_methods = _methods(synthesised)
    assert synthesised_methods
    for path, method in synthesised_methods:
        called = path.replace("{id}", "01JD0000000000000000000000").lstrip("/")
        source = (
            f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{template.resolver.name(api_id)}/"
            f"{stage['Properties']['StageName']}/{method}/{called}"
        )
        request = Request(
            "lambda:InvokeFunction",
            template.arn(function_id),
            service="apigateway.amazonaws.com",
            context={"aws:SourceArn": source, "aws:SourceAccount": ACCOUNT},
        )
        decision = evaluate(template.resource_statements(function_id), request)
        assert decision.allowed, f"{method} {path}: {decision.label}"
    CONTRACT_TABLE.append(
        f"hop  API Gateway -> lambda:InvokeFunction: {len(synthesised_methods)} routes allowed"
    )


def test_event_sources_may_read_their_queues(template: Template) -> None:
    mappings = template.of_type("AWS::Lambda::EventSourceMapping")
    assert len(mappings) == len(PRIORITIES)
    for mapping in mappings.values():
        queue_id = mapping["Properties"]["EventSourceArn"]["Fn::GetAtt"][0]
        assert mapping["Properties"]["FunctionName"] == {"Ref": template.function_id("worker")}
        for action in ESM_ACTIONS:
            request = Request(action, template.arn(queue_id))
            decision = evaluate(template.role_statements("worker"), request)
            denial = evaluate(
                [s for s in template.resource_statements(queue_id) if s.body["Effect"] == "Deny"], request
            )
            assert decision.allowed and denial.by is None, f"{queue_id}: {action}"
            CONTRACT_TABLE.append(f"hop  event source {queue_id} -> {action}: {decision.label}")


def test_functions_may_write_their_logs_and_traces(template: Template) -> None:
    for function in contract.FUNCTIONS:
        properties = template.resources[template.function_id(function)]["Properties"]
        group = template.resolver.resolve(properties["LoggingConfig"]["LogGroup"])
        stream = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{group}:log-stream:2026/12/01/[$LATEST]abc"
        statements = template.role_statements(function)
        for action, resource in (
            ("logs:CreateLogStream", stream),
            ("logs:PutLogEvents", stream),
            ("xray:PutTraceSegments", "*"),
        ):
            assert evaluate(statements, Request(action, resource)).allowed, (function, action)


def test_the_api_may_make_the_reads_of_get_stats(template: Template) -> None:
    """GET /stats's reads (sundial/shared/store/stats_reads.py, sundial/shared/service/stats.py) as IAM sees
    them; the recorded suites do not call that route, so its calls are named here."""
    table = template.arn(template.own_id(c.TABLE_NAME) or "")
    wanted = [
        Request("dynamodb:Scan", table),
        Request("dynamodb:Query", f"{table}/index/{c.DUE_INDEX_NAME}"),
        *(
            Request("sqs:GetQueueAttributes", template.arn(template.own_id(q) or ""))
            for q in c.QUEUE_NAMES.values()
        ),
    ]
    statements = template.role_statements("api")
    for request in wanted:
        decision = evaluate(statements, request)
        assert decision.allowed, f"{request.action} on {request.resource}"
        CONTRACT_TABLE.append(
            f"api       GET /stats  {request.action} on {request.resource}: {decision.label}"
        )
    dead_letter = template.arn(template.own_id(c.DEAD_LETTER_QUEUE_NAME) or "")
    assert not evaluate(statements, Request("sqs:GetQueueAttributes", dead_letter)).allowed


def test_the_http_api_may_invoke_the_api_function_on_every_route(http_api: Synthesised) -> None:
    """Under `sundial:api=http` the hop is the HTTP API's: one permission for that API, which holds
    whether its source ARN names a route as declared (`jobs/{id}`) or as called."""
    template = Template(http_api.resources)
    function_id = template.function_id("api")
    (api_id,) = template.of_type("AWS::ApiGatewayV2::Api")
    statements = template.resource_statements(function_id)

    def allowed(api: str, method: str, path: str) -> bool:
        source = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{api}/$default/{method}{path}"
        request = Request(
            "lambda:InvokeFunction",
            template.arn(function_id),
            service="apigateway.amazonaws.com",
            context={"aws:SourceArn": source, "aws:SourceAccount": ACCOUNT},
        )
        return evaluate(statements, request).allowed

    own = template.resolver.name(api_id)
    routes = [(method, path) for path, methods in ROUTES.items() for method in methods]
    for method, path in routes:
        for sent in (path, path.replace("{id}", "01JD0000000000000000000000").replace("{key+}", "a/b")):
            assert allowed(own, method, sent), f"{method} {sent}"
    assert not allowed("anotherapi", "GET", "/health")
    CONTRACT_TABLE.append(f"hop  HTTP API -> lambda:InvokeFunction: {len(routes)} routes allowed")


# The resource a caller's policy names for `execute-api:Invoke`, as docs/deploy.md gives it.
_CALLER_RESOURCE = re.compile(r"arn:aws:execute-api:<region>:<account>:<api id>/([^`\s]+)")
_API = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:a1b2c3d4e5"


@pytest.mark.parametrize("which", ["synthesised", "http_api"])
def test_the_callers_policy_docs_give_allows_every_route_of_the_stage(
    which: str, request: pytest.FixtureRequest
) -> None:
    stack: Synthesised = request.getfixturevalue(which)
    (stage,) = [
        *stack.of_type("AWS::ApiGateway::Stage").values(),
        *stack.of_type("AWS::ApiGatewayV2::Stage").values(),
    ]
    stage_name = stage["Properties"]["StageName"]
    documented = _CALLER_RESOURCE.findall((ROOT / "docs" / "deploy.md").read_text())
    (mine,) = [tail for tail in documented if tail.split("/")[0] == stage_name]
    others = [tail for tail in documented if tail != mine]
    assert others, "docs/deploy.md gives the caller's resource for one kind of API only"

    def allows(tail: str, method: str, path: str) -> bool:
        statement = Statement(
            "caller", {"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": f"{_API}/{tail}"}
        )
        called = Request("execute-api:Invoke", f"{_API}/{stage_name}/{method}{path}")
        return evaluate([statement], called).allowed

    for path, methods in ROUTES.items():
        sent = path.replace("{id}", "01JD0000000000000000000000").replace("{key+}", "a/b")
        for method in methods:
            assert allows(mine, method, sent), f"{method} {sent}"
            # The other kind's resource names another stage: it allows nothing here.
            assert not any(allows(other, method, sent) for other in others), f"{method} {sent}"


# --- the recording itself ----------------------------------------------------------------------------


def _invoke(recorder: Recorder, test: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Lambda Invoke as botocore hands it to the recorder, made by the tick's code during `test`."""
    from sundial.shared.engine import scheduler

    monkeypatch.setenv("PYTEST_CURRENT_TEST", f"{test} (call)")
    model = SimpleNamespace(name="Invoke", service_model=SimpleNamespace(service_name="lambda"))
    # A frame of the tick's source file, as its claimers' invoke has.
    call = "on_call({'FunctionName': 'sundial-scheduler'}, model, 'us-east-1')"
    source = f"def invoke(on_call, model):\n    {call}\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, scheduler.__file__ or "", "exec"), namespace)
    namespace["invoke"](recorder.on_call, model)


def test_only_the_recorded_suites_calls_count_each_with_the_first_test_that_made_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A whole run records every suite's calls: the scale model's tick invokes its claimers under a
    name no template holds, which would read as a job target the tick may not call."""
    recorder = Recorder()
    _invoke(recorder, "tests/bench/test_scale_collector.py::test_a", monkeypatch)
    assert recorder.lines() == []
    _invoke(recorder, "tests/functions/test_scheduler.py::test_b", monkeypatch)
    _invoke(recorder, "tests/adapter/test_claimers.py::test_c", monkeypatch)
    [line] = [json.loads(line) for line in recorder.lines()]
    assert (line["function"], line["operation"], line["count"]) == ("scheduler", "Invoke", 2)
    assert line["first_test"] == "tests/functions/test_scheduler.py::test_b"
