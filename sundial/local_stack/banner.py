"""What `sundial local` prints once it is ready: where it is, and a first thing to try."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

FIRST_JOB = {"name": "hello", "target": {"type": "python", "handler": "noop"}}


def cli_line(script: Path | None = None, found: str | None = None) -> str:
    """How to run the `sundial` command from another terminal: by its name when the PATH finds this
    one, else by its path, with the PATH line that makes the name work."""
    script = script or Path(sys.executable).parent / "sundial"
    found = found if found is not None else shutil.which("sundial")
    if found and Path(found).resolve() == script.resolve():
        return "sundial jobs list"
    return f'{script} jobs list   (or first: export PATH="{script.parent}:$PATH")'


def banner(url: str, endpoint_url: str, *, own_emulator: bool) -> str:
    emulator = f"{endpoint_url} ({'started here' if own_emulator else 'given with --endpoint-url'})"
    body = shlex.quote(json.dumps(FIRST_JOB))
    create = f"curl -s -X POST {url}/jobs -H 'Content-Type: application/json' -d {body}"
    return "\n".join(
        [
            "",
            "Sundial is running locally.",
            f"  API:       {url}",
            f"  Console:   {url}/console/",
            f"  Docs:      {url}/docs",
            f"  Emulator:  {emulator}",
            "  Create a first job:",
            f"    {create}",
            f"  Then:      curl -s {url}/jobs",
            f"  CLI:       {cli_line()}",
            "",
        ]
    )
