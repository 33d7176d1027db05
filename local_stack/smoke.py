"""`sundial smoke`: checks a running Sundial end to end, deployed or local, and cleans up after itself.

It creates three jobs: a one-off due in a few seconds, one that fails every attempt until it is dead,
and a recurring one it triggers at once. It waits for them, then checks their statuses, their run
history and the dead job's message on the dead-letter queue; reports the alarms' state where it can
reach CloudWatch; and cancels its jobs and deletes its dead-letter message whatever happened.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from local_stack.smoke_client import Api, Deployment

POLL_SECONDS = 1.0
Json = dict[str, Any]


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    failures: int = 0

    def check(self, holds: bool, what: str, detail: Any = "") -> bool:
        self.lines.append(f"{'ok  ' if holds else 'FAIL'} {what}{'' if holds else f': {detail}'}")
        self.failures += 0 if holds else 1
        return holds

    def note(self, what: str) -> None:
        self.lines.append(f"     {what}")


def _in(seconds: float) -> str:
    return (
        (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def _specs(tag: str) -> dict[str, Json]:
    noop = {"type": "python", "handler": "noop"}
    return {
        "one-off": {"name": f"smoke-{tag}-one-off", "run_at": _in(3), "target": noop, "priority": "high"},
        "failing": {
            "name": f"smoke-{tag}-failing",
            "run_at": _in(3),
            "target": {"type": "python", "handler": "fail"},
            "max_retries": 1,
            "backoff": [1],
            "priority": "high",
        },
        # Its first occurrence is an hour away: the trigger runs one now.
        "recurring": {"name": f"smoke-{tag}-recurring", "schedule": "rate(1 hour)", "target": noop},
    }


def run_smoke(api: Api, deployment: Deployment, timeout_seconds: float = 120.0) -> Report:
    report = Report()
    tag = uuid.uuid4().hex[:8]
    created: dict[str, str] = {}
    try:
        status, health = api.call("GET", "/health")
        if not report.check(status == 200, "GET /health answers 200", (status, health)):
            return report
        for kind, spec in _specs(tag).items():
            status, job = api.call("POST", "/jobs", spec)
            if report.check(status == 201, f"create the {kind} job", (status, job)):
                created[kind] = job["id"]
        if "recurring" in created:
            status, job = api.call("POST", f"/jobs/{created['recurring']}/trigger")
            report.check(status == 200, "trigger the recurring job", (status, job))
        _wait_and_check(api, deployment, created, report, time.monotonic() + timeout_seconds)
        _report_alarms(deployment, report)
    finally:
        _clean_up(api, created, report)
    return report


def _wait_and_check(
    api: Api, deployment: Deployment, created: dict[str, str], report: Report, deadline: float
) -> None:
    expectations: dict[str, tuple[Callable[[Json], bool], str]] = {
        "one-off": (lambda job: job["status"] == "succeeded", "succeeded"),
        "failing": (lambda job: job["status"] == "dead", "is dead after 2 attempts"),
        "recurring": (
            lambda job: (
                (job.get("last_run") or {}).get("status") == "succeeded"
                and job["status"] in ("pending", "queued")
            ),
            "ran once and waits for its next occurrence",
        ),
    }
    for kind, job_id in created.items():
        done, what = expectations[kind]
        job = _poll(partial(_job, api, job_id), done, deadline)
        if report.check(job is not None and done(job), f"the {kind} job {what}", job):
            _check_runs(api, kind, job_id, report)
    if "failing" in created:
        letter = _poll(lambda: deployment.take_dead_letter(created["failing"]), bool, deadline)
        report.check(
            letter is not None and letter.get("attempts") == 2,
            "the dead job's message is on the dead-letter queue (and is removed)",
            letter,
        )


def _job(api: Api, job_id: str) -> Json | None:
    status, job = api.call("GET", f"/jobs/{job_id}")
    return job if status == 200 else None


def _poll(read: Callable[[], Any], done: Callable[[Any], bool], deadline: float) -> Any:
    value = read()
    while not (value is not None and done(value)) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        value = read()
    return value


RUNS = {"one-off": ["succeeded"], "failing": ["dead", "failed"], "recurring": ["succeeded"]}


def _check_runs(api: Api, kind: str, job_id: str, report: Report) -> None:
    status, body = api.call("GET", f"/jobs/{job_id}/runs")
    runs = body.get("runs", []) if status == 200 and isinstance(body, dict) else []
    # Newest first; a run's error says why it failed.
    seen = [run["status"] for run in runs]
    holds = seen[: len(RUNS[kind])] == RUNS[kind] and all(run.get("started_at") for run in runs)
    report.check(holds, f"the {kind} job's run history is {', '.join(RUNS[kind])}", (status, body))


def _report_alarms(deployment: Deployment, report: Report) -> None:
    try:
        states = deployment.alarm_states()
    except Exception as exc:  # reporting only: no permission to read alarms is not a failed check
        report.note(f"alarms: not readable ({exc.__class__.__name__})")
        return
    if not states:
        report.note("alarms: none to report (no CloudWatch here)")
        return
    for name, state in sorted(states.items()):
        report.note(f"alarm {name}: {state}")
    report.note("the dead job raises DeadJobs and DeadLetterMessages once: their mail shows alarms reach you")


def _clean_up(api: Api, created: dict[str, str], report: Report) -> None:
    for kind, job_id in created.items():
        status, job = api.call("DELETE", f"/jobs/{job_id}")
        report.check(status == 200, f"cancel the {kind} job", (status, job))
