"""Domain errors. Each maps to one HTTP status in the API; none carries a stack trace to the user."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sundial.shared.models import Job


class SundialError(Exception):
    """Base of every error a caller of sundial/shared/ is expected to handle."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidInput(SundialError):
    """The caller sent something malformed: a bad schedule, time zone, target or size (HTTP 400)."""


class PayloadTooLarge(InvalidInput):
    """The payload exceeds its limit (HTTP 413)."""


class JobNotFound(SundialError):
    """No job with that id (HTTP 404)."""


class Conflict(SundialError):
    """The job is not in a state that allows the call (HTTP 409)."""


class LimitNotFound(SundialError):
    """No limit for that key (HTTP 404)."""


class LimitChanged(SundialError):
    """A key's shard changed between its read and a write that relied on it: read it again."""


class StaleDelivery(SundialError):
    """A condition on status and attempt token failed: a duplicate, stale or zombie actor lost the race.

    `current` is the job as the failed write found it (None when there is no such job): the caller
    tells a zombie from a user action by it, and decides again.
    """

    def __init__(self, message: str, current: Job | None = None) -> None:
        super().__init__(message)
        self.current = current
