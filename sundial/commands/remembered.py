"""`--in` under an `--idempotency-key`: the instant the key's first use gave, so that running the same
command again replays the create instead of sending a new `run_at` (which the API answers with 409).

The instants are kept in `$XDG_STATE_HOME/sundial/idempotency.json` (default `~/.local/state`), per API
and key, for as long as the API remembers a key (docs/api.md): after that a key makes a new job, so
its instant is reckoned afresh too.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, TypeAdapter, ValidationError

from sundial.commands.spec import duration

# How long the API answers a replay of a create's key.
KEY_LIFETIME = timedelta(hours=24)
FILE_NAME = "idempotency.json"


class Remembered(BaseModel):
    run_in: str
    run_at: datetime
    first_used: datetime


_FILE = TypeAdapter(dict[str, Remembered])


def state_file(environ: Mapping[str, str] = os.environ) -> Path:
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "sundial" / FILE_NAME


def run_at_for_key(api: str, key: str, run_in: str, now: datetime, path: Path) -> datetime:
    """The instant `run_in` gave at the key's first use, or now plus `run_in`, kept for the next use.
    A different `run_in` under the same key is reckoned afresh: its body differs anyway (409)."""
    name = f"{api} {key}"
    kept = {known: entry for known, entry in _read(path).items() if now - entry.first_used < KEY_LIFETIME}
    entry = kept.get(name)
    if entry is not None and entry.run_in == run_in:
        return entry.run_at
    run_at = now + duration(run_in)
    kept[name] = Remembered(run_in=run_in, run_at=run_at, first_used=now)
    _write(path, kept)
    return run_at


def _read(path: Path) -> dict[str, Remembered]:
    try:
        return _FILE.validate_json(path.read_bytes())
    except (OSError, ValidationError):
        # Missing or unreadable: nothing remembered, the instant is reckoned afresh.
        return {}


def _write(path: Path, entries: dict[str, Remembered]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written whole, then renamed: a second command reading meanwhile sees the old file or the new.
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False) as temporary:
        temporary.write(_FILE.dump_json(entries, indent=1))
    Path(temporary.name).replace(path)
