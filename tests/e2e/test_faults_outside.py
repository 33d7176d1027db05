"""`sundial local` on an emulator that misbehaves as AWS does, seen from outside over HTTP.

The emulator loses the answers of applied DynamoDB writes, throttles, refuses and duplicates SQS sends
(sundial/local_stack/faults.py, FaultyApp); Sundial sees those faults only as HTTP answers after its SDK's
retries. Whatever it sees, every one-off must run exactly once, every recurring occurrence must start
on schedule, and every failing job must use up its retries and die, no more and no fewer.
"""

from __future__ import annotations

import itertools
import os
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api import Api, Json, rfc3339
from tests.e2e.checks import Checks
from tests.e2e.listener import Call, Listener
from tests.e2e.processes import Process, emulator_url_in_banner, injected_faults, start_local

pytestmark = pytest.mark.e2e

FAULTS = "lost-answer=0.03,throttle=0.08,sqs-refuse=0.05,sqs-duplicate=0.03"
# Fixed so that a failure can be chased again; threads still interleave as they will.
SEED = int(os.environ.get("SUNDIAL_E2E_FAULT_SEED", "20261130"))
TICK_SECONDS = 10
ONE_OFFS = 160
ONE_OFF_LEAD_SECONDS = 5.0
ONE_OFF_SPREAD_SECONDS = 30.0
RATE_JOBS = 10
RATE = "rate(10 seconds)"
MIN_OCCURRENCES = 6
FAILING_JOBS = 8
MAX_RETRIES = 2
BACKOFF = [2, 4]
OBSERVE_SECONDS = 90.0
# Every other one-off is created with an Idempotency-Key and sent again after a 5xx.
KEYED_EVERY = 2


@dataclass
class Created:
    """What the client knows after its creates: the ids it was given, and what went wrong."""

    one_offs: dict[str, str] = field(default_factory=dict)  # name -> id
    rate: dict[str, str] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)
    answers: Counter[int] = field(default_factory=Counter)
    server_errors_retried: int = 0
    unkeyed_failures: dict[str, tuple[int, Any]] = field(default_factory=dict)  # name -> answer
    keyed_failures: dict[str, tuple[int, Any]] = field(default_factory=dict)


def test_jobs_run_exactly_once_on_a_faulty_emulator(logs: Path, listener: Listener) -> None:
    local, url = start_local(
        logs,
        *("--tick-seconds", str(TICK_SECONDS)),
        *("--faults", FAULTS, "--fault-seed", str(SEED)),
        name="faults-local",
    )
    try:
        _run(Api(url), listener, local)
    finally:
        local.stop()


def _run(api: Api, listener: Listener, local: Process) -> None:
    emulator_url = emulator_url_in_banner(local.output())
    run_id = uuid.uuid4().hex[:8]
    started = time.time()
    created = Created()
    _create_recurring_and_failing(api, listener, run_id, created)
    _create_one_offs(api, listener, run_id, created)
    created_by = time.time()
    _resolve_unanswered(api, run_id, created)
    # The window runs from the first create, so the recurring jobs have had all of it.
    time.sleep(max(0.0, started + OBSERVE_SECONDS - time.time()))
    calls = [call for call in listener.calls() if run_id in call.path]
    jobs = {job_id: _job(api, job_id) for job_id in _all_ids(created)}
    faults = injected_faults(emulator_url)

    checks = Checks(f"faulty emulator ({FAULTS}, seed {SEED})")
    checks.note(f"creates took {created_by - started:.1f} s; answers {dict(created.answers)}")
    checks.note(f"faults injected: {faults}")
    _check_faults_fired(checks, faults)
    _check_creates(checks, created)
    _check_one_offs(checks, created, calls, jobs)
    _check_recurring(checks, created, calls, started)
    _check_failing(checks, created, calls, jobs)
    _check_no_success_twice(checks, calls)
    checks.note(f"wall time to the checks: {time.time() - started:.0f} s")
    checks.verify()


# --- creating -------------------------------------------------------------------------------------


