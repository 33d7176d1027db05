"""A state directory that cannot be used is refused with a message that says why, and left as it was:
one in use by another running emulator or local stack, one from a newer format, one unreadable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sundial.local_stack.child import free_port
from sundial.local_stack.state.records import encode
from tests.local_state.helpers import create_table, dynamodb, run_emulator, snapshot_of, start_emulator


def _local(state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sundial.local_stack.cli", "local", "--port", str(free_port())]
    return subprocess.run(
        [*command, "--state-dir", str(state), *extra], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def saved_state(tmp_path: Path) -> Path:
    """A directory holding a table, its emulator stopped."""
    state = tmp_path / "state"
    emulator, url = start_emulator(tmp_path, state)
    create_table(dynamodb(url))
    emulator.stop()
    return state


def test_a_directory_in_use_is_refused_to_a_second_emulator_and_a_local_stack(
    tmp_path: Path, saved_state: Path
) -> None:
    running, _ = start_emulator(tmp_path, saved_state, "running")
    try:
        before = snapshot_of(saved_state)
        second = run_emulator(saved_state)
        local = _local(saved_state)
        after = snapshot_of(saved_state)
    finally:
        running.stop()

    for refused in (second, local):
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"is in use by another running Sundial (pid {running.popen.pid})" in refused.stderr
    assert after == before


def test_a_newer_format_is_refused_and_left_as_it_was(saved_state: Path) -> None:
    (saved_state / "format.json").write_text(json.dumps({"format": 2}))
    before = snapshot_of(saved_state)

    emulator = run_emulator(saved_state)
    local = _local(saved_state)

    for refused in (emulator, local):
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "holds format 2, written by a newer Sundial; this one reads format 1" in refused.stderr
    assert snapshot_of(saved_state) == before


def test_a_log_from_a_newer_format_is_refused(saved_state: Path) -> None:
    [log] = saved_state.glob("wal-*.log")
    log.write_bytes(encode({"format": 2, "generation": 0, "kind": "log"}))
    before = snapshot_of(saved_state)

    refused = run_emulator(saved_state)

    assert refused.returncode == 1
    assert "is format 2, newer than this Sundial's 1" in refused.stderr
    assert snapshot_of(saved_state) == before


def test_a_damaged_log_is_refused_and_left_as_it_was(saved_state: Path) -> None:
    [log] = saved_state.glob("wal-*.log")
    lines = log.read_bytes().splitlines(keepends=True)
    lines.insert(1, b'0badc0de {"items": []}\n')  # a bad record with whole ones after it
    log.write_bytes(b"".join(lines))
    before = snapshot_of(saved_state)

    refused = run_emulator(saved_state)

    assert refused.returncode == 1
    assert "is damaged; move it aside to start afresh" in refused.stderr
    assert snapshot_of(saved_state) == before


def test_a_path_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a-file"
    path.write_text("not a state directory")

    refused = run_emulator(path)

    assert refused.returncode == 1
    assert f"state directory {path}: it is not a directory" in refused.stderr
    assert path.read_text() == "not a state directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes whatever the permissions say")
def test_a_directory_without_permissions_is_refused(saved_state: Path) -> None:
    saved_state.chmod(0o000)
    try:
        refused = run_emulator(saved_state)
    finally:
        saved_state.chmod(0o755)

    assert refused.returncode == 1
    assert "cannot read and write it (permission denied)" in refused.stderr


def test_state_options_belong_to_the_emulator_when_local_is_given_one(tmp_path: Path) -> None:
    refused = _local(tmp_path / "state", "--endpoint-url", "http://127.0.0.1:1")

    assert refused.returncode == 1
    assert "give --state-dir or --ephemeral to `sundial emulator` instead" in refused.stderr
    assert not (tmp_path / "state").exists()


def test_a_file_that_cannot_be_read_is_refused_and_left_as_it_was(saved_state: Path) -> None:
    (saved_state / "snapshot.log").mkdir()  # read as a file, it fails as an unreadable one would
    before = snapshot_of(saved_state)

    refused = run_emulator(saved_state)

    assert refused.returncode == 1
    assert f"state directory {saved_state}: cannot read {saved_state / 'snapshot.log'}" in refused.stderr
    assert snapshot_of(saved_state) == before
