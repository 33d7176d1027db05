"""The IAM contract: recorded AWS calls, and the service-to-service hops, held against the template.

A recorded call becomes the IAM requests AWS would authorise for it (SendMessageBatch is
sqs:SendMessage, a transaction's Update is dynamodb:UpdateItem, ...), on the ARN its resource has
in the template. The emulator's names (`t7-sundial-jobs`) are Sundial's own resources under a test
prefix; any other resource is a job target, which the worker may call once a deployer names it in
`sundial:targetArns`: it is checked as the configured target of its service (`TARGET_STAND_INS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sundial.shared import constants as c
from tests.infra.policies import Request, Resolver, Statement

FUNCTIONS = {"api": "FunctionsApi", "scheduler": "FunctionsScheduler", "worker": "FunctionsWorker"}
_OWN_QUEUES = {c.DEAD_LETTER_QUEUE_NAME, *c.QUEUE_NAMES.values()}
TARGET = "(a job target)"
SIGNING = "(the signing secret)"
# The key that seals inline header values: the functions' only KMS calls (Encrypt, Decrypt).
HEADER_KEY = "FunctionsHeaderKey"
# Batch and transaction operations are authorised as the single-item action.
_ACTION_OF = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
    "Invoke": "InvokeFunction",
}
_POLICY_OF = {
    "AWS::SNS::Topic": ("AWS::SNS::TopicPolicy", "Topics"),
    "AWS::SQS::Queue": ("AWS::SQS::QueuePolicy", "Queues"),
}
_TRANSACTION_ACTION = {
    "Update": "UpdateItem",
    "Put": "PutItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


@dataclass(frozen=True)
class Call:
    function: str
    service: str
    operation: str
    params: Mapping[str, Any]
    # The first test that made this kind of call, to trace a refused one (not part of its key).
    first_test: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        return json.dumps([self.function, self.service, self.operation, self.params], sort_keys=True)


def load_calls(lines: Iterable[str]) -> tuple[dict[str, tuple[Call, int]], int]:
    """Distinct attributed calls with their counts, and how many calls no function made."""
    calls: dict[str, tuple[Call, int]] = {}
    unattributed = 0
    for line in lines:
        raw = json.loads(line)
        if raw["function"] is None:
            unattributed += raw.get("count", 1)
            continue
        call = Call(
            raw["function"],
            raw["service"],
            raw["operation"],
            _normalised(raw["params"]),
            raw.get("first_test", ""),
        )
        seen, count = calls.get(call.key, (call, 0))
        calls[call.key] = (seen, count + raw.get("count", 1))
    return calls, unattributed


def _own(name: str, own_names: Iterable[str]) -> str | None:
    """The local stack's name that `name` is, under whatever prefix a test gave it."""
    return next((own for own in own_names if name.endswith(own)), None)


def _normalised(params: dict[str, Any]) -> dict[str, Any]:
    """Test prefixes off, and target names generalised, so that one row stands for many calls."""
    out = dict(params)
    if "TableName" in out:
        out["TableName"] = _own(out["TableName"], [c.TABLE_NAME]) or out["TableName"]
    if "Tables" in out:
        out["Tables"] = [_own(t, [c.TABLE_NAME]) or t for t in out["Tables"]]
    if "TransactItems" in out:
        out["TransactItems"] = sorted({(k, _own(t, [c.TABLE_NAME]) or t) for k, t in out["TransactItems"]})
    if "QueueUrl" in out:
        name = out["QueueUrl"].rstrip("/").rsplit("/", 1)[-1]
        out["QueueUrl"] = _own(name, _OWN_QUEUES) or TARGET
    if "SecretId" in out:
        # The stage's signing secret (under a test prefix, with the suffix Secrets Manager adds), or
        # a secret a header refers to.
        name = re.sub(r"-[A-Za-z0-9]{6}$", "", str(out["SecretId"]).rsplit(":", 1)[-1])
        out["SecretId"] = SIGNING if name.endswith(c.SIGNING_SECRET_NAME) else TARGET
    if "Name" in out:
        out["Name"] = TARGET
    # Targets: one row per kind of call, not per random name the tests gave their targets.
    for key in ("FunctionName", "TopicArn", "TargetArn", "EventBusNames"):
        out.pop(key, None)
    return out


