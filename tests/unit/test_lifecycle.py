"""The state machine's placements, as pure functions of a job and `now`."""

from __future__ import annotations

import random
from typing import Any

import pytest

from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import JobStatus, MisfirePolicy, OverlapPolicy
from sundial.shared import constants as c
from sundial.shared.errors import Conflict
from sundial.shared.lifecycle import (
    Placement,
    after_failure,
    after_lost,
    after_success,
    catch_up,
    caught_up,
    next_occurrence,
    on_pause,
    on_trigger,
    waiting_triggers,
)
from sundial.shared.lifecycle.leases import lease_seconds, resend_lease
from sundial.shared.models import Job, RetryPolicy

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
    assert after_success(job(), T0 + 5, T0) == Placement(JobStatus.SUCCEEDED, T0, None, 1)


def test_a_recurring_success_moves_to_the_next_occurrence() -> None:
    placement = after_success(job(schedule="rate(5 minutes)"), T0 + 5, T0)
    assert placement == Placement(JobStatus.PENDING, T0 + 5 * MINUTE, T0 + 5 * MINUTE, 0)


# Misfire and overlap, one row per case of docs/design.md: a rate(1 minute) job whose occurrence at
# T0 started at `started` and ended at `ended`; the next occurrence it runs.
@pytest.mark.parametrize(
    ("overlap", "misfire", "started", "ended", "expected"),
    [
        # on time and quick: the next instant, whatever the policies
        (OverlapPolicy.SKIP, MisfirePolicy.RUN_ONCE, T0, T0 + 5_000, T0 + MINUTE),
        (OverlapPolicy.BUFFER, MisfirePolicy.RUN_ALL, T0, T0 + 5_000, T0 + MINUTE),
        # ran 3.5 minutes: skip drops the three that fell due meanwhile
        (OverlapPolicy.SKIP, MisfirePolicy.RUN_ONCE, T0, T0 + 210_000, T0 + 4 * MINUTE),
        (OverlapPolicy.SKIP, MisfirePolicy.RUN_ALL, T0, T0 + 210_000, T0 + 4 * MINUTE),
        # ...buffer keeps them, under the misfire policy (missed: more than 60 s late at the end)
        (OverlapPolicy.BUFFER, MisfirePolicy.RUN_ALL, T0, T0 + 210_000, T0 + MINUTE),
        (OverlapPolicy.BUFFER, MisfirePolicy.RUN_ONCE, T0, T0 + 210_000, T0 + 2 * MINUTE),
        (OverlapPolicy.BUFFER, MisfirePolicy.SKIP, T0, T0 + 210_000, T0 + 3 * MINUTE),
        # started 10.5 minutes late (downtime): the ten missed before it started are misfires
        (OverlapPolicy.SKIP, MisfirePolicy.RUN_ALL, T0 + 630_000, T0 + 631_000, T0 + MINUTE),
        # (run_once: this late run was the one run of what was missed)
        (OverlapPolicy.SKIP, MisfirePolicy.RUN_ONCE, T0 + 630_000, T0 + 631_000, T0 + 10 * MINUTE),
        (OverlapPolicy.SKIP, MisfirePolicy.SKIP, T0 + 630_000, T0 + 631_000, T0 + 10 * MINUTE),
    ],
)
def test_the_next_occurrence_follows_overlap_then_misfire(
    overlap: OverlapPolicy, misfire: MisfirePolicy, started: int, ended: int, expected: int
) -> None:
    recurring = job(schedule="rate(1 minute)", overlap_policy=overlap, misfire_policy=misfire)
    assert next_occurrence(recurring, started, ended) == expected


# A claimed occurrence missed by more than the grace (rate(5 minutes), claimed 12 minutes late).
@pytest.mark.parametrize(
    ("misfire", "expected"),
    [
        (MisfirePolicy.RUN_ALL, T0),  # each missed one runs, oldest first
        (MisfirePolicy.RUN_ONCE, T0 + 10 * MINUTE),  # the latest one due by now, once
        (MisfirePolicy.SKIP, T0 + 15 * MINUTE),  # none of them: the first not missed, ahead
    ],
)
def test_a_missed_occurrence_is_caught_up_by_its_misfire_policy(
    misfire: MisfirePolicy, expected: int
) -> None:
    waiting = job(status=JobStatus.QUEUED, attempt=0, schedule="rate(5 minutes)", misfire_policy=misfire)
    assert catch_up(waiting, T0 + 12 * MINUTE) == expected


