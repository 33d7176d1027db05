"""The exactly-once ledger under faults, in the manner of Jepsen's queue checker.

Thousands of jobs run through a simulated fleet while the harness injects more than twenty kinds of
fault at the boundary. The checks, printed and asserted: no job lost, no occurrence succeeded twice,
and re-executions no more than the crashes that happened after a side effect.
`make test` runs one fleet of 2,000 jobs; `make chaos` runs 10,000 as five fleets (SUNDIAL_CHAOS_JOBS).
"""

from __future__ import annotations

import itertools
import os
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from local_stack.resources import Resources
from shared.clock import format_rfc3339
from shared.errors import Conflict
from shared.models import JobStatus, RunStatus
from shared.schedules import first_occurrence, next_runs, parse_schedule
from tests.chaos.harness import SECOND, Simulation

MINUTE = 60 * SECOND
# The emulator's SQS walks the whole queue on every receive and delete, so a soak runs as several
# fleets of 2,000 jobs, each with its own emulator and seed, rather than one fleet that drowns it.
TOTAL_JOBS = int(os.environ.get("SUNDIAL_CHAOS_JOBS", "2000"))
JOBS_PER_FLEET = 2000
FLEETS = max(1, -(-TOTAL_JOBS // JOBS_PER_FLEET))
# 05:40 UTC on the day New York falls back (06:00 UTC): DST runs through the middle of the simulation.
START = int(datetime(2026, 11, 1, 5, 40, tzinfo=UTC).timestamp() * 1000)
RECURRING_WINDOW = 6 * MINUTE
SIMULATED = 18 * MINUTE
RECURRING = [
    ("rate(1 minute)", "UTC"),
    ("rate(30 seconds)", "UTC"),
    ("*/2 * * * *", "America/New_York"),
    ("*/5 1 * * *", "America/New_York"),  # fixed hour across the fall-back: once, not twice
    ("cron(0/3 * * * ? *)", "Europe/London"),
]


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("fleet", range(FLEETS))
def test_every_occurrence_runs_exactly_once_under_faults(
    fleet: int, emulator_url: str, own_resources: Resources, capsys: pytest.CaptureFixture[str]
) -> None:
    count = min(TOTAL_JOBS, JOBS_PER_FLEET)
    sim = Simulation(emulator_url, own_resources, seed=count + fleet, start_ms=START)
    phases: dict[str, float] = {}
    try:
        started = time.perf_counter()
        jobs = _create_jobs(sim, count)
        phases["create"] = time.perf_counter() - started
        _run(sim, jobs["racer"])
        phases["run"] = time.perf_counter() - started - phases["create"]
        report = _check(sim, jobs)
        phases["check"] = time.perf_counter() - started - phases["create"] - phases["run"]
    finally:
        sim.close()
    report["seconds"] = " / ".join(f"{name} {seconds:.0f}" for name, seconds in phases.items())
    with capsys.disabled():  # the ledger is the point of the run: show it even when it passes
        _print(sim, report)
    assert report["lost"] == 0, report
    assert report["double success"] == 0, report
    assert report["re-executions"] <= sim.ledger.crashes_after_effect, report
    assert report["poison not dead"] == 0 and report["dead letters missing"] == 0, report
    assert report["backoff gaps off"] == 0, report
    assert len([k for k, v in sim.faults.counts.items() if v]) >= 20, sim.faults.counts


def _create_jobs(sim: Simulation, count: int) -> dict[str, list[str]]:
    rng = random.Random(count)
    python = {"type": "python", "handler": "noop"}
    end = format_rfc3339(START + RECURRING_WINDOW)
    jobs: dict[str, list[str]] = {"one-off": [], "poison": [], "slow": [], "recurring": [], "racer": []}
    for i in range(max(5, count // 100)):
        body = {"name": "poison", "target": python, "max_retries": 2, "backoff": [5, 30]}
        jobs["poison"].append(sim.create(body, key=f"poison-{i}"))
    for _ in range(3):
        jobs["slow"].append(sim.create({"name": "slow", "target": python, "timeout_seconds": 1}, _key()))
    for i in range(max(len(RECURRING), count // 20)):
        schedule, zone = RECURRING[i % len(RECURRING)]
        body = {
            "schedule": schedule,
            "timezone": zone,
            "target": python,
            "end_at": end,
            "misfire_policy": "run_all",
            "overlap_policy": "buffer",
            "priority": rng.choice(["high", "low"]),
        }
        jobs["recurring"].append(sim.create(body, _key()))
    for _ in range(max(3, count // 50)):
        jobs["racer"].append(
            sim.create({"schedule": "rate(1 minute)", "target": python, "end_at": end}, _key())
        )
    while (created := sum(len(v) for v in jobs.values())) < count:
        if created % 25 == 0:
            sim.drain()  # the emulator's sends slow down as a queue grows: keep the queues short
        run_at = format_rfc3339(START + rng.randrange(-MINUTE, 6 * MINUTE))
        body = {"run_at": run_at, "target": python, "priority": rng.choice(["high", "medium", "low"])}
        key = _key()
        job_id = sim.create(body, key)
        if rng.random() < 0.05:
            assert sim.create(body, key) == job_id, "a repeated Idempotency-Key creates no second job"
        jobs["one-off"].append(job_id)
    return jobs


_keys = itertools.count()


def _key() -> str:
    return f"job-{next(_keys)}"


def _run(sim: Simulation, racers: list[str]) -> None:
    rng = random.Random(7)
    for second in range(SIMULATED // SECOND):
        if second % 60 == 0:
            chosen = rng.sample(racers, k=min(3, len(racers)))
            with ThreadPoolExecutor(1 + len(chosen)) as pool:  # API changes racing the tick's claims
                done = [pool.submit(sim.tick)] + [pool.submit(_race, sim, job_id, rng) for job_id in chosen]
                for future in done:
                    future.result()
        sim.step()


def _race(sim: Simulation, job_id: str, rng: random.Random) -> None:
    action = rng.choice([sim.api.pause, sim.api.resume, sim.api.pause, sim.api.cancel])
    sim.faults.note(f"{action.__name__} racing a claim")
    try:
        action(job_id)
    except Conflict:
        sim.faults.note("api change lost a race (409)")


def _check(sim: Simulation, jobs: dict[str, list[str]]) -> dict[str, Any]:
    store = sim.api._store
    report: Counter[str] = Counter()
    effects = sim.ledger.effects
    for job_id in jobs["one-off"] + jobs["slow"]:
        job = store.get(job_id)
        key = (job_id, format_rfc3339(job.scheduled_at or 0))
        report["lost"] += job.status is not JobStatus.SUCCEEDED or effects[key] == 0
    letters = {letter["job_id"] for letter in sim.dead_letters()}
    for job_id in jobs["poison"]:
        job = store.get(job_id)
        report["poison not dead"] += job.status is not JobStatus.DEAD
        report["dead letters missing"] += job_id not in letters
        runs = sorted(store.runs(job_id, 20, None)[0], key=lambda r: r.attempt)
        report["backoff gaps off"] += not _backoff_ok(runs, [5, 30])
    for job_id in jobs["recurring"]:
        job = store.get(job_id)
        schedule = parse_schedule(job.schedule or "", job.timezone)
        first = first_occurrence(schedule, job.created_at, job.start_at, job.end_at)
        expected = [first, *next_runs(schedule, first, 100, None, job.end_at)] if first is not None else []
        report["lost"] += sum(effects[(job_id, format_rfc3339(t))] == 0 for t in expected)
        report["recurring occurrences"] += len(expected)
    runs = sim.all_runs()
    succeeded = Counter((r.job_id, r.scheduled_at) for r in runs if r.status is RunStatus.SUCCEEDED)
    report["double success"] = sum(n - 1 for n in succeeded.values() if n > 1)
    _note_overlaps(sim, [r for r in runs if r.job_id in set(jobs["recurring"])])
    report["re-executions"] = sum(n - 1 for n in effects.values() if n > 1)
    report["jobs"] = sum(len(group) for group in jobs.values())
    return dict(report)


def _note_overlaps(sim: Simulation, runs: list[Any]) -> None:
    """Counts the occurrences that came due while the one before was still in flight (delayed by a
    crash and its lease), which the run_all/allow jobs must still run, late and once."""
    by_job: dict[str, list[Any]] = {}
    for run in runs:
        by_job.setdefault(run.job_id, []).append(run)
    for job_runs in by_job.values():
        ordered = sorted(job_runs, key=lambda r: (r.scheduled_at, r.attempt))
        for before, after in itertools.pairwise(ordered):
            if after.scheduled_at > before.scheduled_at and (before.finished_at or 0) > after.scheduled_at:
                sim.faults.note("recurring occurrence due while the one before was still in flight")


def _backoff_ok(runs: list[Any], backoff: list[int]) -> bool:
    """Each attempt after a failure started no earlier than its backoff (less 10 % jitter) later.
    A lost attempt (a crashed worker) is retried at once by the reclaim, so it sets no gap."""
    ordered = sorted(runs, key=lambda r: r.started_at or 0)
    gaps = [
        ((b.started_at - a.finished_at) / SECOND, backoff[min(a.attempt, len(backoff)) - 1])
        for a, b in itertools.pairwise(ordered)
        if a.status is RunStatus.FAILED
    ]
    return len(gaps) >= 1 and all(gap >= 0.9 * wait for gap, wait in gaps)


def _print(sim: Simulation, report: dict[str, Any]) -> None:
    print("\nexactly-once ledger:", ", ".join(f"{k} = {v}" for k, v in sorted(report.items())))
    print(f"crashes after a side effect = {sim.ledger.crashes_after_effect}")
    print(f"outcomes = {dict(sim.ledger.outcomes)}")
    print(f"faults injected ({len(sim.faults.counts)} kinds):")
    for kind, n in sorted(sim.faults.counts.items()):
        print(f"  {n:6d}  {kind}")
