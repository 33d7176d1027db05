"""Spread windows and backfill on the local stack, over HTTP, with an http target recording calls."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from sundial.cli import cli
from sundial.shared.clock import format_rfc3339
from tests.e2e.api import parse_rfc3339, rfc3339, wait_until
from tests.e2e.conftest import Stack
from tests.e2e.listener import Listener

pytestmark = pytest.mark.e2e

ON_TIME_SECONDS = 1.0
WINDOW_SECONDS = 20
HOUR = 3600


def test_a_fan_out_with_a_window_starts_each_job_at_its_own_point_never_before(
    stack: Stack, listener: Listener
) -> None:
    instant = rfc3339(time.time() + 5)
    jobs = [
        stack.api.create(
            name=f"spread-{n}",
            run_at=instant,
            window_seconds=WINDOW_SECONDS,
            target={"type": "http", "url": listener.url(f"ok/spread-{n}")},
        )
        for n in range(6)
    ]
    starts = {job["id"]: parse_rfc3339(job["next_run_at"]) for job in jobs}

    for job_id in starts:
        stack.api.wait_for_status(job_id, {"succeeded"}, timeout=WINDOW_SECONDS + 20)

    scheduled = parse_rfc3339(instant)
    assert all(scheduled <= start < scheduled + WINDOW_SECONDS for start in starts.values())
    assert len(set(starts.values())) == len(starts)  # each job its own point of the window
    for job_id, start in starts.items():
        [call] = listener.calls(job_id)
        # the occurrence keeps its instant and key; lateness counts from the chosen start
        assert call.scheduled_at == scheduled and call.idempotency_key == f"{job_id}:{instant}"
        assert 0 <= call.received_at - start < ON_TIME_SECONDS, f"{call.received_at - start:.3f} s"


def test_a_backfill_runs_each_past_occurrence_once_however_often_asked(
    stack: Stack, listener: Listener
) -> None:
    job = stack.api.create(
        name="backfilled",
        schedule="0 * * * *",
        overlap_policy="buffer",
        target={"type": "http", "url": listener.url("ok/backfilled")},
    )
    last_hour = int(time.time()) // HOUR * HOUR
    window = ["--from", rfc3339(last_hour - 2 * HOUR), "--to", rfc3339(last_hour + 1)]
    dry = CliRunner().invoke(
        cli, ["jobs", "backfill", job["id"], *window, "--dry-run", "--api", stack.api.base_url]
    )
    body = {"from": window[1], "to": window[3]}

    status, first = stack.api.call("POST", f"/jobs/{job['id']}/backfill", body)
    wait_until(lambda: len(listener.calls(job["id"])) >= 3, 20, "three backfilled calls")
    again_status, again = stack.api.call("POST", f"/jobs/{job['id']}/backfill", body)
    time.sleep(2)  # a second run would come at once: the backfill places it due now

    hours = [format_rfc3339((last_hour - n * HOUR) * 1000) for n in (2, 1, 0)]
    assert dry.exit_code == 0, dry.stderr
    assert all(f"{hour}  would run" in dry.stdout for hour in hours), dry.stdout
    assert (status, first["instants"]) == (202, hours)
    assert (again_status, again["instants"], again["already"]) == (202, [], hours)
    calls = listener.calls(job["id"])
    assert [call.scheduled_at for call in calls] == [parse_rfc3339(hour) for hour in hours]
    assert [call.idempotency_key for call in calls] == [f"{job['id']}:{hour}" for hour in hours]
    after = stack.api.job(job["id"])
    assert parse_rfc3339(after["next_run_at"]) == last_hour + HOUR  # the schedule goes on as it was
    assert (
        json.loads(
            CliRunner()
            .invoke(cli, ["jobs", "get", job["id"], "-o", "json", "--api", stack.api.base_url])
            .stdout
        )["status"]
        == "pending"
    )