def test_an_occurrence_within_the_grace_is_not_missed() -> None:
    waiting = job(
        status=JobStatus.QUEUED, attempt=0, schedule="rate(5 minutes)", misfire_policy=MisfirePolicy.SKIP
    )
    assert catch_up(waiting, T0 + c.MISFIRE_GRACE_SECONDS * 1000) == T0
    assert caught_up(waiting, T0 + c.MISFIRE_GRACE_SECONDS * 1000) is None


def test_a_failure_with_retries_left_waits_its_backoff() -> None:
    placement = after_failure(job(retry=RetryPolicy(backoff=(5, 30))), T0, T0, random.Random(1))
    assert placement.status is JobStatus.FAILED
    assert placement.due_at is not None and T0 + 4_500 <= placement.due_at <= T0 + 5_500


def test_a_retry_never_starts_before_the_call_it_replaces_can_have_ended() -> None:
    placement = after_failure(job(retry=RetryPolicy(backoff=(5,))), T0, T0, None, not_before=T0 + 900_000)
    assert placement.due_at == T0 + 900_000


def test_the_last_failure_kills_a_one_off_and_owes_an_alert() -> None:
    dead = after_failure(job(attempt=3, retry=RetryPolicy(max_retries=2)), T0, T0)
    assert dead == Placement(JobStatus.DEAD, T0, None, 3, alert=True)


def test_a_dead_recurring_occurrence_still_moves_on() -> None:
    placement = after_failure(job(attempt=6, schedule="rate(1 hour)"), T0 + 1, T0)
    assert (placement.status, placement.scheduled_at, placement.alert) == (
        JobStatus.PENDING,
        T0 + 60 * MINUTE,
        True,
    )


def test_a_cancel_requested_while_running_lands_on_completion_or_failure() -> None:
    for end in (after_success(job(schedule="rate(1 hour)", cancel_requested=True), T0, T0),
                after_failure(job(cancel_requested=True), T0, T0)):  # fmt: skip
        assert (end.status, end.due_at, end.alert) == (JobStatus.CANCELLED, None, False)


def test_a_paused_job_leaves_the_index_after_its_attempt() -> None:
    placement = after_success(job(schedule="rate(1 hour)", paused=True), T0, T0)
    assert (placement.status, placement.due_at) == (JobStatus.PENDING, None)


def test_a_pause_holds_a_retry_without_spending_it() -> None:
    placement = after_failure(job(schedule="rate(1 hour)", paused=True), T0, T0)
    assert (placement.status, placement.due_at, placement.attempt) == (JobStatus.FAILED, None, 1)


def test_a_triggered_run_resumes_the_schedule_where_it_was() -> None:
    placement = after_success(job(schedule="rate(1 hour)", deferred_at=T0 + 30 * MINUTE), T0, T0)
    assert placement == Placement(JobStatus.PENDING, T0 + 30 * MINUTE, T0 + 30 * MINUTE, 0, True)


# Triggers: each acknowledged one runs once, one after another; only a pause or a cancel drops them.
@pytest.mark.parametrize(
    ("state", "counted"),
    [
        ({"status": JobStatus.RUNNING}, True),  # behind the running attempt
        ({"status": JobStatus.QUEUED, "attempt": 0, "extra_run": True}, True),  # behind the extra run
        ({"status": JobStatus.QUEUED, "attempt": 1, "due_at": T0}, True),  # behind a retry due now
        ({"status": JobStatus.FAILED, "attempt": 1, "due_at": T0 + MINUTE}, False),  # the retry, now
        ({"status": JobStatus.PENDING, "attempt": 0, "due_at": T0 + MINUTE}, False),  # an extra run now
        ({"status": JobStatus.SUCCEEDED, "attempt": 1, "due_at": None}, False),  # an extra run now
    ],
)
def test_a_trigger_runs_now_or_waits_behind_what_is_current(state: dict[str, Any], counted: bool) -> None:
    placement = on_trigger(job(schedule="rate(1 hour)", **state), T0)
    assert (placement is None) is counted
    if placement is not None:
        assert placement.due_at == T0


