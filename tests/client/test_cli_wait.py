"""`sundial jobs wait` and the exit codes of a --watch that sees the job end: the rule for what
ends a wait (one-off and recurring), then the command against the local stack."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from sundial.commands.exits import ENDED_CANCELLED, ENDED_DEAD, OK, WAIT_TIMED_OUT
from sundial.commands.wait import FINAL, SUCCEEDED, ending, wait_for
from sundial.contract.jobs import JobView, LastRun
from tests.client.test_cli_conventions import create, run
from tests.client.test_signing import JOB

RECURRING = "rate(1 minute)"


def job(status: str = "pending", schedule: str | None = None, run: dict[str, Any] | None = None) -> JobView:
    return JobView.model_validate({**JOB, "status": status, "schedule": schedule, "last_run": run})


def ran(
    status: str, at: str = "2030-01-01T00:00:00Z", finished: str = "2030-01-01T00:00:01Z"
) -> dict[str, Any]:
    return {"scheduled_at": at, "status": status, "started_at": at, "finished_at": finished, "error": None}


def last(run: dict[str, Any] | None) -> LastRun | None:
    return None if run is None else LastRun.model_validate(run)


EARLIER, LATER = (
    ran("succeeded"),
    ran("succeeded", at="2030-01-01T00:01:00Z", finished="2030-01-01T00:01:02Z"),
)


@pytest.mark.parametrize(
    ("now", "baseline", "code"),
    [
        # A one-off: its status says it all.
        (job("pending"), None, None),
        (job("running"), None, None),
        (job("failed", run=ran("failed")), None, None),  # a retry is to come
        (job("succeeded", run=ran("succeeded")), None, OK),
        (job("dead", run=ran("dead")), None, ENDED_DEAD),
        (job("cancelled"), None, ENDED_CANCELLED),
        # A recurring job: pending again after each occurrence, so its last_run says how one ended.
        (job("pending", RECURRING, EARLIER), EARLIER, None),  # the same run as at the start
        (job("pending", RECURRING, LATER), EARLIER, OK),
        (job("pending", RECURRING, ran("dead", at=LATER["scheduled_at"])), EARLIER, ENDED_DEAD),
        (job("failed", RECURRING, ran("failed", at=LATER["scheduled_at"])), EARLIER, None),
        (job("pending", RECURRING, EARLIER), None, OK),  # none at the start: this one ended since
        (job("running", RECURRING, None), None, None),
        # ... and one with nothing left to run ends the wait by its status.
        (job("cancelled", RECURRING, EARLIER), EARLIER, ENDED_CANCELLED),
        (job("succeeded", RECURRING, EARLIER), EARLIER, OK),
    ],
)
def test_what_ends_a_wait(now: JobView, baseline: dict[str, Any] | None, code: int | None) -> None:
    assert ending(now, last(baseline)) == code


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def reads(*jobs: JobView) -> Iterator[JobView]:
    return itertools.chain(jobs, itertools.repeat(jobs[-1]))


def test_final_ends_at_a_dead_occurrence_succeeded_waits_for_a_good_one() -> None:
    dead = ran("dead", at="2030-01-01T00:01:00Z")
    good = ran("succeeded", at="2030-01-01T00:02:00Z")
    story = [
        job("pending", RECURRING, EARLIER),
        job("pending", RECURRING, dead),
        job("pending", RECURRING, good),
    ]
    for until, code, reached in ((FINAL, ENDED_DEAD, dead), (SUCCEEDED, OK, good)):
        clock, answers = Clock(), reads(*story)
        waited = wait_for(answers.__next__, until, None, 2.0, clock, clock.sleep)
        assert (waited.code, waited.job.last_run) == (code, last(reached))


def test_succeeded_still_ends_at_a_one_off_that_died() -> None:
    clock, answers = Clock(), reads(job("running"), job("dead", run=ran("dead")))
    assert wait_for(lambda: next(answers), SUCCEEDED, None, 1.0, clock, clock.sleep).code == ENDED_DEAD


def test_the_timeout_ends_it_without_sleeping_past_it() -> None:
    clock, answers = Clock(), reads(job("pending"))
    waited = wait_for(lambda: next(answers), FINAL, 5.0, 2.0, clock, clock.sleep)
    assert waited.code == WAIT_TIMED_OUT and clock.now <= 5.0


# --- against the local stack ------------------------------------------------------------------------


@pytest.mark.e2e
def test_wait_exits_0_when_the_job_succeeds_and_6_when_it_dies(local_api: str) -> None:
    good = create(local_api, "--target-python", "noop")
    bad = create(local_api, "--target-python", "fail", "--max-retries", "0")
    succeeded = run(
        "jobs",
        "wait",
        good["id"].lower(),
        "--api",
        local_api,
        "--interval",
        "0.5",
        "--timeout",
        "60",
        "-o",
        "json",
    )
    died = run("--api", local_api, "jobs", "wait", bad["id"], "--interval", "0.5", "--timeout", "60")
    assert succeeded.returncode == OK, succeeded.stderr
    assert '"status": "succeeded"' in succeeded.stdout
    assert died.returncode == ENDED_DEAD, died.stderr
    assert f"job {bad['id']} ended dead: " in died.stderr and "fail handler always fails" in died.stderr
    # A --watch that sees it end exits the same way.
    watched = run("jobs", "get", bad["id"], "--watch", "--interval", "0.5", "--api", local_api, "-o", "jsonl")
    assert watched.returncode == ENDED_DEAD, watched.stderr


@pytest.mark.e2e
def test_wait_exits_7_for_a_cancelled_job_and_124_after_its_timeout(local_api: str) -> None:
    later = create(local_api, "--target-python", "noop", "--in", "1d")
    timed_out = run("jobs", "wait", later["id"], "--api", local_api, "--timeout", "1", "--interval", "0.2")
    assert timed_out.returncode == WAIT_TIMED_OUT, timed_out.stderr
    assert "still pending after 1 s" in timed_out.stderr
    assert run("jobs", "cancel", later["id"], "--api", local_api).returncode == OK
    cancelled = run("jobs", "wait", later["id"], "--api", local_api, "--until", "succeeded")
    assert cancelled.returncode == ENDED_CANCELLED, cancelled.stderr
    watched = run("jobs", "runs", later["id"], "--watch", "--api", local_api)
    assert watched.returncode == ENDED_CANCELLED, watched.stderr
