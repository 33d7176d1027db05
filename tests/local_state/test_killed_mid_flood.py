"""300 jobs created over HTTP on `sundial local` with a state directory; both it and its emulator
SIGKILLed mid-flood; both started again on the same directory. Every acknowledged job is there, every
occurrence runs, none succeeds twice (but for attempts cut off by the kill itself), the history read
before the kill is still there, and Idempotency-Keys still name the jobs they created."""

from __future__ import annotations

import contextlib
import http.client
import itertools
import os
import random
import re
import signal
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sundial.local_stack.options import DEFAULT_WORKERS
from tests.e2e.api import Api, rfc3339, wait_until
from tests.e2e.listener import Call, Listener
from tests.e2e.processes import Process, start_local

pytestmark = pytest.mark.e2e

ONE_OFF, FAILING, RECURRING = "one-off", "failing", "recurring"
MIX = {ONE_OFF: 180, FAILING: 60, RECURRING: 60}
KEYED_EVERY = 3  # every third job of each kind is created with an Idempotency-Key
SLOW_EVERY, SLOW_SECONDS = 5, 1.5
LONG, LONG_SECONDS = 4, 8  # running at the kill
EARLY = 30  # created and run before the flood, their history read before the kill
KILL_AFTER = 160  # acknowledged creates, the early ones included
RATE_SECONDS = 15
# An attempt cut off by the kill may have called its target already: that occurrence runs again (its
# target sees the same idempotency key twice). Only calls this close before the kill may repeat.
KILL_WINDOW_SECONDS = 2.0
SETTLE_SECONDS = 150
WORKERS = DEFAULT_WORKERS  # jobs at once: attempts in flight at the kill are at most this many
TICK = ("--tick-seconds", "5")


@dataclass
class Spec:
    n: int
    kind: str
    fields: dict[str, Any]
    key: str | None


@dataclass
class Flood:
    acknowledged: dict[int, str] = field(default_factory=dict)  # spec number → job id
    unanswered: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def test_every_job_survives_a_sigkill_of_both_processes_mid_flood(tmp_path: Path, listener: Listener) -> None:
    state = tmp_path / "state"
    specs = _specs(listener)
    started_at = time.time()
    first, url = start_local(tmp_path, "--state-dir", str(state), *TICK, name="first")
    emulator_pid = _only_child(first.popen.pid)
    flood = Flood()
    try:
        # Some history first, read back before the kill: it must all be there after.
        early = [spec for spec in specs if spec.kind != RECURRING][:EARLY]
        for spec in early:
            _create(Api(url), spec, flood, run_in=0.5)
        early_ids = [flood.acknowledged[spec.n] for spec in early]
        for job_id in early_ids:
            Api(url).wait_for_status(job_id, {"succeeded", "dead"}, timeout=60)
        history_before = _histories(Api(url), early_ids)
        long = [spec for spec in specs if spec.kind == ONE_OFF and spec not in early][:LONG]
        for spec in long:
            # High: a place free for each at once, whatever the flood holds of the other queues.
            spec.fields["priority"] = "high"
            spec.fields["target"]["url"] = listener.url(f"sleep/{LONG_SECONDS}/{spec.n}")
            spec.fields["timeout_seconds"] = 3 * LONG_SECONDS
        with ThreadPoolExecutor(6) as pool:
            rest = [spec for spec in specs if spec not in early and spec not in long]
            # The flood's first part, then the long jobs, then the rest with the kill in its midst:
            # however fast creates are, the kill cannot come after the last of them.
            first_part = KILL_AFTER - 40 - len(early)
            futures = [pool.submit(_create, Api(url), spec, flood) for spec in rest[:first_part]]
            for future in futures:
                future.result()
            # Attempts running when the kill comes, for the restart to hand on.
            for spec in long:
                _create(Api(url), spec, flood, run_in=0.5)
            long_ids = {flood.acknowledged[spec.n] for spec in long}
            called = lambda: long_ids <= {call.job_id for call in listener.calls()}  # noqa: E731
            wait_until(called, 30, "the long jobs did not start")
            futures += [pool.submit(_create, Api(url), spec, flood) for spec in rest[first_part:]]
            wait_until(lambda: len(flood.acknowledged) >= KILL_AFTER, 60, "the flood stalled")
            killed_at = time.time()
            os.kill(emulator_pid, signal.SIGKILL)
            first.kill()
        for future in futures:
            future.result()  # a create answered other than 201 or 5xx fails the test here
    finally:
        _kill(first, emulator_pid)
    assert flood.unanswered, "the kill came after the flood: nothing was cut off"

    second, url = start_local(tmp_path, "--state-dir", str(state), *TICK, name="second")
    try:
        api = Api(url)
        restarted_at = time.time()
        ids = _finish_flood(api, specs, flood)
        created_at = time.time()
        _wait_until_settled(api, specs, ids, second, listener)
        settled_at = time.time()
        _check(api, specs, ids, flood, listener, history_before, killed_at)
        print(
            f"\nkilled {killed_at - started_at:.1f} s in; restarted in {restarted_at - killed_at:.1f} s; "
            f"flood finished in {created_at - restarted_at:.1f} s, "
            f"settled in {settled_at - created_at:.1f} s, checked in {time.time() - settled_at:.1f} s"
        )
        [recovery] = re.findall(r"restarted on saved state: .* jobs", second.output())
        print(recovery)
    finally:
        second.stop()


