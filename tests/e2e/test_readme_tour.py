"""The README's tour, run as written against a local stack: from the checkout's root, and from a
fresh clone of what is committed."""

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


def _tour_blocks(root: Path) -> list[str]:
    tour = root.joinpath("README.md").read_text().split("## A 60-second tour", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", tour, flags=re.DOTALL)


def _run(
    script: str, stack: Stack, root: Path, python_path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    # The one change: this test's stack listens on a port of its own, which $U and
    # SUNDIAL_API_URL name instead of the default 8000.
    script = script.replace(LOCAL_URL, stack.api.base_url)
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in {"SUNDIAL_API_URL", "PYTHONPATH", "VIRTUAL_ENV"}
    }
    # A shell as a new user has it: no virtual environment's bin on the PATH.
    environment["PATH"] = ":".join(
        part for part in environment.get("PATH", "").split(":") if not part.startswith(str(ROOT))
    )
    environment["SUNDIAL_API_URL"] = stack.api.base_url
    if python_path is not None:
        environment["PYTHONPATH"] = str(python_path)
    return subprocess.run(
        ["bash", "-c", script],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _tour_runs_as_written(stack: Stack, root: Path, python_path: Path | None = None) -> None:
    curl_block, command_block = _tour_blocks(root)

    with_curl = _run(curl_block, stack, root, python_path)
    assert with_curl.returncode == 0 and not with_curl.stderr, with_curl.stderr
    assert '"status":"dead"' in with_curl.stdout.replace(" ", "")
    assert '"field":"schedule"' in with_curl.stdout.replace(" ", "")

    with_sundial = _run(command_block, stack, root, python_path)
    assert "command not found" not in with_sundial.stderr, with_sundial.stderr
    assert with_sundial.stdout.rstrip().endswith("1"), with_sundial.stdout
    assert "error: schedule: cron expression '61 * * * *': minute must be 0-59" in with_sundial.stderr
    # Every other command succeeded: the one error is the refused schedule.
    assert with_sundial.stderr.count("error:") == 1, with_sundial.stderr


def test_the_tours_commands_run_as_written(stack: Stack) -> None:
    _tour_runs_as_written(stack, ROOT)


def test_the_tour_runs_as_written_from_a_fresh_clone(stack: Stack, tmp_path: Path) -> None:
    clone = tmp_path / "sundial"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    # The checkout's environment stands in for `make install`: its packages, and its editable
    # install's entry points, with the clone's own code first on the import path.
    clone.joinpath(".venv").symlink_to(ROOT / ".venv", target_is_directory=True)
    where = _run(
        'export PATH="$PWD/.venv/bin:$PATH"\ncommand -v sundial\n'
        # -P: the import path the `sundial` script gets, without the working directory in front.
        'python -P -c "import sundial.cli, shared; print(sundial.cli.__file__, shared.__file__)"',
        stack,
        clone,
        clone,
    )
    assert where.returncode == 0, where.stderr
    command, cli, shared = where.stdout.split()
    assert command == f"{clone}/.venv/bin/sundial"
    assert Path(cli).is_relative_to(clone) and Path(shared).is_relative_to(clone), where.stdout

    _tour_runs_as_written(stack, clone, clone)
