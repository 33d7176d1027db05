"""The README's tour, run as written from the checkout's root, against a local stack."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LOCAL_URL = "http://127.0.0.1:8000"


def _tour_blocks() -> list[str]:
    tour = ROOT.joinpath("README.md").read_text().split("## A 60-second tour", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", tour, flags=re.DOTALL)


def _run(script: str, stack: Stack) -> subprocess.CompletedProcess[str]:
    # The one change: this test's stack listens on a port of its own, which $U and
    # SUNDIAL_API_URL name instead of the default 8000.
    script = script.replace(LOCAL_URL, stack.api.base_url)
    environment = {name: value for name, value in os.environ.items() if name != "SUNDIAL_API_URL"}
    # A shell as a new user has it: no virtual environment's bin on the PATH.
    environment["PATH"] = ":".join(
        part for part in environment.get("PATH", "").split(":") if not part.startswith(str(ROOT))
    )
    environment["SUNDIAL_API_URL"] = stack.api.base_url
    return subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_tours_commands_run_as_written(stack: Stack) -> None:
    curl_block, command_block = _tour_blocks()

    with_curl = _run(curl_block, stack)
    assert with_curl.returncode == 0 and not with_curl.stderr, with_curl.stderr
    assert '"status":"dead"' in with_curl.stdout.replace(" ", "")
    assert '"field":"schedule"' in with_curl.stdout.replace(" ", "")

    with_sundial = _run(command_block, stack)
    assert "command not found" not in with_sundial.stderr, with_sundial.stderr
    assert with_sundial.stdout.rstrip().endswith("1"), with_sundial.stdout
    assert "error: schedule: cron expression '61 * * * *': minute must be 0-59" in with_sundial.stderr
    # Every other command succeeded: the one error is the refused schedule.
    assert with_sundial.stderr.count("error:") == 1, with_sundial.stderr
