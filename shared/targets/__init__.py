"""What a job runs and how an occurrence reaches it (docs/api.md, Targets).

Importing the package registers the built-in python handlers `noop` and `fail`.
"""

from __future__ import annotations

from shared.targets import builtin_handlers as builtin_handlers  # registers noop and fail
from shared.targets.dispatch import AwsClients, check_target, deliver
from shared.targets.errors import TargetError, TargetTimedOut
from shared.targets.keys import DeliveryKeys
from shared.targets.models import (
    Delivery,
    EventBridgeTarget,
    HttpTarget,
    LambdaTarget,
    PythonTarget,
    Sealed,
    SecretRef,
    SnsTarget,
    SqsTarget,
    Target,
)
from shared.targets.registry import python_handler
from shared.targets.sealing import HeaderOpener
from shared.targets.secrets import SecretResolver
from shared.targets.signing import Signer
from shared.targets.timeouts import aws_client_config

__all__ = [
    "AwsClients",
    "Delivery",
    "DeliveryKeys",
    "EventBridgeTarget",
    "HeaderOpener",
    "HttpTarget",
    "LambdaTarget",
    "PythonTarget",
    "Sealed",
    "SecretRef",
    "SecretResolver",
    "Signer",
    "SnsTarget",
    "SqsTarget",
    "Target",
    "TargetError",
    "TargetTimedOut",
    "aws_client_config",
    "check_target",
    "deliver",
    "python_handler",
]