def test_a_trigger_beyond_the_most_waiting_is_refused() -> None:
    full = job(status=JobStatus.RUNNING, triggers=c.MAX_WAITING_TRIGGERS)
    assert waiting_triggers(full) == c.MAX_WAITING_TRIGGERS
    with pytest.raises(Conflict, match="triggered runs waiting"):
        on_trigger(full, T0)


def test_the_end_of_an_occurrence_starts_the_next_waiting_trigger_and_counts_it_off() -> None:
    placement = after_success(job(schedule="rate(1 hour)", triggers=2), T0 + 5, T0)
    assert (placement.status, placement.due_at, placement.extra, placement.triggers) == (
        JobStatus.PENDING,
        T0 + 5,
        True,
        1,
    )
    assert placement.defer_to == T0 + 60 * MINUTE  # the schedule resumes where it was


def test_a_cancel_drops_the_waiting_triggers() -> None:
    placement = after_success(job(schedule="rate(1 hour)", triggers=2, cancel_requested=True), T0, T0)
    assert (placement.status, placement.triggers) == (JobStatus.CANCELLED, 0)
    assert waiting_triggers(job(triggers=2, cancel_requested=True)) == 0


def test_a_pause_gives_an_unstarted_extra_runs_place_back_to_the_occurrence_it_deferred() -> None:
    extra = job(status=JobStatus.QUEUED, attempt=0, extra_run=True, deferred_at=T0 + MINUTE, paused=True)
    assert on_pause(extra) == Placement(JobStatus.PENDING, T0 + MINUTE, None, 0, clear_deferred=True)


def test_a_lost_attempt_retries_at_once_and_the_last_one_dies() -> None:
    assert after_lost(job(attempt=1), T0) == Placement(JobStatus.FAILED, T0, T0, 1)
    assert after_lost(job(attempt=6), T0).status is JobStatus.DEAD


def test_a_writer_dispatches_whatever_would_not_wait_ahead() -> None:
    """Past the next tick's horizon too: no due time a writer places is left for a tick to claim."""
    reach = c.WRITER_DISPATCH_SECONDS * 1000
    assert reach > c.DISPATCH_HORIZON_SECONDS * 1000
    assert Placement(JobStatus.PENDING, T0, T0 + reach, 0).dispatches_now(T0)
    assert Placement(JobStatus.FAILED, T0, T0 + reach, 1).dispatches_now(T0)
    assert not Placement(JobStatus.PENDING, T0, T0 + reach + 1, 0).dispatches_now(T0)
    assert not Placement(JobStatus.SUCCEEDED, T0, None, 0).dispatches_now(T0)


def test_only_a_placement_beyond_the_horizon_and_its_margin_waits_ahead() -> None:
    ahead = (c.DISPATCH_HORIZON_SECONDS + c.AHEAD_MARGIN_SECONDS) * 1000
    assert Placement(JobStatus.PENDING, T0, T0 + ahead + 1, 0).waits_ahead(T0)
    assert Placement(JobStatus.FAILED, T0, T0 + ahead + 1, 1).waits_ahead(T0)
    assert not Placement(JobStatus.PENDING, T0, T0 + ahead, 0).waits_ahead(T0)
    assert not Placement(JobStatus.PENDING, T0, None, 0).waits_ahead(T0)
    assert not Placement(JobStatus.SUCCEEDED, T0, T0 + 2 * ahead, 0).waits_ahead(T0)


def test_a_resent_lease_doubles_twice_then_holds() -> None:
    """A backlog costs a few re-sends, yet a message that keeps going astray is re-sent again
    within four lease periods: an uncapped doubling held one job past a 15-minute drain."""
    period = lease_seconds(c.LEASE_CHUNK_SECONDS) * 1000
    leases = [resend_lease(T0, resent) - T0 for resent in range(8)]
    assert leases[:3] == [period, 2 * period, 4 * period]
    assert set(leases[3:]) == {4 * period}
    assert 4 * period <= 12 * MINUTE