def _target(listener: Listener, outcome: str, run_id: str, name: str) -> Json:
    return {"type": "http", "url": listener.url(f"{outcome}/{run_id}/{name}")}


def _create_recurring_and_failing(api: Api, listener: Listener, run_id: str, created: Created) -> None:
    for n in range(RATE_JOBS):
        name = f"rate-{n}"
        fields = {"name": name, "schedule": RATE, "target": _target(listener, "ok", run_id, name)}
        _create_keyed(api, run_id, name, fields, created, created.rate)
    for n in range(FAILING_JOBS):
        name = f"failing-{n}"
        failing: Json = {
            "name": name,
            "target": _target(listener, "fail", run_id, name),
            "max_retries": MAX_RETRIES,
            "backoff": BACKOFF,
        }
        _create_keyed(api, run_id, name, failing, created, created.failing)


def _create_one_offs(api: Api, listener: Listener, run_id: str, created: Created) -> None:
    first = time.time() + ONE_OFF_LEAD_SECONDS
    for n in range(ONE_OFFS):
        name = f"once-{n}"
        # Spread over the window; never in the past, should creating fall behind.
        instant = max(first + n * ONE_OFF_SPREAD_SECONDS / ONE_OFFS, time.time() + 1.0)
        fields = {
            "name": name,
            "run_at": rfc3339(instant),
            "target": _target(listener, "ok", run_id, name),
            "priority": ("high", "medium", "low")[n % 3],
        }
        if n % KEYED_EVERY == 0:
            _create_keyed(api, run_id, name, fields, created, created.one_offs)
        else:
            _create_once(api, name, fields, created)


def _create_keyed(
    api: Api, run_id: str, name: str, fields: Json, created: Created, into: dict[str, str]
) -> None:
    status, body, retried = api.create_idempotently(f"{run_id}-{name}", fields)
    created.answers[status] += 1
    created.server_errors_retried += retried
    if status in (200, 201):
        into[name] = str(body["id"])
    else:
        created.keyed_failures[name] = (status, body)


def _create_once(api: Api, name: str, fields: Json, created: Created) -> None:
    """A create without a key: a client cannot safely send it again, so an error is final to it."""
    status, body = api.call("POST", "/jobs", fields)
    created.answers[status] += 1
    if status == 201:
        created.one_offs[name] = str(body["id"])
    else:
        created.unkeyed_failures[name] = (status, body)


def _resolve_unanswered(api: Api, run_id: str, created: Created) -> None:
    """A create that failed may still have stored its job; the listing says, and such a job must run
    like the others (a job stored but never run is a job lost)."""
    if not created.unkeyed_failures:
        return
    names = set(created.unkeyed_failures)
    for job in api.all_jobs():
        if job["name"] in names and run_id in str(job["target"].get("url", "")):
            created.one_offs.setdefault(str(job["name"]), str(job["id"]))


def _all_ids(created: Created) -> list[str]:
    return [*created.one_offs.values(), *created.rate.values(), *created.failing.values()]


def _job(api: Api, job_id: str) -> Json:
    status, job = api.call_patiently("GET", f"/jobs/{job_id}")
    return dict(job) if status == 200 else {"status": f"GET answered {status}: {job}"}


# --- checking -------------------------------------------------------------------------------------


def _calls_of(calls: list[Call], job_id: str) -> list[Call]:
    return [call for call in calls if call.job_id == job_id]


def _check_faults_fired(checks: Checks, faults: dict[str, int]) -> None:
    for kind in ("lost-answer", "throttle", "sqs-refuse", "sqs-duplicate"):
        checks.check(faults.get(kind, 0) > 0, f"no {kind} fault was injected: {faults}")


