"""The state machine's placements, as pure functions of a job and `now`."""

from __future__ import annotations

import random
from typing import Any

import pytest

from shared import constants as c
from shared.lifecycle import (
    Placement,
    after_failure,
    after_lease_expired,
    after_success,
    is_skipped_misfire,
)
from shared.models import Job, JobStatus, RetryPolicy
from shared.schedules import MisfirePolicy
from shared.targets.models import PythonTarget

T0 = 1_796_000_000_000  # 2026-11-30T...Z, a whole minute
MINUTE = 60_000


def job(**fields: Any) -> Job:
    base: dict[str, Any] = {
        "id": "j",
        "status": JobStatus.RUNNING,
        "target": PythonTarget(type="python", handler="noop"),
        "created_at": T0,
        "updated_at": T0,
        "scheduled_at": T0,
        "due_at": T0,
        "attempt": 1,
    }
    return Job(**(base | fields))


def test_a_one_off_success_is_terminal() -> None:
    assert after_success(job(), T0 + 5) == Placement(JobStatus.SUCCEEDED, T0, None, 1)


def test_a_recurring_success_moves_to_the_next_occurrence() -> None:
    placement = after_success(job(schedule="rate(5 minutes)"), T0 + 5)
    assert placement == Placement(JobStatus.PENDING, T0 + 5 * MINUTE, T0 + 5 * MINUTE, 0)


def test_overlapping_occurrences_are_skipped_by_default() -> None:
    # The 1-minute job ran for 3.5 minutes. The occurrences at +1 and +2 min are overlaps, dropped;
    # +3 min is 30 s ago, inside the 60 s misfire grace, so it still runs (late) rather than vanish.
    placement = after_success(job(schedule="rate(1 minute)"), T0 + 3 * MINUTE + 30_000)
    assert placement.scheduled_at == T0 + 3 * MINUTE


def test_a_failure_with_retries_left_waits_its_backoff() -> None:
    placement = after_failure(job(retry=RetryPolicy(backoff=(5, 30))), T0, random.Random(1))
    assert placement.status is JobStatus.FAILED
    assert placement.due_at is not None and T0 + 4_500 <= placement.due_at <= T0 + 5_500


def test_the_last_failure_kills_a_one_off() -> None:
    dead = after_failure(job(attempt=3, retry=RetryPolicy(max_retries=2)), T0)
    assert dead == Placement(JobStatus.DEAD, T0, None, 3)


def test_a_dead_recurring_occurrence_still_moves_on() -> None:
    placement = after_failure(job(attempt=6, schedule="rate(1 hour)"), T0 + 1)
    assert (placement.status, placement.scheduled_at) == (JobStatus.PENDING, T0 + 60 * MINUTE)


def test_a_cancel_requested_while_running_lands_on_completion() -> None:
    placement = after_success(job(schedule="rate(1 hour)", cancel_requested=True), T0)
    assert (placement.status, placement.due_at) == (JobStatus.CANCELLED, None)


def test_a_paused_job_leaves_the_index_after_its_attempt() -> None:
    placement = after_success(job(schedule="rate(1 hour)", paused=True), T0)
    assert (placement.status, placement.due_at) == (JobStatus.PENDING, None)


def test_a_triggered_run_resumes_the_schedule_where_it_was() -> None:
    placement = after_success(job(schedule="rate(1 hour)", deferred_at=T0 + 30 * MINUTE), T0)
    assert placement == Placement(JobStatus.PENDING, T0 + 30 * MINUTE, T0 + 30 * MINUTE, 0, True)


def test_a_lost_attempt_is_counted_and_the_last_one_dies() -> None:
    assert after_lease_expired(job(attempt=1), T0).status is JobStatus.PENDING
    assert after_lease_expired(job(attempt=6), T0).status is JobStatus.DEAD
    assert after_lease_expired(job(status=JobStatus.QUEUED, attempt=6), T0).status is JobStatus.PENDING


@pytest.mark.parametrize(
    ("late_by_ms", "policy", "skipped"),
    [
        (c.MISFIRE_GRACE_SECONDS * 1000 + 1, MisfirePolicy.SKIP, True),
        (c.MISFIRE_GRACE_SECONDS * 1000 - 1, MisfirePolicy.SKIP, False),
        (10 * MINUTE, MisfirePolicy.RUN_ONCE, False),
        (10 * MINUTE, MisfirePolicy.RUN_ALL, False),
    ],
)
def test_misfires_follow_the_policy(late_by_ms: int, policy: MisfirePolicy, skipped: bool) -> None:
    waiting = job(status=JobStatus.QUEUED, attempt=0, schedule="rate(1 hour)", misfire_policy=policy)
    assert is_skipped_misfire(waiting, T0 + late_by_ms) is skipped


def test_dispatch_happens_only_inside_the_horizon() -> None:
    horizon = c.DISPATCH_HORIZON_SECONDS * 1000
    assert Placement(JobStatus.PENDING, T0, T0 + horizon, 0).dispatches_now(T0)
    assert not Placement(JobStatus.PENDING, T0, T0 + horizon + 1, 0).dispatches_now(T0)
    assert not Placement(JobStatus.SUCCEEDED, T0, None, 0).dispatches_now(T0)
