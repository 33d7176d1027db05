"""What the worker may call: the job targets allowed by the `sundial:targetArns` context list, and
the secrets that http targets' headers refer to, allowed by `sundial:secretArns`.

Nothing is allowed by default, so a fresh deploy can reach no Lambda, queue, topic, event bus or
secret of the account until its owner names them. `http` and `python` targets need no IAM permission.
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.nag import acknowledge

# What the worker calls for each target type besides Lambda (sundial/shared/targets/aws_delivery.py).
_TARGET_ACTIONS = {"sqs": "sqs:SendMessage", "sns": "sns:Publish", "events": "events:PutEvents"}


def grant_targets(scope: Construct, role: iam.Role, arns: Iterable[str]) -> None:
    """Raises ValueError for an ARN of a service that no target type calls."""
    for index, arn in enumerate(arns):
        _grant(scope, f"Target{index}", role, arn)
        if "*" in arn:
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::{arn}]",
                "A wildcard the deployer wrote in sundial:targetArns to allow a family of targets.",
            )


def _grant(scope: Construct, construct_id: str, role: iam.Role, arn: str) -> None:
    parts = arn.split(":")
    service = parts[2] if len(parts) > 5 and parts[0] == "arn" else None
    if service == "lambda":
        # Identity-side grant only: a same-account function needs nothing more, and a function of
        # another account must name the worker's role in its own resource policy anyway.
        target = lambda_.Function.from_function_attributes(
            scope, construct_id, function_arn=arn, skip_permissions=True
        )
        target.grant_invoke(role)
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::{arn}:*]",
            "Lets a lambda target name a version or alias of a function the deployer allowed; "
            "the function itself is named exactly.",
        )
    elif service in _TARGET_ACTIONS:
        # The one action each target type calls: a grant helper (grant_send_messages) would add
        # GetQueueUrl and GetQueueAttributes, which the worker never calls.
        iam.Grant.add_to_principal(grantee=role, actions=[_TARGET_ACTIONS[service]], resource_arns=[arn])
    else:
        raise ValueError(
            f"context sundial:targetArns: {arn!r} is not a Lambda function, SQS queue, SNS topic "
            "or EventBridge event bus ARN"
        )


def grant_target_keys(role: iam.Role, key_arns: Iterable[str]) -> None:
    """Lets the worker call targets encrypted with these customer managed keys.

    A queue or topic with a customer managed key needs the sender to generate a data key and to
    decrypt with it (an event bus with one, likewise); an AWS managed key needs nothing. The key's own
    policy must allow it too: a key of this account that trusts its IAM policies does.
    """
    arns = list(key_arns)
    if arns:
        iam.Grant.add_to_principal(
            grantee=role, actions=["kms:GenerateDataKey", "kms:Decrypt"], resource_arns=arns
        )


def grant_secrets(role: iam.Role, arns: Iterable[str]) -> None:
    """Lets the worker read exactly these secrets and parameters (docs/operations.md).

    A SecureString under a customer managed key needs kms:Decrypt on it too: name the key in
    `sundial:targetKmsKeyArns`. The AWS managed keys need nothing.
    """
    named = list(arns)
    secrets = [arn for arn in named if arn.split(":")[2] == "secretsmanager"]
    parameters = [arn for arn in named if arn.split(":")[2] == "ssm"]
    if secrets:
        iam.Grant.add_to_principal(
            grantee=role, actions=["secretsmanager:GetSecretValue"], resource_arns=secrets
        )
    if parameters:
        iam.Grant.add_to_principal(grantee=role, actions=["ssm:GetParameter"], resource_arns=parameters)
