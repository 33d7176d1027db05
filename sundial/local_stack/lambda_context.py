"""A stand-in for the context object Lambda passes to a handler.

Powertools reads the function's name, ARN, memory and request id from it, and the scheduler asks it
how much time is left, so the local stack hands each invocation one with a real deadline.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from sundial.contract.bounds import WORKER_FUNCTION_TIMEOUT_SECONDS
from sundial.shared import constants as c

ACCOUNT_ID = "123456789012"  # the emulator's default account
# The same limits as the deployed functions (infra/functions.py), so a handler sees the same deadline.
API_TIMEOUT_SECONDS = 29
FUNCTION_TIMEOUTS = {
    "api": API_TIMEOUT_SECONDS,
    "scheduler": c.TICK_SECONDS,
    "worker": WORKER_FUNCTION_TIMEOUT_SECONDS,
}
MEMORY_MB = 512


@dataclass(frozen=True)
class LambdaContext:
    function_name: str
    invoked_function_arn: str
    timeout_seconds: int
    memory_limit_in_mb: int = MEMORY_MB
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.monotonic)

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"local/{self.aws_request_id}"

    def get_remaining_time_in_millis(self) -> int:
        elapsed = time.monotonic() - self.started
        return max(0, int((self.timeout_seconds - elapsed) * 1000))


def new_context(function: str, region: str) -> LambdaContext:
    """A fresh context for one invocation of `function` ("api", "scheduler" or "worker")."""
    name = f"sundial-{function}"
    return LambdaContext(
        function_name=name,
        invoked_function_arn=f"arn:aws:lambda:{region}:{ACCOUNT_ID}:function:{name}",
        timeout_seconds=FUNCTION_TIMEOUTS[function],
    )
