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
    from shared.constants import Priority

    settings = _settings({})
    assert dict(settings.max_concurrency) == {Priority.HIGH: 50, Priority.MEDIUM: 20, Priority.LOW: 5}
    assert settings.target_arns == ()
    assert settings.alarm_email is None
    assert settings.scheduler_reserved_concurrency == 2


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
