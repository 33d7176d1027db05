"""The bounds the HTTP API holds every request to (docs/api.md), in one place for the service, the
client's own checks and the OpenAPI document."""

from __future__ import annotations

from typing import Final

# The worker gets Lambda's longest invocation; one job's attempt runs inside it.
WORKER_FUNCTION_TIMEOUT_SECONDS: Final = 900
# How early a message may arrive and still be held for its instant (the wait comes out of the
# invocation), and what an invocation keeps after an attempt's limit to settle it, send what follows
# and write history.
MAX_EARLY_WAIT_SECONDS: Final = 3
SETTLE_HEADROOM_SECONDS: Final = 30
# The longest attempt the worker can honour in full: a longer timeout would be cut to this, so the
# API refuses it rather than accept a limit it cannot keep.
LONGEST_TIMEOUT_SECONDS: Final = (
    WORKER_FUNCTION_TIMEOUT_SECONDS - MAX_EARLY_WAIT_SECONDS - SETTLE_HEADROOM_SECONDS
)
# The longest on_failure_streak the API takes (docs/api.md, "Alert route").
MAX_FAILURE_STREAK: Final = 1000
DEFAULT_BACKOFF: Final = (5, 30, 120, 600, 3600)
MAX_WINDOW_SECONDS: Final = 3600
# A name filter's index key: the first characters of the case-folded name.
NAME_KEY_CHARS: Final = 3
NAME_FILTER_LIMIT: Final = 200
BATCH_LIMIT: Final = 100
IDS_LIMIT: Final = 1000
IDEMPOTENCY_KEY_MEMBER: Final = "idempotency_key"

# From the epoch to the end of 9999-12-30 UTC: such an instant is a four-digit year in every time
# zone (offsets reach 14 hours), so it renders as RFC 3339 and converts to a local time anywhere.
EARLIEST_MS: Final = 0
LATEST_MS: Final = 253_402_214_400_000 - 1  # 9999-12-30T23:59:59.999Z
RANGE_TEXT: Final = "1970-01-01T00:00:00Z and 9999-12-30T23:59:59.999Z"


def in_range(epoch_ms: int) -> bool:
    return EARLIEST_MS <= epoch_ms <= LATEST_MS


# Limits per key (docs/api.md, "Limits").
LIMIT_KEY_PATTERN: Final = r"^[A-Za-z0-9._:/-]{1,128}$"
MAX_LIMIT_CONCURRENT: Final = 10_000
MIN_LIMIT_PER_SECOND: Final = 0.01
MAX_LIMIT_PER_SECOND: Final = 10_000
