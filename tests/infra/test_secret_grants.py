"""The worker reads exactly the secrets named in `sundial:secretArns` and its stage's signing secret:
nothing wider, and no other function reads any. The key that seals inline header values is the API's
to encrypt with and the worker's to decrypt with, and nothing more."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.settings import SECRET_ARNS_KEY, Settings
from tests.infra.conftest import CONFIGURED_CONTEXT, Synthesised
from tests.infra.test_functions import _actions, _granted, _statements

pytestmark = pytest.mark.infra

SECRET_ACTIONS = ("secretsmanager:GetSecretValue", "ssm:GetParameter")


def _signing_ref(synthesised: Synthesised) -> dict[str, str]:
    (signing_id,) = synthesised.of_type("AWS::SecretsManager::Secret")
    return {"Ref": signing_id}


def _secret_statements(synthesised: Synthesised, function: str) -> list[dict[str, Any]]:
    return [
        s
        for s in _statements(synthesised, function)
        if any(a.startswith(("secretsmanager:", "ssm:", "kms:")) for a in _actions(s))
    ]


def _header_key_arn(synthesised: Synthesised) -> dict[str, Any]:
    (key_id,) = (k for k in synthesised.of_type("AWS::KMS::Key") if k.startswith("FunctionsHeaderKey"))
    return {"Fn::GetAtt": [key_id, "Arn"]}


def test_by_default_the_worker_reads_its_signing_secret_alone(synthesised: Synthesised) -> None:
    statements = _secret_statements(synthesised, "worker")

    assert _granted(statements, "secretsmanager:GetSecretValue") == [_signing_ref(synthesised)]
    assert _granted(statements, "ssm:GetParameter") == []
    assert sorted(map(sorted, (_actions(s) for s in statements))) == [
        ["kms:Decrypt"],
        ["secretsmanager:GetSecretValue"],
    ]


def test_the_api_only_encrypts_and_the_worker_only_decrypts_with_the_header_key(
    synthesised: Synthesised,
) -> None:
    key = _header_key_arn(synthesised)
    (properties,) = (
        r["Properties"]
        for k, r in synthesised.of_type("AWS::KMS::Key").items()
        if k.startswith("FunctionsHeaderKey")
    )
    assert properties["EnableKeyRotation"] is True
    on_key = {
        function: [s for s in _statements(synthesised, function) if key in _listed(s["Resource"])]
        for function in ("api", "scheduler", "worker")
    }
    assert [(_actions(s), s["Effect"]) for s in on_key["api"]] == [({"kms:Encrypt"}, "Allow")]
    assert [(_actions(s), s["Effect"]) for s in on_key["worker"]] == [({"kms:Decrypt"}, "Allow")]
    assert on_key["scheduler"] == []
    # No other KMS action for the API anywhere, and no wildcard that would take in the key.
    api_kms = [s for s in _statements(synthesised, "api") if any(a.startswith("kms:") for a in _actions(s))]
    assert api_kms == on_key["api"]
    for function in on_key:
        for statement in _statements(synthesised, function):
            assert not ({"kms:*", "*"} & _actions(statement)), function


def _listed(resource: Any) -> list[Any]:
    return resource if isinstance(resource, list) else [resource]


def test_the_worker_reads_exactly_the_secrets_in_context(configured: Synthesised) -> None:
    named = CONFIGURED_CONTEXT[SECRET_ARNS_KEY]
    configured.template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": "secretsmanager:GetSecretValue",
                                "Resource": [named[0], _signing_ref(configured)],
                            }
                        ),
                        Match.object_like({"Action": "ssm:GetParameter", "Resource": named[1]}),
                    ]
                )
            }
        },
    )
    statements = _secret_statements(configured, "worker")
    read = _granted(statements, "secretsmanager:GetSecretValue")
    assert sorted(map(str, read)) == sorted(map(str, [named[0], _signing_ref(configured)]))
    assert _granted(statements, "ssm:GetParameter") == [named[1]]
    # Nothing wider: no wildcard, no other action on a secret or a parameter.
    for statement in statements:
        assert not any(
            "*" in str(resource) for resource in statement["Resource"] if isinstance(resource, str)
        )
        assert _actions(statement) <= {*SECRET_ACTIONS, "kms:GenerateDataKey", "kms:Decrypt"}
    for function in ("api", "scheduler"):
        for action in SECRET_ACTIONS:
            assert _granted(_statements(configured, function), action) == []


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:billing/token",  # the suffix IAM matches
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:*",
        "arn:aws:ssm:us-east-1:123456789012:parameter/*",
        "arn:aws:s3:::bucket",
    ],
)
def test_a_secret_arn_that_would_grant_more_or_nothing_is_refused(arn: str) -> None:
    class Node:
        def try_get_context(self, key: str) -> Any:
            return [arn] if key == SECRET_ARNS_KEY else None

    with pytest.raises(ValueError, match=SECRET_ARNS_KEY):
        Settings.from_context(Node())  # type: ignore[arg-type]
