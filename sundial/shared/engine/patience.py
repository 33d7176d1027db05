"""Riding out AWS errors that pass with time, for writes that must not be left to a lease.

The SDK retries a throttled or failed call a few times within a second or two. A settle that still
fails after that would leave its job RUNNING until the lease ends, and the tick would then record
the attempt as lost and run the occurrence again, though its target was called and answered. So the
worker keeps trying the same write for as long as its invocation can spare: every write it repeats
is conditional and recognises itself when an earlier try was applied with its answer lost.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from sundial.shared.clock import Clock

logger = logging.getLogger(__name__)
T = TypeVar("T")
SECOND_MS = 1000
FIRST_WAIT_SECONDS = 0.2
LONGEST_WAIT_SECONDS = 5.0
# Error codes that say "not now, and nothing was written": a throttled request was refused whole.
THROTTLE_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
    }
)
# Error codes that say "not now" rather than "never": throttles, conflicts, and AWS's own faults.
PASSING_CODES = THROTTLE_CODES | frozenset(
    {
        "TransactionConflictException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)


def throttled(error: Exception) -> bool:
    """Whether AWS refused the request whole for its rate: nothing it asked for was done."""
    return isinstance(error, ClientError) and error_code(error) in THROTTLE_CODES


def passes_with_time(error: Exception) -> bool:
    """True for an error a later try of the same call may not meet: a throttle, a conflict, a 5xx,
    or no answer at all. A refused request (bad input, access denied) fails the same way again."""
    if isinstance(error, BotoCoreError):
        return True
    if not isinstance(error, ClientError):
        return False
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return error_code(error) in PASSING_CODES or status >= 500


@dataclass(frozen=True)
class Patience:
    """Tries a call again after a passing error, with full-jitter backoff, until `until_ms`."""

    clock: Clock
    sleep: Callable[[float], None]
    until_ms: int
    jitter: Callable[[], float] = field(default=random.random)

    def call(self, attempt: Callable[[], T], what: str) -> T:
        tries = 0
        while True:
            try:
                return attempt()
            except (ClientError, BotoCoreError) as error:
                wait = min(LONGEST_WAIT_SECONDS, FIRST_WAIT_SECONDS * 2**tries) * self.jitter()
                if not passes_with_time(error) or self.clock.now_ms() + wait * SECOND_MS >= self.until_ms:
                    raise
                logger.warning("%s failed (%s); trying again in %.2f s", what, error_code(error), wait)
                self.sleep(wait)
                tries += 1


def error_code(error: Exception) -> str:
    """An AWS error's code, or the exception's type when AWS gave none."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code") or type(error).__name__)
    return type(error).__name__