def _specs(listener: Listener) -> list[Spec]:
    rng = random.Random(15)
    specs: list[Spec] = []
    for kind, count in MIX.items():
        for i in range(count):
            n = len(specs)
            priority = ("high", "medium", "low")[n % 3]
            fields: dict[str, Any] = {"name": f"{kind}-{n}", "timeout_seconds": 10, "priority": priority}
            if kind == ONE_OFF:
                # Some take a while, so that the kill finds attempts running, for the restart to reclaim.
                path = f"sleep/{SLOW_SECONDS}/{n}" if i % SLOW_EVERY == 0 else f"ok/{n}"
                fields |= {"target": {"type": "http", "url": listener.url(path)}}
            elif kind == FAILING:
                fields |= {
                    "target": {"type": "http", "url": listener.url(f"fail/{n}")},
                    "max_retries": 2,
                    "backoff": [1, 2],
                }
            else:
                # What falls due while the kill holds an occurrence back runs after it, each in turn.
                fields |= {
                    "schedule": f"rate({RATE_SECONDS} seconds)",
                    "target": {"type": "http", "url": listener.url(f"ok/{n}")},
                    "overlap_policy": "buffer",
                    "misfire_policy": "run_all",
                }
            key = f"flood-{n}" if i % KEYED_EVERY == 0 else None
            specs.append(Spec(n, kind, fields, key))
    rng.shuffle(specs)
    return specs


def _create(api: Api, spec: Spec, flood: Flood, run_in: float | None = None) -> None:
    fields = dict(spec.fields)
    if spec.kind != RECURRING:
        fields["run_at"] = rfc3339(time.time() + (run_in or random.uniform(1, 20)))
    spec.fields = fields  # what was sent: an Idempotency-Key must be sent again with the same body
    headers = {"Idempotency-Key": spec.key} if spec.key else None
    try:
        status, body = api.call("POST", "/jobs", fields, headers=headers)
    except (OSError, http.client.HTTPException):
        status, body = 0, None
    if status == 0 or status >= 500:  # cut off by the kill: created or not, nobody was told
        with flood.lock:
            flood.unanswered.append(spec.n)
        return
    assert status == 201, body
    with flood.lock:
        flood.acknowledged[spec.n] = body["id"]


def _finish_flood(api: Api, specs: list[Spec], flood: Flood) -> dict[int, str]:
    """Keyed creates are sent again, whether they were answered or not: each names one job. Those
    without a key that were cut off are created anew under another name."""
    ids = dict(flood.acknowledged)
    again = [spec for spec in specs if spec.key or spec.n not in ids]
    with ThreadPoolExecutor(3) as pool:  # the first tick's resends share the emulator meanwhile
        answers = list(pool.map(lambda spec: _create_again(api, spec), again))
    for spec, (status, body) in zip(again, answers, strict=True):
        assert status in (200, 201), body
        if spec.n in ids:  # answered before the kill: the key still names the same job
            assert (status, body["id"]) == (200, ids[spec.n]), f"{spec.key}: {status} {body}"
        ids[spec.n] = body["id"]
    return ids


def _create_again(api: Api, spec: Spec) -> tuple[int, Any]:
    headers = {"Idempotency-Key": spec.key} if spec.key else None
    fields = spec.fields if spec.key else {**spec.fields, "name": f"{spec.fields['name']}-again"}
    if spec.kind != RECURRING and "run_at" not in fields:
        fields = {**fields, "run_at": rfc3339(time.time() + random.uniform(1, 10))}
    return api.call("POST", "/jobs", fields, headers=headers, timeout=60)


def _wait_until_settled(
    api: Api, specs: list[Spec], ids: dict[int, str], stack: Process, listener: Listener
) -> None:
    """Until every one-off has succeeded, every failing job is dead, every recurring one has run."""
    ends = {ONE_OFF: {"succeeded"}, FAILING: {"dead"}}
    waiting = {ids[s.n]: ends[s.kind] for s in specs if s.kind in ends}
    recurring = {ids[s.n] for s in specs if s.kind == RECURRING}

    def settled() -> bool:
        for job in api.all_jobs():
            if job["status"] in waiting.get(job["id"], ()):
                del waiting[job["id"]]
        recurring.difference_update(call.job_id for call in listener.calls() if call.succeeded)
        return not waiting and not recurring

    unsettled = lambda: f"{len(waiting) + len(recurring)} jobs never settled:\n{stack.tail()}"  # noqa: E731
    wait_until(settled, SETTLE_SECONDS, unsettled)


