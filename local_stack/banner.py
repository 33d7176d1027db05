"""What `sundial local` prints once it is ready: where it is, and a first thing to try."""

from __future__ import annotations

import json
import shlex

FIRST_JOB = {"name": "hello", "target": {"type": "python", "handler": "noop"}}


def banner(url: str, endpoint_url: str, *, own_emulator: bool) -> str:
    emulator = f"{endpoint_url} ({'started here' if own_emulator else 'given with --endpoint-url'})"
    body = shlex.quote(json.dumps(FIRST_JOB))
    create = f"curl -s -X POST {url}/jobs -H 'Content-Type: application/json' -d {body}"
    return "\n".join(
        [
            "",
            "Sundial is running locally.",
            f"  API:       {url}",
            f"  Docs:      {url}/docs",
            f"  Emulator:  {emulator}",
            "  Create a first job:",
            f"    {create}",
            f"  Then:      curl -s {url}/jobs",
            "",
        ]
    )