class Template:
    """One synthesised template, resolved for ACCOUNT and REGION, Sundial's own resources given the
    local stack's names so that the emulator's calls land on them."""

    def __init__(self, resources: Mapping[str, Mapping[str, Any]]) -> None:
        self.resources = resources
        self.own = own_resources(resources)
        self.resolver = Resolver(resources, self.own)

    def of_type(self, kind: str) -> dict[str, Mapping[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == kind}

    def function_id(self, function: str) -> str:
        (found,) = (k for k in self.of_type("AWS::Lambda::Function") if k.startswith(FUNCTIONS[function]))
        return found

    def role_statements(self, function: str) -> list[Statement]:
        role = self.resources[self.function_id(function)]["Properties"]["Role"]["Fn::GetAtt"][0]
        statements = []
        for policy_id, policy in self.of_type("AWS::IAM::Policy").items():
            if {"Ref": role} in policy["Properties"]["Roles"]:
                document = self.resolver.resolve(policy["Properties"]["PolicyDocument"])
                for n, body in enumerate(document["Statement"]):
                    statements.append(Statement(f"{policy_id}#{n}", body))
        return statements

    def resource_statements(self, logical_id: str) -> list[Statement]:
        """The resource policy of a topic, queue, key or function (its Lambda permissions)."""
        kind = self.resources[logical_id]["Type"]
        if kind == "AWS::KMS::Key":
            document = self.resolver.resolve(self.resources[logical_id]["Properties"]["KeyPolicy"])
            return [Statement(f"{logical_id} key policy#{n}", b) for n, b in enumerate(document["Statement"])]
        if kind == "AWS::Lambda::Function":
            return list(self._permissions(logical_id))
        if kind not in _POLICY_OF:  # a DynamoDB table here has no resource policy
            return []
        policy_type, attached = _POLICY_OF[kind]
        statements = []
        for policy_id, policy in self.of_type(policy_type).items():
            if {"Ref": logical_id} in policy["Properties"][attached]:
                document = self.resolver.resolve(policy["Properties"]["PolicyDocument"])
                statements += [Statement(f"{policy_id}#{n}", b) for n, b in enumerate(document["Statement"])]
        return statements

    def _permissions(self, function_id: str) -> Iterator[Statement]:
        arn = self.resolver.attribute(function_id, "Arn")
        for permission_id, permission in self.of_type("AWS::Lambda::Permission").items():
            properties = self.resolver.resolve(permission["Properties"])
            if properties["FunctionName"] not in (arn, self.resolver.name(function_id)):
                continue
            conditions: dict[str, dict[str, str]] = {}
            if "SourceArn" in properties:
                conditions["ArnLike"] = {"aws:SourceArn": properties["SourceArn"]}
            if "SourceAccount" in properties:
                conditions["StringEquals"] = {"aws:SourceAccount": properties["SourceAccount"]}
            yield Statement(
                permission_id,
                {
                    "Effect": "Allow",
                    "Principal": {"Service": properties["Principal"]},
                    "Action": properties["Action"],
                    "Resource": [arn, f"{arn}:*"],
                    "Condition": conditions,
                },
            )

    def arn(self, logical_id: str) -> str:
        return self.resolver.attribute(logical_id, "Arn")

    def own_id(self, name: str) -> str | None:
        return next((logical_id for logical_id, own in self.own.items() if own == name), None)


def own_resources(resources: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Logical id -> the local stack's name (shared.constants) for the table and the queues."""
    prefixes = {
        ("AWS::DynamoDB::Table", "JobsTable"): c.TABLE_NAME,
        ("AWS::SQS::Queue", "QueuesDead"): c.DEAD_LETTER_QUEUE_NAME,
        **{("AWS::SQS::Queue", f"Queues{p.value.capitalize()}"): c.QUEUE_NAMES[p] for p in c.PRIORITIES},
    }
    own = {}
    for logical_id, resource in resources.items():
        for (kind, prefix), name in prefixes.items():
            if resource["Type"] == kind and logical_id.startswith(prefix):
                own[logical_id] = name
    assert sorted(own.values()) == sorted(prefixes.values()), own
    return own


def requests(call: Call, template: Template, stand_ins: Mapping[str, str]) -> list[tuple[Request, str]]:
    """The IAM requests a call makes, each with the logical id of a Sundial resource it is on (for its
    resource policy) or "" for a target."""
    service, params = call.service, call.params
    action = f"{service}:{_ACTION_OF.get(call.operation, call.operation)}"
    if service == "dynamodb":
        return list(_table_requests(call, template))
    if service == "sqs":
        if params["QueueUrl"] == TARGET:
            return [(Request(action, stand_ins["sqs"]), "")]
        own = template.own_id(params["QueueUrl"])
        assert own is not None, params
        return [(Request(action, template.arn(own)), own)]
    if service == "lambda":
        qualifier = params.get("Qualifier")
        return [(Request(action, stand_ins["lambda"] + (f":{qualifier}" if qualifier else "")), "")]
    if service in ("sns", "events"):
        return [(Request(action, stand_ins[service]), "")]
    if service == "secretsmanager" and params["SecretId"] == SIGNING:
        (signing,) = template.of_type("AWS::SecretsManager::Secret")
        return [(Request(action, template.resolver.ref(signing)), signing)]
    if service in ("secretsmanager", "ssm"):
        return [(Request(action, stand_ins[service]), "")]
    if service == "kms":
        # Decrypt names no key (the ciphertext does); the local stack has one key, the stage's.
        (key,) = (k for k in template.of_type("AWS::KMS::Key") if k.startswith(HEADER_KEY))
        sealed_under = params.get("EncryptionContextKeys", ())
        context = {f"kms:EncryptionContext:{k}": "recorded" for k in sealed_under}
        context["aws:SecureTransport"] = "true"
        return [(Request(action, template.arn(key), context=context), key)]
    raise ValueError(f"no IAM mapping for {service}:{call.operation}")


def _table_requests(call: Call, template: Template) -> Iterable[tuple[Request, str]]:
    params = call.params
    if call.operation == "TransactWriteItems":
        for kind, table in params["TransactItems"]:
            yield _on_table(f"dynamodb:{_TRANSACTION_ACTION[kind]}", table, None, template)
    elif call.operation == "BatchGetItem":
        for table in params["Tables"]:
            yield _on_table("dynamodb:BatchGetItem", table, None, template)
    else:
        yield _on_table(f"dynamodb:{call.operation}", params["TableName"], params.get("IndexName"), template)


def _on_table(action: str, table: str, index: str | None, template: Template) -> tuple[Request, str]:
    own = template.own_id(table)
    assert own is not None, f"a call on table {table}, which is not Sundial's"
    arn = template.arn(own)
    return Request(action, f"{arn}/index/{index}" if index else arn), own
