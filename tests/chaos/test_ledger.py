"""The exactly-once ledger under faults, in the manner of Jepsen's queue checker.

Thousands of jobs run through a simulated fleet while the harness injects more than twenty kinds of
fault at the boundary: among them users cancelling, pausing, resuming and triggering jobs while
their attempts run and while they are queued, deliveries held back past their lease, heartbeats
throttled past the SDK's retries, and writes applied with their answers lost. The checks, printed
and asserted: no job lost, no occurrence succeeded twice, no job re-executed more often than its
side effects went unkept (a crash or error after one, a lost lease, a call recorded timed out),
intent held (no attempt after an acknowledged cancel, no new occurrence while paused, cancelled
jobs end cancelled), no long job run twice by a lapsed heartbeat, and every dead occurrence's
alert sent, none still owed at the end.
`make test` runs one fleet of 1,000 jobs; `make chaos` runs 10,000 as five fleets (SUNDIAL_CHAOS_JOBS).
"""

from __future__ import annotations

import itertools
import os
import random
import time
from collections import Counter, defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest

from sundial.contract.vocabulary import JobStatus, RunStatus
from sundial.local_stack.resources import Resources
from sundial.shared.clock import format_rfc3339
from sundial.shared.schedules import first_occurrence, next_runs, parse_schedule
from tests.chaos.harness import SECOND, Action, Fence, Simulation, Snapshot

