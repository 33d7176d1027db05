"""The one failure a delivery reports: a short reason that the run history can show as it is."""

from __future__ import annotations

from sundial.shared.constants import ERROR_TEXT_LIMIT

_ELLIPSIS = "…"


def bounded(text: str, limit: int = ERROR_TEXT_LIMIT) -> str:
    """`text` cut to at most `limit` characters, marked with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    return text[: limit - len(_ELLIPSIS)] + _ELLIPSIS


def describe(exc: BaseException) -> str:
    """`TypeName: message`, or the type name alone when the exception carries no message."""
    message = str(exc)
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


class TargetError(Exception):
    """The attempt failed; `str(exc)` says why in at most ERROR_TEXT_LIMIT characters."""

    def __init__(self, reason: str) -> None:
        self.reason = bounded(reason)
        super().__init__(self.reason)


class TargetTimedOut(TargetError):
    """The attempt ran out of its time limit before the target answered (the run is `timed_out`).

    The target may still be working on it: a timed-out call is not known to have had no effect.
    """
