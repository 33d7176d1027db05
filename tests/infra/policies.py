"""IAM policy evaluation over a synthesised template, enough for what Sundial's template holds.

The template's intrinsics are resolved for one made-up account and region, with every resource given
a concrete name; then a request (principal, action, resource, context) is evaluated as IAM does for
one account: an explicit Deny wins, else an Allow grants, else it is denied. Condition operators
this module does not know raise instead of guessing.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"

# How CloudFormation answers Ref and Fn::GetAtt for the resource types the template uses.
_ARNS = {
    "AWS::DynamoDB::Table": "arn:aws:dynamodb:{r}:{a}:table/{n}",
    "AWS::SQS::Queue": "arn:aws:sqs:{r}:{a}:{n}",
    "AWS::SNS::Topic": "arn:aws:sns:{r}:{a}:{n}",
    "AWS::KMS::Key": "arn:aws:kms:{r}:{a}:key/{n}",
    "AWS::Lambda::Function": "arn:aws:lambda:{r}:{a}:function:{n}",
    "AWS::Logs::LogGroup": "arn:aws:logs:{r}:{a}:log-group:{n}:*",
    "AWS::CloudWatch::Alarm": "arn:aws:cloudwatch:{r}:{a}:alarm:{n}",
    "AWS::Events::Rule": "arn:aws:events:{r}:{a}:rule/{n}",
    "AWS::IAM::Role": "arn:aws:iam::{a}:role/{n}",
    "AWS::SecretsManager::Secret": "arn:aws:secretsmanager:{r}:{a}:secret:{n}-AbCdEf",
}
_REF_IS_ARN = {"AWS::SNS::Topic", "AWS::SecretsManager::Secret"}
_NAME_PROPERTIES = (
    "TableName",
    "QueueName",
    "TopicName",
    "FunctionName",
    "LogGroupName",
    "AlarmName",
    "StageName",
)


class Resolver:
    """Concrete values for a template's intrinsics; `names` overrides generated physical names."""

    def __init__(self, resources: Mapping[str, Mapping[str, Any]], names: Mapping[str, str]) -> None:
        self._resources = resources
        self._names = names

    def name(self, logical_id: str) -> str:
        if logical_id in self._names:
            return self._names[logical_id]
        properties = self._resources[logical_id].get("Properties", {})
        for key in _NAME_PROPERTIES:
            if key in properties:
                return str(self.resolve(properties[key]))
        return logical_id.lower()

    def ref(self, logical_id: str) -> str:
        pseudo = {
            "AWS::AccountId": ACCOUNT,
            "AWS::Region": REGION,
            "AWS::Partition": PARTITION,
            "AWS::URLSuffix": "amazonaws.com",
        }
        if logical_id in pseudo:
            return pseudo[logical_id]
        kind = self._resources[logical_id]["Type"]
        if kind in _REF_IS_ARN:
            return self.attribute(logical_id, "Arn")
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{self.name(logical_id)}"
        return self.name(logical_id)

    def attribute(self, logical_id: str, attribute: str) -> str:
        kind = self._resources[logical_id]["Type"]
        if attribute in ("Arn", "TopicArn") and kind in _ARNS:
            return _ARNS[kind].format(r=REGION, a=ACCOUNT, n=self.name(logical_id))
        if attribute in ("QueueName", "TopicName"):
            return self.name(logical_id)
        if attribute == "QueueUrl":
            return self.ref(logical_id)
        if attribute == "RootResourceId":
            return f"{logical_id}-root"
        raise KeyError(f"no value for {logical_id}.{attribute} ({kind})")

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Ref", "Fn::")):
            return {k: self.resolve(v) for k, v in value.items()}
        ((function, argument),) = value.items()
        if function == "Ref":
            return self.ref(argument)
        if function == "Fn::GetAtt":
            return self.attribute(argument[0], argument[1])
        if function == "Fn::Join":
            return str(argument[0]).join(str(self.resolve(v)) for v in argument[1])
        if function == "Fn::Select":
            return self.resolve(argument[1])[int(argument[0])]
        if function == "Fn::Split":
            return str(self.resolve(argument[1])).split(argument[0])
        raise KeyError(f"intrinsic {function} is not resolved here")


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    # Who asks: a service principal for a resource policy; None for a role's own call.
    service: str | None = None
    context: Mapping[str, str] = field(default_factory=lambda: {"aws:SecureTransport": "true"})


@dataclass(frozen=True)
class Statement:
    where: str  # e.g. "FunctionsWorkerRoleDefaultPolicy#2" or "FunctionsHeaderKey key policy#3"
    body: Mapping[str, Any]

    @property
    def label(self) -> str:
        sid = self.body.get("Sid")
        return f"{self.where}{f' ({sid})' if sid else ''}"


@dataclass(frozen=True)
class Decision:
    allowed: bool
    by: Statement | None  # the Deny that forbids, or the first Allow that grants
    note: str = ""

    @property
    def label(self) -> str:
        return self.note + (self.by.label if self.by else "no statement")


def evaluate(statements: Iterable[Statement], request: Request) -> Decision:
    allow: Statement | None = None
    for statement in statements:
        if not _applies(statement.body, request):
            continue
        if statement.body["Effect"] == "Deny":
            return Decision(False, statement)
        allow = allow or statement
    return Decision(allow is not None, allow)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _applies(body: Mapping[str, Any], request: Request) -> bool:
    return (
        _matches_any(body.get("Action"), body.get("NotAction"), request.action, ignore_case=True)
        and _matches_any(body.get("Resource", "*"), body.get("NotResource"), request.resource)
        and _principal_matches(body.get("Principal"), request.service)
        and _conditions_hold(body.get("Condition", {}), request.context)
    )


def _matches_any(patterns: Any, not_patterns: Any, value: str, *, ignore_case: bool = False) -> bool:
    if not_patterns is not None:
        return not any(_like(p, value, ignore_case) for p in _as_list(not_patterns))
    return patterns is not None and any(_like(p, value, ignore_case) for p in _as_list(patterns))


def _like(pattern: str, value: str, ignore_case: bool = False) -> bool:
    # IAM's wildcards are * and ?, nothing else: escape [ ] so fnmatch takes them literally.
    escaped = re.sub(r"([\[\]])", r"[\1]", pattern)
    if ignore_case:
        return fnmatch.fnmatchcase(value.lower(), escaped.lower())
    return fnmatch.fnmatchcase(value, escaped)


def _principal_matches(principal: Any, service: str | None) -> bool:
    if principal is None:  # an identity policy: it speaks for its role
        return service is None
    if principal == "*":
        return True
    if service is None:
        # A resource policy naming principals; the role's own calls are granted by its identity
        # policies, and only a Deny (Principal "*") in a resource policy concerns them here.
        return False
    return service in _as_list(principal.get("Service", []))


_OPERATORS: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda v, p: v == p,
    "StringLike": lambda v, p: _like(p, v),
    "ArnEquals": lambda v, p: v == p,
    "ArnLike": lambda v, p: _like(p, v),
    "Bool": lambda v, p: v.lower() == str(p).lower(),
}


def _conditions_hold(conditions: Mapping[str, Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    for operator, tests in conditions.items():
        if operator not in _OPERATORS:
            raise ValueError(f"condition operator {operator} is not evaluated here")
        compare = _OPERATORS[operator]
        for key, expected in tests.items():
            value = context.get(key)
            if value is None or not any(compare(value, str(p)) for p in _as_list(expected)):
                return False
    return True