MINUTE = 60 * SECOND
# The emulator's SQS walks the whole queue on every receive and delete, so a soak runs as several
# fleets of 2,000 jobs, each with its own emulator and seed, rather than one fleet that drowns it.
TOTAL_JOBS = int(os.environ.get("SUNDIAL_CHAOS_JOBS", "1000"))
JOBS_PER_FLEET = 2000
FLEETS = max(1, -(-TOTAL_JOBS // JOBS_PER_FLEET))
# 05:40 UTC on the day New York falls back (06:00 UTC): DST runs through the middle of the simulation.
START = int(datetime(2026, 11, 1, 5, 40, tzinfo=UTC).timestamp() * 1000)
RECURRING_WINDOW = 6 * MINUTE
SIMULATED = 18 * MINUTE
DRAIN_LIMIT = 15 * MINUTE
RECURRING = [
    ("rate(1 minute)", "UTC"),
    ("rate(30 seconds)", "UTC"),
    ("*/2 * * * *", "America/New_York"),
    ("*/5 1 * * *", "America/New_York"),  # fixed hour across the fall-back: once, not twice
    ("cron(0/3 * * * ? *)", "Europe/London"),
]
# Long jobs start once the rest has quietened down, and run five simulated minutes on heartbeats.
LONG_START = 7 * MINUTE


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("fleet", range(FLEETS))
def test_every_occurrence_runs_exactly_once_under_faults(
    fleet: int, emulator_url: str, own_resources: Resources, capsys: pytest.CaptureFixture[str]
) -> None:
    count = min(TOTAL_JOBS, JOBS_PER_FLEET)
    sim = Simulation(emulator_url, own_resources, seed=count + fleet, start_ms=START)
    VIOLATIONS.clear()
    STUCK.clear()
    phases: dict[str, float] = {}
    try:
        started = time.perf_counter()
        jobs = _create_jobs(sim, count)
        phases["create"] = time.perf_counter() - started
        drained = _run(sim, jobs["racer"])
        phases["run"] = drained - started - phases["create"]
        phases["drain"] = time.perf_counter() - drained
        report = _check(sim, jobs)
        phases["check"] = time.perf_counter() - started - sum(phases.values())
    finally:
        sim.close()
    report["seconds"] = " / ".join(f"{name} {seconds:.0f}" for name, seconds in phases.items())
    with capsys.disabled():  # the ledger is the point of the run: show it even when it passes
        _print(sim, report)
    assert report["tick errors (engine)"] == 0, sim.ledger.tick_errors[:5]
    assert report["jobs stuck in flight (lease long lapsed)"] == 0, STUCK[:5]
    assert report["lost"] == 0, report
    assert report["double success"] == 0, report
    assert report["jobs re-executed beyond their unkept side effects"] == 0, VIOLATIONS[:5]
    assert report["poison not dead"] == 0 and report["dead letters missing"] == 0, report
    assert report["backoff gaps off"] == 0, report
    assert report["attempts started after an acknowledged cancel"] == 0, report
    assert report["new occurrences started while paused"] == 0, report
    assert report["cancelled jobs not cancelled"] == 0, report
    assert report["long jobs run twice (heartbeat lapsed)"] == 0, report
    assert report["alerts missing"] == 0 and report["alerts owed at the end"] == 0, report
    assert len([k for k, v in sim.faults.counts.items() if v]) >= 20, sim.faults.counts


def _create_jobs(sim: Simulation, count: int) -> dict[str, list[str]]:
    rng = random.Random(count)
    python = {"type": "python", "handler": "noop"}
    end = format_rfc3339(START + RECURRING_WINDOW)
    jobs: dict[str, list[str]] = {
        "one-off": [],
        "poison": [],
        "slow": [],
        "long": [],
        "recurring": [],
        "racer": [],
    }
    for i in range(max(5, count // 100)):
        body = {"name": "poison", "target": python, "max_retries": 2, "backoff": [5, 30]}
        jobs["poison"].append(sim.create(body, key=f"poison-{i}"))
    for _ in range(3):
        jobs["slow"].append(sim.create({"name": "slow", "target": python, "timeout_seconds": 1}, _key()))
    for i in range(max(3, count // 200)):
        run_at = format_rfc3339(START + LONG_START + i * 5 * SECOND)
        body = {"name": "long", "target": python, "run_at": run_at, "timeout_seconds": 120}
        jobs["long"].append(sim.create(body, _key()))
    sim.long_jobs.update(jobs["long"])
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
    sim.actors.update(jobs["racer"])
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


def _run(sim: Simulation, racers: list[str]) -> float:
    """Ticks once a simulated minute, with user actions racing its claims; every five seconds a
    user acts on racers that are queued, racing their deliveries' fences; every twenty seconds one
    triggers a racer, and every thirty one's payload is replaced. After the simulated span, only
    ticks and deliveries, until nothing is left in the due index (a chain of faults can hold a job
    back for minutes: a late delivery, a doubled resend lease, a crash's redelivery) or DRAIN_LIMIT
    has passed. Returns when (time.perf_counter) the drain began."""
    rng = random.Random(7)
    drained = 0.0
    with ThreadPoolExecutor(4) as users:
        for second in range((SIMULATED + DRAIN_LIMIT) // SECOND):
            users_act = second < SIMULATED // SECOND
            if second == SIMULATED // SECOND:
                drained = time.perf_counter()
            if second % 60 == 0:
                if not users_act and not sim.long_in_flight() and sim.settled():
                    break
                chosen = rng.sample(racers, k=min(3, len(racers))) if users_act else []
                # API changes racing the tick's claims
                done = [users.submit(sim.tick)] + [
                    users.submit(
                        sim.act, rng.choice(["pause", "resume", "pause", "cancel"]), job_id, "racing a claim"
                    )
                    for job_id in chosen
                ]
                for future in done:
                    future.result()
            acting = _users_act(sim, users, racers, rng, second) if users_act else []
            sim.step()  # deliveries, and with them fences, while the users act
            for future in acting:
                future.result()
    return drained or time.perf_counter()


def _users_act(
    sim: Simulation, users: ThreadPoolExecutor, racers: list[str], rng: random.Random, second: int
) -> list[Future[Any]]:
    acting: list[Future[Any]] = []
    if second % 5 == 2:
        for job_id in rng.sample(racers, k=min(2, len(racers))):
            acting.append(users.submit(_act_if_queued, sim, job_id, sim.pick_action()))
    if second % 20 == 11:
        acting.append(users.submit(sim.act, "trigger", rng.choice(racers), "between attempts"))
    if second % 30 == 17:
        acting.append(users.submit(sim.act, "update", rng.choice(racers), "(a large payload)"))
    return acting


def _act_if_queued(sim: Simulation, job_id: str, kind: str) -> None:
    if sim.api._store.get(job_id).status is JobStatus.QUEUED:
        sim.act(kind, job_id, "while queued")


def _check(sim: Simulation, jobs: dict[str, list[str]]) -> dict[str, Any]:
    snapshot = sim.snapshot()
    runs_of: dict[str, list[Any]] = defaultdict(list)
    for run in snapshot.runs:
        runs_of[run.job_id].append(run)
    letters = sim.dead_letters()
    report = _lost(sim, jobs, snapshot, runs_of)
    for job_id in jobs["poison"]:
        job = snapshot.jobs[job_id]
        report["poison not dead"] += job.status is not JobStatus.DEAD
        report["dead letters missing"] += job_id not in {letter["job_id"] for letter in letters}
        report["backoff gaps off"] += not _backoff_ok(
            sorted(runs_of[job_id], key=lambda r: r.attempt), [5, 30]
        )
    report.update(_twice(sim, snapshot, runs_of))
    _note_overlaps(sim, [r for r in snapshot.runs if r.job_id in set(jobs["recurring"])])
    report["jobs"] = sum(len(group) for group in jobs.values())
    report["simulated minutes (zombie jumps included)"] = round((sim.base.now_ms() - START) / MINUTE)
    report["tick errors (engine)"] = len(sim.ledger.tick_errors)
    # Invariant 13: whatever is in flight is under a lease the ticks act on once it lapses.
    lapsed = [
        job
        for job in snapshot.jobs.values()
        if job.status in (JobStatus.QUEUED, JobStatus.RUNNING)
        and (job.lease_until or 0) < sim.base.now_ms() - 2 * MINUTE - 30 * SECOND
    ]
    report["jobs stuck in flight (lease long lapsed)"] = len(lapsed)
    STUCK.extend(f"job {j.id}: {j.status.value}, paused={j.paused}, attempt {j.attempt}" for j in lapsed)
    report.update(_intent(sim.intents.actions, sim.intents.fences, snapshot))
    for job_id in sorted({a.job_id for a in sim.intents.actions if a.kind == "cancel" and a.acknowledged}):
        if snapshot.jobs[job_id].status is not JobStatus.CANCELLED:
            status = snapshot.jobs[job_id].status.value
            VIOLATIONS.append(f"cancel acknowledged, ended {status}: " + _history(sim, job_id, runs_of))
    report.update(_heartbeats(sim, jobs["long"], runs_of))
    report.update(_alerts(sim, snapshot, letters))
    return dict(report)


def _lost(
    sim: Simulation, jobs: dict[str, list[str]], snapshot: Snapshot, runs_of: dict[str, list[Any]]
) -> Counter[str]:
    """One-offs that did not succeed with their side effect, and recurring occurrences (from the
    schedule) without one."""
    report: Counter[str] = Counter({"lost": 0})
    effects = sim.ledger.effects
    for job_id in jobs["one-off"] + jobs["slow"] + jobs["long"]:
        job = snapshot.jobs[job_id]
        key = (job_id, format_rfc3339(job.scheduled_at or 0))
        if job.status is not JobStatus.SUCCEEDED or effects[key] == 0:
            report["lost"] += 1
            VIOLATIONS.append(f"lost: {job.status.value} {key}, " + _history(sim, job_id, runs_of))
    for job_id in jobs["recurring"]:
        job = snapshot.jobs[job_id]
        schedule = parse_schedule(job.schedule or "", job.timezone)
        first = first_occurrence(schedule, job.created_at, job.start_at, job.end_at)
        expected = [first, *next_runs(schedule, first, 100, None, job.end_at)] if first is not None else []
        missed = [t for t in expected if effects[(job_id, format_rfc3339(t))] == 0]
        report["lost"] += len(missed)
        if missed:
            lost = ", ".join(_at(t) for t in missed)
            VIOLATIONS.append(f"lost {lost} of {job.schedule}: " + _history(sim, job_id, runs_of))
        report["recurring occurrences"] += len(expected)
    return report


def _twice(sim: Simulation, snapshot: Snapshot, runs_of: dict[str, list[Any]]) -> Counter[str]:
    """Occurrences that succeeded twice (the history), and side effects repeated (the targets)."""
    report: Counter[str] = Counter()
    effects = sim.ledger.effects
    runs = snapshot.runs
    succeeded = Counter((r.job_id, r.scheduled_at) for r in runs if r.status is RunStatus.SUCCEEDED)
    report["double success"] = sum(n - 1 for n in succeeded.values() if n > 1)
    for (job_id, scheduled_at), n in succeeded.items():
        if n > 1:
            VIOLATIONS.append(f"{n} successes of {_at(scheduled_at)}, " + _history(sim, job_id, runs_of))
    reruns: Counter[str] = Counter()
    for (job_id, _), n in effects.items():
        reruns[job_id] += n - 1
    allowed = sim.ledger.unkept_effects
    # Each re-execution needs a delivery of the same job whose side effect the job did not keep:
    # counted per job, so the slack of one job's harmless crashes hides no other's re-execution.
    unexplained = sorted(job_id for job_id, n in reruns.items() if n > allowed[job_id])
    report["jobs re-executed beyond their unkept side effects"] = len(unexplained)
    VIOLATIONS.extend(
        f"re-executed {reruns[job_id]} times after {allowed[job_id]} unkept side effects, "
        + _history(sim, job_id, runs_of)
        for job_id in unexplained
    )
    report["re-executions"] = sum(reruns.values())
    report["side effects not kept (crash, lost lease, time-out)"] = sum(allowed.values())
    return report


def _intent(actions: list[Action], fences: list[Fence], snapshot: Snapshot) -> Counter[str]:
    """What users were told held: no attempt started (fenced) after an acknowledged cancel; no new
    occurrence (attempt 1) after an acknowledged pause, unless a resume or trigger that may have
    come after it (it had not ended when the pause began) started before the fence was answered;
    every job with an acknowledged cancel ends cancelled. Order is the harness's counter: a call's
    write happened between its start and its end."""
    report: Counter[str] = Counter(
        dict.fromkeys(
            [
                "attempts started after an acknowledged cancel",
                "new occurrences started while paused",
                "cancelled jobs not cancelled",
            ],
            0,
        )
    )
    of_job: dict[str, list[Action]] = defaultdict(list)
    for action in actions:
        of_job[action.job_id].append(action)
        report[f"user actions acknowledged ({action.kind})"] += action.acknowledged
    for fence in fences:
        acts = of_job.get(fence.job_id, [])
        acknowledged = [a for a in acts if a.acknowledged and a.end < fence.start]
        if any(a.kind == "cancel" for a in acknowledged):
            report["attempts started after an acknowledged cancel"] += 1
            VIOLATIONS.append(_story(fence, acts, fences))
        pauses = [a for a in acknowledged if a.kind == "pause"]
        if fence.attempt == 1 and any(_held(pause, fence, acts) for pause in pauses):
            report["new occurrences started while paused"] += 1
            VIOLATIONS.append(_story(fence, acts, fences))
    report["attempts started"] = len(fences)
    cancelled = {a.job_id for a in actions if a.kind == "cancel" and a.acknowledged}
    report["jobs cancelled (acknowledged)"] = len(cancelled)
    report["cancelled jobs not cancelled"] = sum(
        snapshot.jobs[job_id].status is not JobStatus.CANCELLED for job_id in cancelled
    )
    return report


VIOLATIONS: list[str] = []  # how each broken intent came about, printed with the ledger
STUCK: list[str] = []


def _story(fence: Fence, acts: list[Action], fences: list[Fence]) -> str:
    """The job's actions and fences in the harness's order, for the report of a broken intent."""
    events = [
        (
            a.start,
            f"  [{a.start}-{a.end}] {_at(a.at_ms)} {a.kind} {a.where}{'' if a.acknowledged else ' (no 2xx)'}",
        )
        for a in acts
    ]
    events += [
        (f.start, f"  [{f.start}-{f.end}] {_at(f.at_ms)} fence of {_at(f.scheduled_at)}, attempt {f.attempt}")
        for f in fences
        if f.job_id == fence.job_id
    ]
    head = f"job {fence.job_id}: fence [{fence.start}-{fence.end}] attempt {fence.attempt}"
    return "\n".join([head, *(line for _, line in sorted(events))])


def _history(sim: Simulation, job_id: str, runs_of: dict[str, list[Any]]) -> str:
    fences = [f for f in sim.intents.fences if f.job_id == job_id]
    acts = [a for a in sim.intents.actions if a.job_id == job_id]
    story = _story(fences[0], acts, fences) if fences else f"job {job_id}: no fence recorded"
    history = [
        f"  run {_at(r.scheduled_at)} attempt {r.attempt}: {r.status.value}, "
        f"{_at(r.started_at or 0)}-{_at(r.finished_at or 0)} on {r.worker}"
        for r in sorted(runs_of[job_id], key=lambda r: (r.scheduled_at, r.attempt, r.started_at or 0))
    ]
    effects = [f"  effect {at[11:]} x{n}" for (j, at), n in sorted(sim.ledger.effects.items()) if j == job_id]
    return "\n".join([story, *history, *effects])


def _at(ms: int) -> str:
    return format_rfc3339(ms)[11:]


def _held(pause: Action, fence: Fence, acts: list[Action]) -> bool:
    """True when nothing may have undone `pause` before `fence` was written."""
    return not any(
        a.kind in ("resume", "trigger") and a.start < fence.end and a.end > pause.start for a in acts
    )


def _heartbeats(sim: Simulation, long_jobs: list[str], runs_of: dict[str, list[Any]]) -> Counter[str]:
    """A long job runs once, on one lease kept by heartbeats whose first writes were throttled. A job
    whose worker crashed or erred mid-delivery may rightly run again: it is counted apart."""
    report: Counter[str] = Counter({"long jobs run twice (heartbeat lapsed)": 0})
    for job_id in long_jobs:
        if job_id in sim.ledger.excused:
            report["long jobs with a worker crash (excused)"] += 1
            continue
        reclaimed = any(r.status in (RunStatus.LOST, RunStatus.DEAD) for r in runs_of[job_id])
        lapsed = sim.ledger.effects_by_job[job_id] > 1 or reclaimed or job_id in sim.ledger.lease_lost
        report["long jobs run twice (heartbeat lapsed)"] += lapsed
    report["long jobs"] = len(long_jobs)
    return report


def _alerts(sim: Simulation, snapshot: Snapshot, letters: list[dict[str, Any]]) -> Counter[str]:
    """Every occurrence that ended DEAD (in the history, or as a job's last run) has a dead letter,
    or its ALERT# item is still in the table: owed. After the final ticks none may be owed."""
    dead = {(r.job_id, r.scheduled_at) for r in snapshot.runs if r.status is RunStatus.DEAD}
    dead |= {
        (job.id, job.last_run.scheduled_at)
        for job in snapshot.jobs.values()
        if job.last_run is not None and job.last_run.status is RunStatus.DEAD
    }
    dead_keys = {(job_id, format_rfc3339(at)) for job_id, at in dead}
    sent = {(letter["job_id"], letter["scheduled_at"]) for letter in letters}
    owed = {(job_id, format_rfc3339(run.scheduled_at)) for job_id, run in snapshot.owed_alerts}
    return Counter(
        {
            "dead occurrences": len(dead_keys),
            "alerts sent": len(dead_keys & sent),
            "alert letters (with repeats)": len(letters),
            "alerts sent by the tick": sim.ledger.ticks["alerts_sent"],
            "dead letters sent by a worker": sim.ledger.dead_letters_sent["by a worker"],
            "dead letters sent by a tick": sim.ledger.dead_letters_sent["by a tick"],
            "alerts owed at the end": len(owed),
            "alerts missing": len(dead_keys - sent - owed),
        }
    )


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


SECTIONS = {
    "intent": ("attempts started", "acknowledged", "cancel", "paused", "cancelled"),
    "heartbeats": ("long jobs",),
    "alerts": ("alert", "dead "),
}


def _print(sim: Simulation, report: dict[str, Any]) -> None:
    sections: dict[str, list[str]] = {"exactly-once ledger": [], **{name: [] for name in SECTIONS}}
    for key, value in sorted(report.items()):
        name = next((n for n, words in SECTIONS.items() if any(w in key for w in words)), None)
        sections[name or "exactly-once ledger"].append(f"{key} = {value}")
    print()
    for name, entries in sections.items():
        print(f"{name}:", ", ".join(entries))
    print(f"outcomes = {dict(sim.ledger.outcomes)}")
    print(f"ticks = {dict(sim.ledger.ticks)}")
    for story in VIOLATIONS[:10]:
        print(story)
    first: dict[str, tuple[str, int]] = {}  # the same row fails every tick: each error once
    for error in sim.ledger.tick_errors:
        at, what = error.split(": ", 1)
        seen_at, times = first.get(what, (at, 0))
        first[what] = (seen_at, times + 1)
    for what, (at, times) in list(first.items())[:5]:
        print(f"tick error from {_at(int(at))} ({times} times): {what}")
    for line in STUCK[:5]:
        print(line)
    print(f"faults injected ({len(sim.faults.counts)} kinds):")
    for kind, n in sorted(sim.faults.counts.items()):
        print(f"  {n:6d}  {kind}")
