"""How long an AWS target's call may take: connect and read timeouts and SDK retries that together
fit inside the attempt's limit (docs/api.md: `timeout_seconds` is one attempt's limit).

Limits are first put on a grid at or below them, so a caller can keep one client per service and
grid value instead of building one per attempt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from botocore.config import Config

from sundial.shared.targets.errors import TargetTimedOut

# Below this no AWS call can be made and answered; the attempt has timed out before it starts.
MIN_CALL_SECONDS = 0.1
_CONNECT_CAP_SECONDS = 2.0
# A send is answered in milliseconds; waiting longer for one answer is worse than asking again.
_SEND_READ_CAP_SECONDS = 5.0
_SEND_ATTEMPTS = 3
# Retrying is worth it only when each attempt still gets this long.
_MIN_ATTEMPT_SECONDS = 1.0
# botocore's standard mode: a throttled retry waits up to 2**(n-1) s, at most 20 s, plus up to 5 s
# more when the answer carries x-amz-retry-after.
_BACKOFF_CAP_SECONDS = 20.0
_RETRY_AFTER_EXTRA_SECONDS = 5.0


@dataclass(frozen=True)
class CallLimits:
    connect_seconds: float
    read_seconds: float
    attempts: int


def timeout_bucket(seconds: float) -> float:
    """`seconds` rounded down to whole seconds (tenths below one second).

    Raises TargetTimedOut when less than MIN_CALL_SECONDS is left.
    """
    if seconds < MIN_CALL_SECONDS:
        raise TargetTimedOut(f"timed out: a limit of {max(seconds, 0):g} s leaves no time for an AWS call")
    if seconds >= 1:
        return float(math.floor(seconds))
    # The epsilon keeps 0.3 from flooring to 0.2 through 0.3 * 10 == 2.9999999999999996.
    return math.floor(seconds * 10 + 1e-9) / 10


def call_limits(service: str, timeout_seconds: float) -> CallLimits:
    """Timeouts and attempts for one call to `service` that end within `timeout_seconds`.

    Lambda's Invoke gets one attempt that may wait nearly the whole limit: the function may run
    that long, and a retried Invoke runs the function again. Other services get short reads and
    as many attempts (at most three) as fit with their backoff.
    """
    if service == "lambda":
        return _attempt_limits(timeout_seconds, read_cap=math.inf, attempts=1)
    for attempts in range(_SEND_ATTEMPTS, 1, -1):
        share = (timeout_seconds - _worst_backoff(attempts)) / attempts
        if share >= _MIN_ATTEMPT_SECONDS:
            return _attempt_limits(share, read_cap=_SEND_READ_CAP_SECONDS, attempts=attempts)
    return _attempt_limits(timeout_seconds, read_cap=_SEND_READ_CAP_SECONDS, attempts=1)


def aws_client_config(service: str, timeout_seconds: float) -> Config:
    """The botocore Config for a target's client of `service` under `timeout_seconds` (see call_limits)."""
    limits = call_limits(service, timeout_seconds)
    return Config(
        connect_timeout=limits.connect_seconds,
        read_timeout=limits.read_seconds,
        retries={"mode": "standard", "total_max_attempts": limits.attempts},
    )


def _attempt_limits(share: float, *, read_cap: float, attempts: int) -> CallLimits:
    connect = min(_CONNECT_CAP_SECONDS, share / 4)
    return CallLimits(connect, min(read_cap, share - connect), attempts)


def _worst_backoff(attempts: int) -> float:
    return sum(
        min(2.0**retry, _BACKOFF_CAP_SECONDS) + _RETRY_AFTER_EXTRA_SECONDS for retry in range(attempts - 1)
    )
