"""The scale model (bench/scale) is honest: the same scenario on it and on `sundial local` leaves
every job alike: status, attempts, health, next run, calls per occurrence and attempt, history."""

from __future__ import annotations

import time

import pytest

from bench.scale import agreement
from tests.e2e.conftest import Stack
from tests.e2e.listener import Listener

pytestmark = pytest.mark.e2e

JOBS = 300
CREATES_PER_SECOND = 15  # the local API's one-at-a-time creates, on a busy machine, at the least
# After the base: the local stack's few workers work through retries backed up behind the one-offs.
SETTLE_SECONDS = 120


def _calls_expected(planned: list[agreement.Planned]) -> int:
    """One call a job that answers, every attempt of one that fails (one occurrence each)."""
    return sum((2 if job.recurring else 3) if job.fails else 1 for job in planned)


def _base_ms() -> int:
    """The base instant: once every create is done."""
    return int((time.time() + JOBS / CREATES_PER_SECOND + 5) * 1000)


def _settled(stack: Stack, job: agreement.Planned, job_id: str, base_ms: int) -> bool:
    return agreement.settled(job, stack.api.job(job_id), stack.api.runs(job_id), base_ms)


def test_the_model_and_the_local_stack_leave_every_job_alike(stack: Stack, listener: Listener) -> None:
    base_ms = _base_ms()
    planned = agreement.plan(JOBS, base_ms)
    created_at = time.time()
    ids = {}
    for job in planned:
        ids[job.name] = stack.api.create(**agreement.with_endpoint(job.body, listener.base_url))["id"]
    assert time.time() < base_ms / 1000, "the creates took longer than the plan allowed"
    lead_s = base_ms / 1000 - created_at

    mine = set(ids.values())
    expected = _calls_expected(planned)
    # Waits for the calls and the settles without failing: the comparison below says what differs.
    deadline = base_ms / 1000 + SETTLE_SECONDS
    while sum(call.job_id in mine for call in listener.calls()) < expected and time.time() < deadline:
        time.sleep(0.5)
    unsettled = list(planned)
    while unsettled and time.time() < deadline:
        unsettled = [job for job in unsettled if not _settled(stack, job, ids[job.name], base_ms)]
        time.sleep(0.5)
    observed_s = time.time() - base_ms / 1000

    calls = [
        agreement.Call(call.job_id, round(call.scheduled_at * 1000), call.attempt)
        for call in listener.calls()
        if call.job_id in mine
    ]
    local = agreement.read_back(planned, ids, stack.api.job, stack.api.runs, calls, base_ms)
    model = agreement.simulate(JOBS, agreement.model_base_ms(base_ms), lead_s, observed_s)
    differing = agreement.differences(model, local)
    assert not differing, f"{len(differing)} of {JOBS} jobs differ, e.g.\n" + "\n".join(differing[:6])
    # The scenario did what it is for: retries, deaths and a scheduled occurrence on both sides.
    statuses = {outcome["status"] for outcome in local.values()}
    assert {"succeeded", "dead"} <= statuses
    assert any(job.recurring and local[job.name]["next_run_at"] for job in planned)
