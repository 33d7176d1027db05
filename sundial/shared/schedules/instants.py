"""RFC 3339 instants from users (run_at, start_at, end_at, a preview's after) as UTC epoch ms, and the
range every instant Sundial keeps or reaches lies in."""

from __future__ import annotations

from datetime import datetime, timedelta

from sundial.shared.errors import InvalidInput
from sundial.shared.schedules.messages import shown

_EPOCH = datetime(1970, 1, 1)
_MILLISECOND = timedelta(milliseconds=1)


def parse_instant(text: str, field: str = "run_at") -> int:
    """Epoch milliseconds of an RFC 3339 timestamp with an offset ("Z" or "+01:00").

    Raises InvalidInput naming `field` when the text is not such a timestamp: a local time without
    an offset could mean any instant, so it is refused rather than guessed.
    """
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise _invalid(text, field) from None
    offset = moment.utcoffset()
    if offset is None:
        raise _invalid(text, field)
    return (moment.replace(tzinfo=None) - offset - _EPOCH) // _MILLISECOND


def _invalid(text: str, field: str) -> InvalidInput:
    return InvalidInput(
        f"{field} '{shown(text)}' is not an RFC 3339 timestamp with an offset, such as 2026-12-01T09:00:00Z",
        field=field,
    )
