"""What a user does to a job while it runs or waits (cancel, pause, resume, trigger, update), over HTTP
on `sundial local`, held to docs/api.md's promises: every such call answers 200 with the job as it now is;
a cancelled job starts no further attempt; no new occurrence starts while paused; an update never
re-runs an occurrence that already ran and never revives a cancelled job.

The target holds each call HOLD_SECONDS, so an attempt is observably running while the user acts.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api import Api, Json, parse_rfc3339, rfc3339
from tests.e2e.checks import Checks
from tests.e2e.listener import Call, Listener
from tests.e2e.processes import start_local

pytestmark = pytest.mark.e2e

TICK_SECONDS = 10
HOLD_SECONDS = 4
RATE_SECONDS = 10
RATE = f"rate({RATE_SECONDS} seconds)"
FIRST_CALL_SECONDS = 25.0  # a rate(10 seconds) job's first occurrence, with a tick's slack
QUIET_SECONDS = 30.0
SETTLE_SECONDS = 2.0  # for an attempt's completion to reach the table after the target answered


@pytest.fixture(scope="module")
def api(logs: Path) -> Iterator[Api]:
    """A local stack of its own, fault-free, with a short tick."""
    local, url = start_local(logs, "--tick-seconds", str(TICK_SECONDS), name="user-actions")
    try:
        yield Api(url)
    finally:
        local.stop()


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex[:8]


# --- helpers --------------------------------------------------------------------------------------


def _slow(listener: Listener, run_id: str, name: str) -> Json:
    return {"type": "http", "url": listener.url(f"sleep/{HOLD_SECONDS}/{run_id}/{name}")}


def _fast(listener: Listener, run_id: str, name: str) -> Json:
    return {"type": "http", "url": listener.url(f"ok/{run_id}/{name}")}


def _first_call(
    listener: Listener, job_id: str, after: float = 0.0, timeout: float = FIRST_CALL_SECONDS
) -> Call:
    call = _await_call(listener, job_id, after, timeout)
    assert call is not None, f"job {job_id} was not called within {timeout:.0f} s"
    return call


def _await_call(listener: Listener, job_id: str, after: float, timeout: float) -> Call | None:
    """The first call that arrived after `after`, waiting up to `timeout` for one; None if none came."""
    deadline = time.monotonic() + timeout
    while True:
        calls = [call for call in listener.calls(job_id) if call.received_at > after]
        if calls:
            return calls[0]
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _calls_after(listener: Listener, job_id: str, after: float) -> list[Call]:
    return [call for call in listener.calls(job_id) if call.received_at > after]


def _sleep_until(instant: float) -> None:
    time.sleep(max(0.0, instant - time.time()))


def _act(api: Api, checks: Checks, method: str, path: str, job_id: str, body: Any = None) -> Json:
    """One user action, held to 'answers 200 with the job as it now is'; returns the job answered."""
    status, answer = api.call(method, path, body)
    what = f"{method} {path}"
    checks.note(f"{what} -> {status} {_brief(answer)}")
    answered_job = isinstance(answer, dict) and answer.get("id") == job_id
    checks.check(
        status == 200 and answered_job, f"{what} answered {status} {_brief(answer)}, not 200 with the job"
    )
    return dict(answer) if isinstance(answer, dict) else {}


def _brief(answer: Any) -> str:
    """A job as the fields these tests look at; anything else (an error) whole."""
    if not isinstance(answer, dict) or "id" not in answer:
        return repr(answer)
    keys = ("status", "paused", "attempt", "next_run_at", "run_at", "priority")
    return repr({key: answer.get(key) for key in keys})


def _wait_for_status(api: Api, job_id: str, statuses: set[str], timeout: float) -> Json:
    """The job once its status is in `statuses`, or as it is after `timeout` (the caller checks)."""
    return _wait_until_job(api, job_id, lambda job: job["status"] in statuses, timeout)


def _wait_until_job(api: Api, job_id: str, holds: Callable[[Json], bool], timeout: float) -> Json:
    """The job once `holds` is true of it, or as it is after `timeout` (the caller checks)."""
    deadline = time.monotonic() + timeout
    while True:
        job = api.job(job_id)
        if holds(job) or time.monotonic() > deadline:
            return job
        time.sleep(0.2)


def _create_rate(api: Api, listener: Listener, run_id: str, name: str) -> str:
    job = api.create(name=name, schedule=RATE, target=_slow(listener, run_id, name), priority="high")
    return str(job["id"])


def _create_one_off(api: Api, target: Json, name: str, in_seconds: float) -> Json:
    return api.create(name=name, run_at=rfc3339(time.time() + in_seconds), target=target, priority="high")


# --- (a) cancel while running ---------------------------------------------------------------------


def test_cancel_while_an_attempt_runs(api: Api, listener: Listener, run_id: str) -> None:
    checks = Checks("cancel a rate(10 seconds) job while its attempt runs")
    job_id = _create_rate(api, listener, run_id, "cancel-running")
    first = _first_call(listener, job_id)

    _act(api, checks, "DELETE", f"/jobs/{job_id}", job_id)
    finished = first.received_at + HOLD_SECONDS
    _sleep_until(finished + SETTLE_SECONDS)
    job = _wait_for_status(api, job_id, {"cancelled"}, timeout=10)
    checks.check(job["status"] == "cancelled", f"after the attempt finished the job is {_brief(job)}")
    _sleep_until(finished + QUIET_SECONDS)

    later = _calls_after(listener, job_id, first.received_at)
    checks.check(
        not later,
        f"{len(later)} call(s) within {QUIET_SECONDS:.0f} s after the cancel: "
        f"{[round(call.received_at - finished, 1) for call in later]} s after the attempt finished",
    )
    checks.note(f"runs: {[(run['attempt'], run['status']) for run in api.runs(job_id)]}")
    checks.verify()


# --- (b) pause while running ----------------------------------------------------------------------


def test_pause_while_an_attempt_runs(api: Api, listener: Listener, run_id: str) -> None:
    checks = Checks("pause a rate(10 seconds) job while its attempt runs")
    job_id = _create_rate(api, listener, run_id, "pause-running")
    first = _first_call(listener, job_id)

    paused = _act(api, checks, "POST", f"/jobs/{job_id}/pause", job_id)
    checks.check(paused.get("paused") is True, f"the pause answered {_brief(paused)}")
    finished = first.received_at + HOLD_SECONDS
    _sleep_until(finished + QUIET_SECONDS)

    later = _calls_after(listener, job_id, first.received_at)
    checks.check(
        not later,
        f"{len(later)} occurrence(s) started while paused, "
        f"{[round(call.received_at - finished, 1) for call in later]} s after the attempt finished",
    )
    job = api.job(job_id)
    checks.check(job["paused"] is True, f"the job after {QUIET_SECONDS:.0f} s paused: {_brief(job)}")
    checks.note(f"runs: {[(run['attempt'], run['status']) for run in api.runs(job_id)]}")
    api.call("DELETE", f"/jobs/{job_id}")
    checks.verify()


# --- (c) pause, trigger, resume during the triggered attempt --------------------------------------


def test_resume_during_a_triggered_attempt_keeps_the_schedule(
    api: Api, listener: Listener, run_id: str
) -> None:
    checks = Checks("pause, trigger, resume during the triggered attempt")
    job_id = _create_rate(api, listener, run_id, "pause-trigger-resume")
    first = _first_call(listener, job_id)
    _sleep_until(first.received_at + HOLD_SECONDS + SETTLE_SECONDS)

    _act(api, checks, "POST", f"/jobs/{job_id}/pause", job_id)
    triggered_at = time.time()
    _act(api, checks, "POST", f"/jobs/{job_id}/trigger", job_id)
    triggered = _await_call(listener, job_id, first.received_at, timeout=10)
    if checks.check(triggered is not None, "the triggered occurrence was not called within 10 s"):
        assert triggered is not None
        checks.note(f"the triggered call came {triggered.received_at - triggered_at:.2f} s after the trigger")
        _resume_during(api, listener, checks, job_id, triggered)
    checks.note(f"runs: {[(run['attempt'], run['status']) for run in api.runs(job_id)]}")
    api.call("DELETE", f"/jobs/{job_id}")
    checks.verify()


def _resume_during(api: Api, listener: Listener, checks: Checks, job_id: str, triggered: Call) -> None:
    resumed = _act(api, checks, "POST", f"/jobs/{job_id}/resume", job_id)
    checks.check(
        time.time() < triggered.received_at + HOLD_SECONDS,
        "the resume came after the triggered attempt finished (the test was too slow)",
    )
    checks.check(resumed.get("paused") is False, f"the resume answered {_brief(resumed)}")
    _sleep_until(triggered.received_at + HOLD_SECONDS + SETTLE_SECONDS)

    # Between occurrences the job shows its next one (while one runs it shows none, so wait for a gap).
    job = _wait_until_job(api, job_id, lambda job: job["next_run_at"] is not None, timeout=RATE_SECONDS + 2)
    checks.check(
        job["next_run_at"] is not None and job["paused"] is False,
        f"after the triggered attempt the job shows no next occurrence: {_brief(job)}",
    )
    _sleep_until(triggered.received_at + HOLD_SECONDS + QUIET_SECONDS)
    following = _calls_after(listener, job_id, triggered.received_at)
    checks.check(
        len(following) >= 2,
        f"{len(following)} occurrence(s) in the {QUIET_SECONDS:.0f} s after the triggered attempt, "
        f"not the 2 or more of {RATE}: {_brief(api.job(job_id))}",
    )


# --- (d) updates on finished and cancelled jobs ---------------------------------------------------


@dataclass(frozen=True)
class _Subject:
    """A job in the state an update meets, and what must stay true of it afterwards."""

    label: str
    job_id: str
    status: str  # the status it must keep
    calls: int  # the calls its target must have had in all


def test_updates_never_rerun_a_finished_job_nor_revive_a_cancelled_one(
    api: Api, listener: Listener, run_id: str
) -> None:
    checks = Checks("PATCH on a succeeded one-off and on cancelled jobs")
    # A set of jobs for each kind of change, so that a wrong answer to one cannot spoil the other.
    by_priority = _subjects(api, listener, checks, run_id, "priority")
    by_timing = _subjects(api, listener, checks, run_id, "timing")
    for subject in by_priority + by_timing:
        if subject.status == "succeeded":
            job = _wait_for_status(api, subject.job_id, {"succeeded"}, timeout=20)
            checks.check(job["status"] == "succeeded", f"the {subject.label} did not succeed: {_brief(job)}")
    start = time.time()

    for subject in by_priority:
        _patch_priority(api, checks, subject)
    for subject in by_timing:
        timing = (
            {"schedule": "rate(5 seconds)"} if "rate" in subject.label else {"run_at": rfc3339(start + 4)}
        )
        _patch_timing(api, checks, subject, timing)
    _sleep_until(start + 15)

    for subject in by_priority + by_timing:
        job, calls = api.job(subject.job_id), len(listener.calls(subject.job_id))
        what = f"the {subject.label} after a {'priority' if subject in by_priority else 'timing'} change"
        checks.check(job["status"] == subject.status, f"{what} is {_brief(job)}")
        checks.check(calls == subject.calls, f"{what} was called {calls} time(s) in all, not {subject.calls}")
    checks.verify()


def _subjects(api: Api, listener: Listener, checks: Checks, run_id: str, purpose: str) -> list[_Subject]:
    """A one-off about to succeed, a cancelled one-off and a cancelled rate(10 seconds) job."""
    done = _create_one_off(api, _fast(listener, run_id, f"{purpose}-done"), f"{purpose}-done", 2.0)
    once = _create_one_off(api, _fast(listener, run_id, f"{purpose}-once"), f"{purpose}-once", 20.0)
    rate = _create_rate(api, listener, run_id, f"{purpose}-rate")
    for job_id in (str(once["id"]), rate):
        _act(api, checks, "DELETE", f"/jobs/{job_id}", job_id)
    return [
        _Subject("succeeded one-off", str(done["id"]), "succeeded", 1),
        _Subject("cancelled one-off", str(once["id"]), "cancelled", 0),
        _Subject("cancelled rate job", rate, "cancelled", 0),
    ]


def _patch_priority(api: Api, checks: Checks, subject: _Subject) -> None:
    status, answer = api.call("PATCH", f"/jobs/{subject.job_id}", {"priority": "high"})
    what = f"PATCH priority on the {subject.label}"
    checks.note(f"{what} -> {status} {_brief(answer)}")
    checks.check(status in (200, 409), f"{what} answered {status} {_brief(answer)}")
    if status == 200:
        checks.check(answer.get("status") == subject.status, f"{what} answered the job {_brief(answer)}")


def _patch_timing(api: Api, checks: Checks, subject: _Subject, change: Json) -> None:
    status, answer = api.call("PATCH", f"/jobs/{subject.job_id}", change)
    what = f"PATCH {sorted(change)} on the {subject.label}"
    checks.note(f"{what} -> {status} {answer if status != 200 else _brief(answer)}")
    message = answer.get("message") if isinstance(answer, dict) else None
    checks.check(
        status == 409 and bool(message), f"{what} answered {status} {_brief(answer)}, not 409 with a message"
    )


# --- (e) trigger while queued or running, cancel while queued -------------------------------------


def test_trigger_while_queued_or_running_and_cancel_while_queued(
    api: Api, listener: Listener, run_id: str
) -> None:
    checks = Checks("trigger while queued or running; cancel while queued")
    running = str(
        _create_one_off(api, _slow(listener, run_id, "trigger-running"), "trigger-running", 1.0)["id"]
    )
    queued = _create_one_off(api, _fast(listener, run_id, "trigger-queued"), "trigger-queued", 12.0)
    doomed = _create_one_off(api, _fast(listener, run_id, "cancel-queued"), "cancel-queued", 8.0)
    for job in (queued, doomed):
        checks.note(f"{job['name']} answered {job['status']} at create")

    _cancel_while_queued(api, checks, doomed)
    _trigger_while_queued(api, listener, checks, queued)
    _trigger_while_running(api, listener, checks, running)

    _sleep_until(parse_rfc3339(str(doomed["run_at"])) + 10)
    calls = listener.calls(str(doomed["id"]))
    checks.check(not calls, f"the job cancelled while queued was called {len(calls)} time(s)")
    checks.check(
        api.job(str(doomed["id"]))["status"] == "cancelled", "the job cancelled while queued is not cancelled"
    )
    checks.note(f"calls of the job triggered while queued: {len(listener.calls(str(queued['id'])))}")
    checks.verify()


def _cancel_while_queued(api: Api, checks: Checks, job: Json) -> None:
    job_id = str(job["id"])
    answer = _act(api, checks, "DELETE", f"/jobs/{job_id}", job_id)
    checks.check(answer.get("status") == "cancelled", f"DELETE while queued answered {_brief(answer)}")


def _trigger_while_queued(api: Api, listener: Listener, checks: Checks, job: Json) -> None:
    job_id = str(job["id"])
    triggered_at = time.time()
    _act(api, checks, "POST", f"/jobs/{job_id}/trigger", job_id)
    call = _await_call(listener, job_id, triggered_at - 1, timeout=3)
    checks.check(call is not None, "a trigger while queued did not run the job at once (no call within 3 s)")


def _trigger_while_running(api: Api, listener: Listener, checks: Checks, job_id: str) -> None:
    first = _first_call(listener, job_id, timeout=10)
    _act(api, checks, "POST", f"/jobs/{job_id}/trigger", job_id)
    timeout = HOLD_SECONDS + 10
    extra = _await_call(listener, job_id, first.received_at, timeout)
    checks.check(
        extra is not None,
        f"a trigger while running ran no extra occurrence within {timeout} s: {_brief(api.job(job_id))}",
    )
