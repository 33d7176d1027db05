"""Limits per key on the local stack: jobs due together on a key with a concurrency or a rate limit
start only as the key allows, each once and on its first attempt, and a SIGKILLed `sundial local`
started again on its state directory gives back the slots its dead attempts held.

The jobs call a target in this process that records when each call arrived and when it answered; a
call's open span lies inside its attempt's slot (the fence takes the slot before the call, the
settle returns it after the answer), so the target can hold the engine to its exact bounds."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest

from sundial.shared import constants as c
from sundial.shared.clock import SystemClock
from sundial.shared.store import JobStore
from tests.e2e.api import Api, Json, parse_rfc3339, rfc3339, wait_until
from tests.e2e.checks import Checks
from tests.e2e.conftest import Stack
from tests.e2e.processes import Process, emulator_url_in_banner, start_local

pytestmark = pytest.mark.e2e

# Generous: a 2-core machine running the other suites beside this one.
SETTLE_SECONDS = 90.0
RUN_ROW_SECONDS = 10.0


@dataclass
class Call:
    job_id: str
    attempt: int
    idempotency_key: str
    arrived: float  # epoch seconds
    answered: float | None = None  # just before the answer was written: still inside the slot


class Target:
    """An http target: `/sleep/<seconds>/...` answers 200 after that long, `/slow/...` after whatever
    `slow_seconds` says when the call arrives."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self.slow_seconds = 0.0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="limits-target", daemon=True)

    def url(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/{path.lstrip('/')}"

    def start(self) -> Target:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def arrive(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def answer(self, call: Call) -> None:
        with self._lock:
            call.answered = time.time()

    def calls(self, job_ids: set[str] | None = None) -> list[Call]:
        with self._lock:
            return [call for call in self._calls if job_ids is None or call.job_id in job_ids]

    def open_calls(self, job_ids: set[str]) -> list[Call]:
        return [call for call in self.calls(job_ids) if call.answered is None]


def _handler(target: Target) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            call = Call(
                job_id=self.headers.get("Sundial-Job-Id", ""),
                attempt=int(self.headers.get("Sundial-Attempt", "0")),
                idempotency_key=self.headers.get("Idempotency-Key", ""),
                arrived=time.time(),
            )
            target.arrive(call)
            try:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = self.path.strip("/").split("/")
                if parts[0] == "sleep":
                    time.sleep(float(parts[1]))
                elif parts[0] == "slow":
                    time.sleep(target.slow_seconds)
            finally:
                # Closed before the answer leaves: the next call a freed slot lets in then always
                # arrives after this one's span has ended.
                target.answer(call)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests report what matters."""

        def handle(self) -> None:
            # A worker killed mid-call hangs up before its answer: expected in the kill test.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

    return Handler


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    server = Target().start()
    yield server
    server.stop()


def _put_limit(api: Api, key: str, body: Json) -> Json:
    status, view = api.call("PUT", f"/limits/{key}", body)
    assert status == 200, view
    expected = {"max_concurrent": None, "per_second": None, **body}
    assert {name: view[name] for name in expected} == expected, view
    assert (view["key"], view["running"], view["waiting"]) == (key, 0, 0), view
    return dict(view)


def _limit(api: Api, key: str) -> Json:
    status, view = api.call_patiently("GET", f"/limits/{key}")
    assert status == 200, view
    return dict(view)


def _create_batch(api: Api, jobs: list[Json]) -> list[str]:
    status, answer = api.call("POST", "/jobs/batch", {"jobs": jobs}, timeout=60)
    assert status == 200 and answer["created"] == len(jobs), answer
    return [str(result["job"]["id"]) for result in answer["results"]]


def _wait_succeeded(api: Api, job_ids: list[str], timeout: float, stack: Process | None = None) -> None:
    deadline = time.monotonic() + timeout
    for job_id in job_ids:
        left = max(1.0, deadline - time.monotonic())
        try:
            api.wait_for_status(job_id, {"succeeded"}, timeout=left)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{stack.tail() if stack else ''}") from None


def _runs(api: Api, job_id: str, attempts: int) -> list[Json]:
    """The job's history once it has a row per attempt (rows follow the settle by a moment)."""
    wait_until(
        lambda: len(api.runs(job_id)) >= attempts,
        RUN_ROW_SECONDS,
        lambda: f"job {job_id}: fewer than {attempts} run rows: {api.runs(job_id)}",
    )
    return api.runs(job_id)


def _most_within(instants: list[float], seconds: float) -> int:
    """The most instants in any closed window `seconds` long."""
    ordered = sorted(instants)
    most, low = 0, 0
    for high, instant in enumerate(ordered):
        while instant - ordered[low] > seconds:
            low += 1
        most = max(most, high - low + 1)
    return most


def _most_open(calls: list[Call]) -> int:
    """The most calls open at once, from their spans (an answer before an arrival at the same instant)."""
    edges = sorted(
        [(call.arrived, 1) for call in calls] + [(call.answered or float("inf"), -1) for call in calls],
        key=lambda edge: (edge[0], edge[1]),
    )
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


class Sampler:
    """Reads the key's view over and over while the jobs run, from a thread of its own."""

    def __init__(self, api: Api, key: str) -> None:
        self._api = api
        self._key = key
        self.views: list[Json] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="limit-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with contextlib.suppress(OSError, AssertionError):
                self.views.append(_limit(self._api, self._key))


# --- a concurrency limit ----------------------------------------------------------------------------

CONCURRENT_JOBS = 18
MAX_CONCURRENT = 3
CALL_SECONDS = 2


def test_a_concurrency_limit_keeps_at_most_its_slots_open_and_runs_each_job_once(
    stack: Stack, target: Target
) -> None:
    started = time.monotonic()
    api = stack.api
    key = f"e2e-concurrent-{uuid.uuid4().hex[:8]}"
    _put_limit(api, key, {"max_concurrent": MAX_CONCURRENT})
    run_at = rfc3339(time.time() + 6)
    job_ids = [
        api.create(
            name=f"{key}-{n}",
            run_at=run_at,
            priority="high",  # its pool runs far more at once than the key allows
            limit_key=key,
            target={"type": "http", "url": target.url(f"sleep/{CALL_SECONDS}/{n}")},
            timeout_seconds=30,
            max_retries=0,  # an attempt the key had failed would end the job dead, not retried
        )["id"]
        for n in range(CONCURRENT_JOBS)
    ]
    created = time.time()
    with Sampler(api, key) as sampler:
        _wait_succeeded(api, job_ids, SETTLE_SECONDS, stack.local)
    mine = set(job_ids)
    calls = target.calls(mine)
    checks = Checks("a concurrency limit of 3 on 18 jobs due together")
    most_open = _most_open(calls)
    checks.check(most_open <= MAX_CONCURRENT, f"{most_open} calls open at once at the target")
    checks.check(most_open == MAX_CONCURRENT, f"never {MAX_CONCURRENT} at once: the key held back too much")
    for job_id in job_ids:
        own = [call.attempt for call in calls if call.job_id == job_id]
        checks.check(own == [1], f"job {job_id} was called {own} (attempts)")
    waited = _check_history(api, job_ids, checks)
    checks.check(waited >= CONCURRENT_JOBS // 2, f"only {waited} runs say their key held them back")
    seen_running = max((view["running"] for view in sampler.views), default=0)
    seen_waiting = max((view["waiting"] for view in sampler.views), default=0)
    checks.check(seen_running <= MAX_CONCURRENT, f"the key's view said {seen_running} running")
    checks.check(seen_waiting > 0, "the key's view never showed an occurrence waiting")
    view = _limit(api, key)
    checks.check((view["running"], view["waiting"]) == (0, 0), f"the key after every job ended: {view}")
    arrivals = sorted(call.arrived for call in calls)
    spread = arrivals[-1] - arrivals[0] if arrivals else 0.0
    instant = parse_rfc3339(run_at)
    checks.note(
        f"max open at the target {most_open}; view: max running "
        f"{seen_running}, max waiting {seen_waiting} over {len(sampler.views)} reads; {waited} runs waited "
        f"for the key; arrivals spread over {spread:.1f} s, the first {arrivals[0] - instant:.2f} "
        f"s after the instant (creates done {created - instant:+.1f} s from it); "
        f"test took {time.monotonic() - started:.1f} s"
    )
    checks.verify()


def _check_history(api: Api, job_ids: list[str], checks: Checks) -> int:
    """One succeeded first attempt per job, none failed; returns how many said the key held them."""
    waited = 0
    for job_id in job_ids:
        job = api.job(job_id)
        checks.check(job["attempt"] == 1, f"job {job_id} is on attempt {job['attempt']}")
        runs = _runs(api, job_id, 1)
        shape = [(run["attempt"], run["status"]) for run in runs]
        checks.check(shape == [(1, "succeeded")], f"job {job_id} has runs {shape}")
        wait_ms = runs[0]["limit_wait_ms"]
        checks.check(wait_ms is None or wait_ms >= 0, f"job {job_id}: limit_wait_ms {wait_ms}")
        waited += bool(wait_ms)
    return waited


# --- a rate limit -----------------------------------------------------------------------------------

RATE_JOBS = 24
PER_SECOND = 4
BURST = 4


def test_a_rate_limit_lets_at_most_burst_plus_rate_start_in_any_second(stack: Stack, target: Target) -> None:
    started = time.monotonic()
    api = stack.api
    key = f"e2e-rate-{uuid.uuid4().hex[:8]}"
    _put_limit(api, key, {"per_second": float(PER_SECOND), "burst": BURST})
    run_at = rfc3339(time.time() + 5)
    jobs = [
        {
            "name": f"{key}-{n}",
            "run_at": run_at,
            "priority": "high",
            "limit_key": key,
            "target": {"type": "http", "url": target.url(f"ok/{n}")},
            "max_retries": 0,
        }
        for n in range(RATE_JOBS)
    ]
    job_ids = _create_batch(api, jobs)
    _wait_succeeded(api, job_ids, SETTLE_SECONDS, stack.local)
    calls = target.calls(set(job_ids))
    arrivals = [call.arrived for call in calls]
    checks = Checks("a rate limit of 4 a second, burst 4, on 24 jobs due together")
    for job_id in job_ids:
        own = [call.attempt for call in calls if call.job_id == job_id]
        checks.check(own == [1], f"job {job_id} was called {own} (attempts)")
    waited = _check_history(api, job_ids, checks)
    # The engine's own start instants (the fence's, which took the token), to the millisecond.
    starts = [parse_rfc3339(_runs(api, job_id, 1)[0]["started_at"]) for job_id in job_ids]
    most_started = _most_within(starts, 1.0)
    checks.check(most_started <= BURST + PER_SECOND, f"{most_started} starts within one second")
    lag = [call.arrived - start for call, start in zip(_by_job(calls, job_ids), starts, strict=True)]
    most = _most_within(arrivals, 1.0)
    checks.check(
        most <= BURST + PER_SECOND,
        f"{most} arrivals at the target within one second (the starts: {most_started}; start to "
        f"arrival {min(lag) * 1000:.0f}-{max(lag) * 1000:.0f} ms)",
    )
    spread = max(arrivals) - min(arrivals)
    checks.check(spread >= 4.0, f"arrivals spread over {spread:.2f} s")
    # A full bucket, then a token every 1/rate s: the last start comes (n - burst) / rate after the
    # first. A worker reads the clock just before the shard, so a start may carry an instant a few ms
    # before the take it followed.
    started_spread = max(starts) - min(starts)
    least = (RATE_JOBS - BURST) / PER_SECOND
    checks.check(started_spread >= least - 0.01, f"starts spread over {started_spread:.3f} s, not {least} s")
    view = _limit(api, key)
    checks.check(view["waiting"] == 0, f"the key after every job ended: {view}")
    checks.note(
        f"max arrivals in a 1 s window {most}, max starts {most_started}; spread {spread:.2f} s (starts "
        f"{started_spread:.2f} s); {waited} runs waited for the key; start to arrival "
        f"{min(lag) * 1000:.0f}-{max(lag) * 1000:.0f} ms; test took {time.monotonic() - started:.1f} s"
    )
    checks.verify()


def _by_job(calls: list[Call], job_ids: list[str]) -> list[Call]:
    first: dict[str, Call] = {}
    for call in calls:
        first.setdefault(call.job_id, call)
    return [first[job_id] for job_id in job_ids]


# --- a kill of the local stack while attempts hold slots --------------------------------------------

KILL_JOBS = 4
KILL_CONCURRENT = 2
KILL_TIMEOUT_SECONDS = 30
LEASE_BOUND_SECONDS = KILL_TIMEOUT_SECONDS + c.LEASE_MARGIN_SECONDS
BEFORE_KILL_SECONDS = 20.0  # the slow calls outlast the kill by far
AFTER_KILL_SECONDS = 2.0  # short enough to finish well inside the lease, long enough to overlap
TICK = ("--tick-seconds", "5")


@dataclass
class Restart:
    """What one kill -9 of `sundial local` and its restart on the same state directory left."""

    key: str
    job_ids: list[str]
    killed: set[str]  # the jobs whose attempts held the slots at the kill
    held_since: dict[str, float]  # the others: since when their job said its key held them back
    killed_at: float
    restarted: float
    up: float
    zero_at: float  # every job succeeded and the key ran nothing
    still_held: set[str]  # dead attempts whose slots were still live right after the restart
    runs: dict[str, list[Json]]
    jobs: dict[str, Json]
    calls: list[Call]
    view: Json
    recovery: str


@pytest.fixture(scope="module")
def restart(tmp_path_factory: pytest.TempPathFactory, target: Target) -> Restart:
    started = time.time()
    logs = tmp_path_factory.mktemp("limits-kill")
    state = logs / "state"
    key = f"e2e-kill-{uuid.uuid4().hex[:8]}"
    target.slow_seconds = BEFORE_KILL_SECONDS
    first, url = start_local(logs, "--state-dir", str(state), *TICK, name="limits-first")
    emulator_pid = _only_child(first.popen.pid)
    try:
        api = Api(url)
        _put_limit(api, key, {"max_concurrent": KILL_CONCURRENT})
        run_at = rfc3339(time.time() + 3)
        job_ids = [
            api.create(
                name=f"{key}-{n}",
                run_at=run_at,
                priority="high",
                limit_key=key,
                target={"type": "http", "url": target.url(f"slow/{n}")},
                timeout_seconds=KILL_TIMEOUT_SECONDS,
                backoff=[1],
            )["id"]
            for n in range(KILL_JOBS)
        ]
        mine = set(job_ids)

        def slots_full_and_others_waiting() -> bool:
            view = _limit(api, key)
            return len(target.open_calls(mine)) == KILL_CONCURRENT and view["waiting"] == KILL_JOBS - 2

        wait_until(slots_full_and_others_waiting, 30, lambda: f"{_limit(api, key)}\n{first.tail()}")
        killed = {call.job_id for call in target.open_calls(mine)}
        held_jobs = [api.job(job_id) for job_id in job_ids if job_id not in killed]
        assert all(job["waiting_on_limit_since"] for job in held_jobs), held_jobs
        held_since = {job["id"]: parse_rfc3339(job["waiting_on_limit_since"]) for job in held_jobs}
        before = _shard(emulator_url_in_banner(first.output()), key).state.holders
        target.slow_seconds = AFTER_KILL_SECONDS
        killed_at = time.time()
    finally:
        first.kill()
    _wait_gone(emulator_pid)
    assert set(before) == killed, (before, killed)

    restarted = time.time()
    second, url = start_local(logs, "--state-dir", str(state), *TICK, name="limits-second")
    try:
        api = Api(url)
        up = time.time()
        after = _shard(emulator_url_in_banner(second.output()), key).state.holders
        read_at = SystemClock().now_ms()
        # The restart ends the dead attempts' leases before its API answers: no holder entry may
        # still be live with a lease a dead attempt took (one taken after the restart ends later).
        dead_lease_ends_by = int((killed_at + LEASE_BOUND_SECONDS) * 1000)
        still_held = {job for job in killed if read_at <= after.get(job, -1) <= dead_lease_ends_by}
        zero_at = _wait_running_zero(api, key, job_ids, second)
        runs = {job_id: _runs(api, job_id, 2 if job_id in killed else 1) for job_id in job_ids}
        jobs = {job_id: api.job(job_id) for job_id in job_ids}
        view = _limit(api, key)
    finally:
        assert second.stop() == 0
    print(
        f"\nkilled {killed_at - started:.1f} s in; up again {up - killed_at:.1f} s after the kill "
        f"(restart took {up - restarted:.1f} s); running back to 0 with every job succeeded "
        f"{zero_at - killed_at:.1f} s after the kill ({zero_at - up:.1f} s after the restart); "
        f"scenario took {time.time() - started:.1f} s"
    )
    return Restart(
        key=key,
        job_ids=job_ids,
        killed=killed,
        held_since=held_since,
        killed_at=killed_at,
        restarted=restarted,
        up=up,
        zero_at=zero_at,
        still_held=still_held,
        runs=runs,
        jobs=jobs,
        calls=target.calls(set(job_ids)),
        view=view,
        recovery=_recovery_line(second),
    )


def test_a_killed_local_stack_gives_back_the_slots_of_its_dead_attempts(restart: Restart) -> None:
    checks = Checks("a kill -9 of the local stack while 2 attempts hold the key's 2 slots")
    checks.check(not restart.still_held, f"the restart left dead attempts' slots held: {restart.still_held}")
    after_kill = restart.zero_at - restart.killed_at
    checks.check(after_kill <= LEASE_BOUND_SECONDS, f"running back to 0 {after_kill:.1f} s after the kill")
    later = [call for call in restart.calls if call.arrived >= restart.restarted]
    checks.check(_most_open(later) <= KILL_CONCURRENT, f"{_most_open(later)} calls open at once after")
    for job_id in restart.job_ids:
        runs = restart.runs[job_id]
        shape = [(run["attempt"], run["status"]) for run in runs]
        own = [call for call in restart.calls if call.job_id == job_id]
        if job_id in restart.killed:
            # The attempt cut off by the kill was lost; the reclaim ran the occurrence again, once.
            checks.check(shape == [(2, "succeeded"), (1, "lost")], f"killed job {job_id} has runs {shape}")
            checks.check([call.attempt for call in own] == [1, 2], f"killed job {job_id}: calls {own}")
            checks.check(len({call.idempotency_key for call in own}) == 1, f"killed job {job_id}: two keys")
        else:
            # Held back across the kill: still its first attempt, never failed.
            checks.check(shape == [(1, "succeeded")], f"held job {job_id} has runs {shape}")
            attempt = restart.jobs[job_id]["attempt"]
            checks.check(attempt == 1, f"held job {job_id} is on attempt {attempt}")
            checks.check([call.attempt for call in own] == [1], f"held job {job_id}: calls {own}")
        checks.check(restart.jobs[job_id]["status"] == "succeeded", f"job {job_id}: {restart.jobs[job_id]}")
    view = restart.view
    checks.check((view["running"], view["waiting"]) == (0, 0), f"the key at the end: {view}")
    checks.note(
        f"up again {restart.up - restart.killed_at:.1f} s after the kill; running back to 0 with every "
        f"job succeeded {after_kill:.1f} s after it (bound {LEASE_BOUND_SECONDS} s); most open after the "
        f"restart {_most_open(later)}; {restart.recovery}"
    )
    checks.verify()


def test_an_occurrence_held_back_across_a_restart_records_its_wait(restart: Restart) -> None:
    for job_id, since in restart.held_since.items():
        [run] = restart.runs[job_id]
        # At least what it had waited when the kill came; the whole wait runs on to its start.
        before_kill_ms = (restart.killed_at - since) * 1000
        assert run["limit_wait_ms"] is not None, f"held job {job_id} waited {before_kill_ms:.0f} ms: {run}"
        assert run["limit_wait_ms"] >= before_kill_ms, (run, before_kill_ms)


def _wait_running_zero(api: Api, key: str, job_ids: list[str], stack: Process) -> float:
    """When every job had succeeded and the key had nothing running."""
    done: set[str] = set()

    def settled() -> bool:
        done.update(
            job_id for job_id in job_ids if job_id not in done and api.job(job_id)["status"] == "succeeded"
        )
        return done == set(job_ids) and _limit(api, key)["running"] == 0

    wait_until(settled, SETTLE_SECONDS, lambda: f"{_limit(api, key)}; done {len(done)}\n{stack.tail()}")
    return time.time()


def _recovery_line(stack: Process) -> str:
    found = re.search(r"restarted on saved state: [^\"]*", stack.output())
    return found.group(0) if found else "no recovery line"


def _shard(endpoint_url: str, key: str) -> Any:
    """The key's shard 0 as the emulator holds it: its holders and their leases."""
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
    return JobStore(dynamodb, c.TABLE_NAME, SystemClock()).limit_shard(key, 0)


def _only_child(pid: int) -> int:
    """The emulator `sundial local` started (Linux: /proc lists a process's children)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _wait_gone(pid: int, timeout: float = 60) -> None:
    """Until the emulator, told by the kernel that its parent died, has exited and let go of the
    state directory (a zombie nobody reaps holds no lock)."""

    def gone() -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] in ("Z", "X")
        except FileNotFoundError:
            return True

    deadline = time.monotonic() + timeout
    while not gone():
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"the emulator (pid {pid}) outlived its local stack by {timeout:.0f} s")
        time.sleep(0.1)
