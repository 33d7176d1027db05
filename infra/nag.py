"""cdk-nag findings acknowledged next to the construct that causes them, each with its reason."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledges one AwsSolutions rule (or one finding, `Rule[Finding]`) on `scope` and its children."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
