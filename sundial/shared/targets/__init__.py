"""What a job runs and how an occurrence reaches it (docs/api.md, Targets).

Importing the package registers the built-in python handlers `noop` and `fail`.
"""

from __future__ import annotations

from sundial.contract.targets import (
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
from sundial.shared.targets import builtin_handlers as builtin_handlers  # registers noop and fail
from sundial.shared.targets.dispatch import AwsClients, check_target, deliver
from sundial.shared.targets.errors import TargetError, TargetTimedOut
from sundial.shared.targets.keys import DeliveryKeys
from sundial.shared.targets.models import Delivery
from sundial.shared.targets.registry import python_handler
from sundial.shared.targets.sealing import HeaderOpener
from sundial.shared.targets.secrets import SecretResolver
from sundial.shared.targets.signing import Signer
from sundial.shared.targets.timeouts import aws_client_config

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
