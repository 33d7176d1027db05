"""SIGKILL `sundial local` while jobs run, start it again on the same emulator: every job completes,
and none completes twice. The state lives in the emulator; leases expire and a tick reclaims."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.api import Api, rfc3339, wait_until
from tests.e2e.listener import Listener
from tests.e2e.processes import start_emulator, start_local

pytestmark = pytest.mark.e2e

# A short job timeout keeps the lease short: the timeout plus LEASE_MARGIN_SECONDS (60 s).
TIMEOUT_SECONDS = 6
RUN_SECONDS = 4
# A shorter tick than the deployed one only makes the reclaim come sooner after the lease expires.
TICK = ("--tick-seconds", "5")
RECOVERY_SECONDS = TIMEOUT_SECONDS + 60 + 5 + RUN_SECONDS + 20


def test_a_killed_local_stack_loses_no_job_and_completes_none_twice(logs: Path, listener: Listener) -> None:
    emulator, endpoint_url = start_emulator(logs)
    try:
        _crash_and_recover(logs, listener, endpoint_url)
    finally:
        emulator.stop()


def _crash_and_recover(logs: Path, listener: Listener, endpoint_url: str) -> None:
    first, url = start_local(logs, "--endpoint-url", endpoint_url, *TICK, name="crash-first")
    api = Api(url)
    now = time.time()

    def create(offset: float, path: str, priority: str) -> str:
        job = api.create(
            run_at=rfc3339(now + offset),
            priority=priority,
            target={"type": "http", "url": listener.url(path)},
            timeout_seconds=TIMEOUT_SECONDS,  # and retries left: a lost attempt counts as one
        )
        return str(job["id"])

    # High: its pool has threads enough for all four at once, so none finishes before the kill.
    running = [create(1.5, f"sleep/{RUN_SECONDS}/crash-running", "high") for _ in range(4)]
    waiting = [create(offset, "ok/crash-waiting", "medium") for offset in (9.0, 12.0, 15.0, 18.0)]
    wait_until(
        lambda: all(listener.calls(job_id) for job_id in running),
        timeout=15,
        message=lambda: f"not every slow job started:\n{first.tail()}",
    )
    first.kill()  # mid-call: each running job is RUNNING in the table, its target still answering

    second, url = start_local(logs, "--endpoint-url", endpoint_url, *TICK, name="crash-second")
    try:
        _check_every_job_completed_once(Api(url), listener, running, waiting)
    finally:
        assert second.stop() == 0


def _check_every_job_completed_once(
    api: Api, listener: Listener, running: list[str], waiting: list[str]
) -> None:
    for job_id in running + waiting:
        api.wait_for_status(job_id, {"succeeded"}, timeout=RECOVERY_SECONDS)
    for job_id in waiting:
        assert [run["status"] for run in api.runs(job_id)] == ["succeeded"]
        assert len(listener.calls(job_id)) == 1
    for job_id in running:
        # Its first attempt was lost with the process; the reclaim ran it again, once.
        assert [run["status"] for run in api.runs(job_id)] == ["succeeded", "lost"]
        calls = listener.calls(job_id)
        assert [call.attempt for call in calls] == [1, 2]
        assert len({call.idempotency_key for call in calls}) == 1  # the target can tell it is a re-run
