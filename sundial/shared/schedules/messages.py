"""Helpers for the messages of InvalidInput: short, quoted, naming what the user wrote."""

from __future__ import annotations

from sundial.shared.errors import InvalidInput

_MAX_SHOWN = 80


def shown(text: str) -> str:
    """The user's text as it appears in a message, cut short so a huge input cannot flood a response."""
    if len(text) <= _MAX_SHOWN:
        return text
    return text[: _MAX_SHOWN - 3] + "..."


def bad_schedule(message: str) -> InvalidInput:
    return InvalidInput(message, field="schedule")
