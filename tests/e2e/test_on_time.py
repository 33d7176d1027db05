"""Jobs over HTTP on the local stack with the deployed 60 s tick: once each, on their second."""

from __future__ import annotations

import itertools
import time

import pytest

from sundial.contract.vocabulary import Priority
from sundial.local_stack.options import DEFAULT_WORKERS, pool_sizes
from sundial.shared import constants as c
from tests.e2e.api import parse_rfc3339, rfc3339, wait_until
from tests.e2e.conftest import Stack, record_lateness
from tests.e2e.listener import Listener

pytestmark = pytest.mark.e2e

ON_TIME_SECONDS = 1.0
# Beyond what the create dispatches itself: it waits ahead, and only a tick sends it.
BEYOND_HORIZON = c.WRITER_DISPATCH_SECONDS + 2.0


def test_each_job_runs_once_within_a_second_of_its_instant(stack: Stack, listener: Listener) -> None:
    now = time.time()
    plan = [
        (2.5, "high"),
        (3.1, "low"),
        (4.7, "medium"),
        (11.3, "medium"),
        (31.9, "high"),
        (BEYOND_HORIZON, "low"),
    ]
    instants = {}
    for n, (offset, priority) in enumerate(plan):
        job = stack.api.create(
            name=f"on-time-{n}",
            run_at=rfc3339(now + offset),
            priority=priority,
            target={"type": "http", "url": listener.url(f"ok/on-time-{n}")},
            payload={"n": n},
        )
        instants[job["id"]] = parse_rfc3339(job["run_at"])
        # Due inside the writers' reach: the create sent it; beyond it: it waits ahead for a tick.
        assert job["status"] == ("pending" if offset > c.WRITER_DISPATCH_SECONDS else "queued")

    for job_id in instants:
        stack.api.wait_for_status(job_id, {"succeeded"}, timeout=BEYOND_HORIZON + 15)

    for n, (job_id, instant) in enumerate(instants.items()):
        [call] = listener.calls(job_id)
        assert (call.attempt, call.payload, call.scheduled_at) == (1, {"n": n}, instant)
        assert 0 <= call.lateness < ON_TIME_SECONDS, (
            f"job {n} started {call.lateness:.3f} s after its instant"
        )
        [run] = stack.api.runs(job_id)
        assert (run["status"], run["attempt"], run["error"]) == ("succeeded", 1, None)
        assert 0 <= parse_rfc3339(run["started_at"]) - instant < ON_TIME_SECONDS
    record_lateness([call.lateness for job_id in instants for call in listener.calls(job_id)])


def test_failures_retry_at_the_backoff_gaps_then_die_on_the_dead_letter_queue(
    stack: Stack, listener: Listener
) -> None:
    backoff = [1, 2]
    job = stack.api.create(
        name="always-fails",
        target={"type": "http", "url": listener.url("fail/retries")},
        max_retries=2,
        backoff=backoff,
        priority="high",
    )

    dead = stack.api.wait_for_status(job["id"], {"dead"}, timeout=20)

    calls = listener.calls(job["id"])
    assert [call.attempt for call in calls] == [1, 2, 3]
    assert len({call.idempotency_key for call in calls}) == 1  # one occurrence, three attempts
    # History is written right after the job settles, so it may trail the status by a moment.
    wait_until(
        lambda: len(stack.api.runs(job["id"])) == 3, timeout=5, message="the last run was not recorded"
    )
    runs = stack.api.runs(job["id"])  # newest first
    assert [(run["attempt"], run["status"]) for run in runs] == [(3, "dead"), (2, "failed"), (1, "failed")]
    assert all("500" in run["error"] and run["worker"] for run in runs)
    assert {run["scheduled_at"] for run in runs} == {job["run_at"]}
    oldest_first = runs[::-1]
    for delay, earlier, later in zip(backoff, oldest_first, oldest_first[1:], strict=False):
        # The retry is due `delay` ±10 % after the failure, and must start within a second of that.
        gap = parse_rfc3339(later["started_at"]) - parse_rfc3339(earlier["finished_at"])
        assert 0.9 * delay - 0.002 <= gap < 1.1 * delay + ON_TIME_SECONDS, (delay, gap)
    assert (dead["attempt"], dead["last_run"]["status"]) == (3, "dead")
    wait_until(
        lambda: any(job["id"] in body for body in stack.dead_letters()),
        timeout=5,
        message=f"job {job['id']} is not on the dead-letter queue",
    )
    record_lateness([calls[0].lateness])


def test_a_recurring_job_runs_each_occurrence_once_on_its_second(stack: Stack, listener: Listener) -> None:
    job = stack.api.create(
        name="every-5-seconds",
        schedule="rate(5 seconds)",
        target={"type": "http", "url": listener.url("ok/recurring")},
        priority="medium",
    )

    wait_until(
        lambda: len(listener.calls(job["id"])) >= 3, timeout=25, message="fewer than 3 occurrences ran"
    )
    status, cancelled = stack.api.call("DELETE", f"/jobs/{job['id']}")
    assert (status, cancelled["status"]) == (200, "cancelled")

    calls = listener.calls(job["id"])[:3]
    assert [call.attempt for call in calls] == [1, 1, 1]
    assert len({call.idempotency_key for call in calls}) == 3
    instants = [call.scheduled_at for call in calls]
    assert [round(b - a, 3) for a, b in itertools.pairwise(instants)] == [5.0, 5.0]
    for call in calls:
        assert 0 <= call.lateness < ON_TIME_SECONDS, f"occurrence started {call.lateness:.3f} s late"
    # The history row follows the call: it is written once the attempt has settled.
    wait_until(lambda: len(stack.api.runs(job["id"])) >= 3, timeout=10, message="fewer than 3 runs recorded")
    record_lateness([call.lateness for call in calls])


def test_a_flood_of_slow_low_jobs_does_not_delay_high_and_medium_ones(
    stack: Stack, listener: Listener
) -> None:
    now = time.time()
    # Three times what the low pool runs at once.
    low_capacity = pool_sizes(DEFAULT_WORKERS)[Priority.LOW]
    flood = [
        stack.api.create(
            name=f"flood-{n}",
            run_at=rfc3339(now + 6.0),
            priority="low",
            target={"type": "http", "url": listener.url("sleep/2/flood")},
        )["id"]
        for n in range(3 * low_capacity)
    ]
    urgent = [
        stack.api.create(
            name=f"urgent-{priority}",
            run_at=rfc3339(now + 8.0),
            priority=priority,
            target={"type": "http", "url": listener.url(f"ok/urgent-{priority}")},
        )["id"]
        for priority in ("high", "medium")
    ]

    for job_id in flood + urgent:
        stack.api.wait_for_status(job_id, {"succeeded"}, timeout=30)

    urgent_calls = [call for job_id in urgent for call in listener.calls(job_id)]
    assert len(urgent_calls) == 2
    for call in urgent_calls:
        assert 0 <= call.lateness < ON_TIME_SECONDS, f"{call.path} started {call.lateness:.3f} s late"
    # The low queue's few threads really were the bottleneck: its last jobs waited for a free thread.
    flood_calls = [call for job_id in flood for call in listener.calls(job_id)]
    assert len(flood_calls) == len(flood)
    assert max(call.lateness for call in flood_calls) > 2 * ON_TIME_SECONDS
    record_lateness([call.lateness for call in urgent_calls])
