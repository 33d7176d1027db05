"""SIGTERM and Ctrl-C stop `sundial emulator` and `sundial local` at once: while they restore
100,000 jobs (saying what they were doing, the directory as it was, a restart losing nothing), and
while serving, whichever of its threads the kernel hands the signal to."""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sundial.local_stack.child import free_port, wait_for_port
from sundial.local_stack.state import directory
from sundial.local_stack.state.directory import DirectoryLock
from tests.e2e.processes import Process
from tests.local_state import large_state
from tests.local_state.helpers import dynamodb

EXIT_SECONDS = 5.0
# A restore of 100,000 jobs takes seconds on a quiet machine; a shared one may be much slower.
RESTORE_SECONDS = 300.0
RESTORING = "emulator state: restoring"
BATCH_GET_LIMIT = 100


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    place = tmp_path_factory.mktemp("large-state")
    path = place / "state"
    yield path, large_state.build(path, place)


def test_sigterm_during_a_restore_stops_the_emulator_at_once_and_a_restart_loses_nothing(
    state: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, ids = state
    before = large_state.digests(path)
    emulator = _emulator(tmp_path, path, "interrupted")
    _wait_until_restoring(emulator)

    seconds = _stop(emulator, signal.SIGTERM)

    assert seconds < EXIT_SECONDS, emulator.tail()
    assert emulator.popen.returncode == 128 + signal.SIGTERM
    said = re.search(
        r"stopped by SIGTERM while restoring the tables from \S+ \((\S+), (\d+)% ", emulator.output()
    )
    assert said, emulator.tail()
    assert said.group(1) == "snapshot.log"
    assert int(said.group(2)) < 100
    assert large_state.digests(path) == before  # read, not changed: a lock file unsigned included

    port = free_port()
    restarted = _emulator(tmp_path, path, "restarted", port)
    try:
        wait_for_port("127.0.0.1", port, RESTORE_SECONDS, restarted.popen)
        # The port opens a moment before the state line is printed.
        _wait_for_line(restarted, "emulator state: " + str(path) + " (")
        assert f"({len(ids)} items restored in" in restarted.output()
        assert _ids(f"http://127.0.0.1:{port}", ids) == set(ids)
    finally:
        seconds = _stop(restarted, signal.SIGTERM)
    assert seconds < EXIT_SECONDS, restarted.tail()
    assert restarted.popen.returncode == 0


def test_ctrl_c_while_sundial_local_waits_for_its_emulator_to_restore_stops_both_at_once(
    state: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, _ = state
    before = large_state.digests(path)
    local = Process("local", ["local", "--port", str(free_port()), "--state-dir", str(path)], tmp_path)
    _wait_until_restoring(local)  # the emulator it started prints to the same output

    seconds = _stop(local, signal.SIGINT)

    assert seconds < EXIT_SECONDS, local.tail()
    assert local.popen.returncode == 128 + signal.SIGINT
    output = local.output()
    assert "sundial local: stopped by SIGINT while waiting for its emulator to restore" in output
    assert "sundial emulator: stopped by SIGTERM while restoring the tables from" in output
    DirectoryLock(path, directory.EMULATOR_LOCK).acquire().release()  # no emulator left holding it
    after = large_state.digests(path)
    assert after.pop(directory.LOCAL_LOCK) is not None  # the one file a local stack's claim writes
    assert after == {name: digest for name, digest in before.items() if name != directory.LOCAL_LOCK}


def test_sigterm_handed_to_another_thread_than_the_main_one_stops_a_serving_emulator(tmp_path: Path) -> None:
    port = free_port()
    emulator = Process("emulator", ["emulator", "--port", str(port), "--ephemeral"], tmp_path)
    wait_for_port("127.0.0.1", port, 60, emulator.popen)
    _wait_for_line(emulator, "emulator state:")
    pid = emulator.popen.pid
    others = [int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid]
    assert others, "the serving emulator has no thread but its main one"

    started = time.monotonic()
    assert ctypes.CDLL(None, use_errno=True).tgkill(pid, others[0], signal.SIGTERM) == 0
    try:
        emulator.popen.wait(EXIT_SECONDS)
    except subprocess.TimeoutExpired:
        emulator.kill()
        raise AssertionError(f"a SIGTERM to thread {others[0]} left it running:\n{emulator.tail()}") from None
    assert time.monotonic() - started < EXIT_SECONDS
    assert emulator.popen.returncode == 0
    assert "SIGTERM: stopping" in emulator.output()


# A main thread that does nothing but wait for the stop, checking for it without pause, so that a
# signal often lands while that thread holds a lock of its wait: a handler that took the same lock
# hung more than half of these processes.
WAITS_WITHOUT_PAUSE = """
import sys
from sundial.local_stack import signals
signals.WAKE_SECONDS = 0
waiting = signals.Signals("waiting").install()
waiting.serving()
print("waiting", flush=True)
waiting.wait_for_stop()
sys.exit(0 if waiting.stop.is_set() else 3)
"""
SIGNALLED_WAITS = 30


def test_a_signal_that_lands_while_the_main_thread_waits_for_it_stops_the_process_every_time() -> None:
    hung = 0
    for _ in range(SIGNALLED_WAITS):
        child = subprocess.Popen(
            [sys.executable, "-c", WAITS_WITHOUT_PAUSE], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert child.stdout is not None and child.stdout.readline() == b"waiting\n"
        time.sleep(0.02)  # well inside its loop of waits
        child.send_signal(signal.SIGTERM)
        try:
            assert child.wait(EXIT_SECONDS) == 0
        except subprocess.TimeoutExpired:
            hung += 1
            child.kill()
            child.wait()
        finally:
            child.stdout.close()
            assert child.stderr is not None
            child.stderr.close()
    assert hung == 0, f"{hung} of {SIGNALLED_WAITS} processes ignored their SIGTERM"


def _emulator(log_dir: Path, state: Path, name: str, port: int | None = None) -> Process:
    args = ["emulator", "--port", str(port or free_port()), "--state-dir", str(state)]
    return Process(name, args, log_dir)


def _wait_until_restoring(process: Process) -> None:
    deadline = time.monotonic() + 60
    while RESTORING not in process.output():
        assert process.popen.poll() is None, process.tail()
        assert time.monotonic() < deadline, process.tail()
        time.sleep(0.05)
    time.sleep(0.5)  # well into the snapshot, which takes seconds to read
    assert "listening" not in process.output(), "the restore was over before the signal"


def _wait_for_line(process: Process, text: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while text not in process.output():
        assert process.popen.poll() is None, process.tail()
        assert time.monotonic() < deadline, f"no {text!r} in:\n{process.tail()}"
        time.sleep(0.05)


def _stop(process: Process, signum: int) -> float:
    """Seconds from the signal to the process's exit (SIGKILLed, and failed, after a minute)."""
    started = time.monotonic()
    process.popen.send_signal(signum)
    try:
        process.popen.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"{process.name} ignored {signum} for a minute:\n{process.tail()}") from None
    return time.monotonic() - started


def _ids(endpoint_url: str, ids: list[str]) -> set[str]:
    """The ids the emulator answers for these jobs' keys, read by key, only the id projected (a Scan
    or a Query pages through the whole table again for each page, and whole items take the client
    long to parse: minutes at this size)."""
    client = dynamodb(endpoint_url)
    table = client.list_tables()["TableNames"][0]
    found: set[str] = set()
    for start in range(0, len(ids), BATCH_GET_LIMIT):
        keys = [{"pk": {"S": f"JOB#{i}"}, "sk": {"S": "JOB"}} for i in ids[start : start + BATCH_GET_LIMIT]]
        request: dict[str, Any] = {table: {"Keys": keys, "ProjectionExpression": "id"}}
        while request:
            answer = client.batch_get_item(RequestItems=request)
            found.update(item["id"]["S"] for item in answer["Responses"].get(table, []))
            request = answer.get("UnprocessedKeys") or {}
    return found