def _check_creates(checks: Checks, created: Created) -> None:
    checks.note(f"5xx answers to keyed creates, sent again: {created.server_errors_retried}")
    checks.check(
        not created.keyed_failures,
        f"{len(created.keyed_failures)} keyed create(s) never succeeded, even sent again: "
        f"{_sample(created.keyed_failures)}",
    )
    stored = [name for name in created.unkeyed_failures if name in created.one_offs]
    checks.check(
        not stored,
        f"{len(stored)} unkeyed create(s) answered an error yet stored the job: "
        f"{_sample({name: created.unkeyed_failures[name] for name in stored})}",
    )
    refused = len(created.unkeyed_failures) - len(stored)
    checks.note(f"unkeyed creates answered an error and not stored: {refused}")


def _check_one_offs(checks: Checks, created: Created, calls: list[Call], jobs: dict[str, Json]) -> None:
    counts = {name: len(_calls_of(calls, job_id)) for name, job_id in created.one_offs.items()}
    lost = sorted(name for name, count in counts.items() if count == 0)
    twice = {name: count for name, count in counts.items() if count > 1}
    checks.note(f"one-offs known to the client: {len(created.one_offs)} of {ONE_OFFS}")
    checks.check(
        not lost,
        f"{len(lost)} one-off(s) never called: {_sample(lost)}; {_statuses(lost, created, jobs)}",
    )
    checks.check(not twice, f"{len(twice)} one-off(s) called more than once: {_sample(twice)}")
    unfinished = {
        name: jobs[job_id]["status"]
        for name, job_id in created.one_offs.items()
        if jobs[job_id]["status"] != "succeeded"
    }
    checks.check(not unfinished, f"{len(unfinished)} one-off(s) not succeeded: {_sample(unfinished)}")


def _check_recurring(checks: Checks, created: Created, calls: list[Call], started: float) -> None:
    window_end = started + OBSERVE_SECONDS
    occurrences: dict[str, int] = {}
    repeated: dict[str, int] = {}
    for name, job_id in created.rate.items():
        keys = Counter(c.idempotency_key for c in _calls_of(calls, job_id) if c.received_at <= window_end)
        occurrences[name] = len(keys)
        repeated[name] = sum(count - 1 for count in keys.values())
    checks.note(f"{RATE} occurrences per job in {OBSERVE_SECONDS:.0f} s: {occurrences}")
    few = {name: count for name, count in occurrences.items() if count < MIN_OCCURRENCES}
    checks.check(not few, f"{len(few)} {RATE} job(s) had fewer than {MIN_OCCURRENCES} occurrences: {few}")
    twice = {name: count for name, count in repeated.items() if count}
    checks.check(not twice, f"{RATE} occurrences called more than once (extra calls per job): {twice}")


def _check_failing(checks: Checks, created: Created, calls: list[Call], jobs: dict[str, Json]) -> None:
    expected = list(range(1, MAX_RETRIES + 2))
    wrong = {}
    for name, job_id in created.failing.items():
        attempts = sorted(call.attempt for call in _calls_of(calls, job_id))
        status = jobs[job_id]["status"]
        if attempts != expected or status != "dead":
            wrong[name] = f"attempts {attempts}, status {status}"
    checks.check(
        not wrong,
        f"{len(wrong)} failing job(s) not called exactly {len(expected)} times (attempts {expected}) "
        f"and then dead: {wrong}",
    )


def _check_no_success_twice(checks: Checks, calls: list[Call]) -> None:
    keys = Counter(call.idempotency_key for call in calls if call.succeeded)
    twice = {key: count for key, count in keys.items() if count > 1}
    checks.check(not twice, f"{len(twice)} Idempotency-Key(s) answered 2xx more than once: {_sample(twice)}")


def _statuses(names: list[str], created: Created, jobs: dict[str, Json]) -> str:
    counted = Counter(str(jobs[created.one_offs[name]]["status"]) for name in names)
    return f"their statuses: {dict(counted)}"


def _sample(items: Any, size: int = 8) -> str:
    """A few of many, so that a failure message stays readable."""
    pairs = list(items.items()) if isinstance(items, dict) else list(items)
    shown = ", ".join(str(pair) for pair in itertools.islice(pairs, size))
    return f"[{shown}{', ...' if len(pairs) > size else ''}]"