def _check(
    api: Api,
    specs: list[Spec],
    ids: dict[int, str],
    flood: Flood,
    listener: Listener,
    history_before: dict[str, list[dict[str, Any]]],
    killed_at: float,
) -> None:
    present = {job["id"] for job in api.all_jobs()}
    lost = [job_id for job_id in flood.acknowledged.values() if job_id not in present]
    assert lost == [], f"acknowledged jobs missing after the restart: {lost}"
    assert {ids[s.n] for s in specs} <= present

    calls = listener.calls()
    by_key: dict[str, list[Call]] = defaultdict(list)
    for call in calls:
        by_key[call.idempotency_key].append(call)
    twice = {key: found for key, found in by_key.items() if sum(c.succeeded for c in found) > 1}
    outside = {k: f for k, f in twice.items() if not _in_flight(min(f, key=_arrival), killed_at)}
    assert outside == {}, f"occurrences that succeeded twice, not cut off by the kill: {outside}"

    rows_lost_at_the_kill = 0
    for spec in specs:
        job_id = ids[spec.n]
        rows_lost_at_the_kill += _check_history(
            spec, api.job(job_id), api.runs(job_id), history_before.get(job_id)
        )
        mine = [c for c in calls if c.job_id == job_id]
        if spec.kind == ONE_OFF:
            assert any(c.succeeded for c in mine), f"{job_id} succeeded without calling its target"
        elif spec.kind == FAILING:
            assert len({c.attempt for c in mine}) >= 2, f"{job_id} did not retry: {mine}"
        else:
            _check_grid(job_id, mine)
    # A history row is written after the write that settles its attempt, so a kill between the two
    # loses that row (the job's last_run keeps the attempt): at most one per attempt in flight.
    assert rows_lost_at_the_kill <= WORKERS
    print(
        f"\n{len(flood.acknowledged)} creates answered before the kill, {len(flood.unanswered)} cut off; "
        f"{len(twice)} occurrences called again after the kill cut off their attempt; "
        f"{rows_lost_at_the_kill} history rows of attempts settled at the kill instant"
    )


def _check_history(
    spec: Spec, job: dict[str, Any], runs: list[dict[str, Any]], before: list[dict[str, Any]] | None
) -> int:
    """Checks one job's history; returns how many of its attempts have no row (0 or 1)."""
    job_id = job["id"]
    if before is not None:
        missing = [run for run in before if run not in runs]
        assert missing == [], f"{job_id}: history read before the kill is gone: {missing}"
    succeeded = Counter(run["scheduled_at"] for run in runs if run["status"] == "succeeded")
    assert all(n == 1 for n in succeeded.values()), f"{job_id}: an occurrence succeeded twice: {runs}"
    if spec.kind == RECURRING:
        return 0
    gaps = set(range(1, job["attempt"] + 1)) - {run["attempt"] for run in runs}
    assert len(gaps) <= 1, f"{job_id}: attempts missing from the history: {sorted(gaps)}"
    if not gaps:
        newest = max(runs, key=lambda run: run["attempt"])
        assert newest["status"] == job["status"] == ("succeeded" if spec.kind == ONE_OFF else "dead"), runs
    return len(gaps)


def _check_grid(job_id: str, calls: list[Call]) -> None:
    """A recurring job called at every instant of its rate from the first on: none skipped."""
    # To the millisecond: rounding to whole seconds would turn instants at .500 into steps of 14 and 16.
    instants = sorted({round(c.scheduled_at, 3) for c in calls if c.succeeded})
    assert instants, f"{job_id} never ran"
    steps = {round(b - a, 3) for a, b in itertools.pairwise(instants)}
    assert steps <= {RATE_SECONDS}, f"{job_id} skipped occurrences: {instants}"


def _arrival(call: Call) -> float:
    return call.received_at


def _in_flight(call: Call, killed_at: float) -> bool:
    """Whether a call may have been in flight, its attempt unsettled, when the kill came."""
    parts = call.path.strip("/").split("/")
    lasts = float(parts[1]) if parts[0] == "sleep" else 0.0
    return call.received_at >= killed_at - lasts - KILL_WINDOW_SECONDS


def _histories(api: Api, job_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    return {job_id: api.runs(job_id) for job_id in job_ids}


def _only_child(pid: int) -> int:
    """The emulator `sundial local` started (Linux: /proc lists a process's children)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _kill(local: Process, emulator_pid: int) -> None:
    local.kill()
    with contextlib.suppress(ProcessLookupError):
        os.kill(emulator_pid, signal.SIGKILL)
