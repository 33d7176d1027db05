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
from typing import Any, TypeVar

from sundial.client import ApiError, NotFound
from sundial.contract.jobs import JobView
from sundial.local_stack.smoke_client import Api, Deployment

POLL_SECONDS = 1.0
Json = dict[str, Any]
T = TypeVar("T")


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

    def call(self, what: str, call: Callable[[], T]) -> T | None:
        """The call's answer, checked as `what`; None (a failed check) when it raised."""
        try:
            answer = call()
        except ApiError as exc:
            self.check(False, what, f"{exc.status or 'no answer'}: {exc.message}")
            return None
        self.check(True, what)
        return answer


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
        if report.call("GET /health answers 200", api.health) is None:
            return report
        for kind, spec in _specs(tag).items():
            job = report.call(f"create the {kind} job", partial(api.create_job, spec))
            if job is not None:
                created[kind] = job.id
        if "recurring" in created:
            report.call("trigger the recurring job", partial(api.trigger_job, created["recurring"]))
        _wait_and_check(api, deployment, created, report, time.monotonic() + timeout_seconds)
        _report_alarms(deployment, report)
    finally:
        _clean_up(api, created, report)
    return report


def _wait_and_check(
    api: Api, deployment: Deployment, created: dict[str, str], report: Report, deadline: float
) -> None:
    expectations: dict[str, tuple[Callable[[JobView], bool], str]] = {
        "one-off": (lambda job: job.status == "succeeded", "succeeded"),
        "failing": (lambda job: job.status == "dead", "is dead after 2 attempts"),
        "recurring": (
            lambda job: (
                job.last_run is not None
                and job.last_run.status == "succeeded"
                and job.status in ("pending", "queued")
            ),
            "ran once and waits for its next occurrence",
        ),
    }
    for kind, job_id in created.items():
        done, what = expectations[kind]
        job = _poll(partial(_job, api, job_id), done, deadline)
        shown = job.model_dump(mode="json") if job is not None else None
        if report.check(job is not None and done(job), f"the {kind} job {what}", shown):
            _check_runs(api, kind, job_id, report)
    if "failing" in created:
        search = _poll(
            lambda: deployment.take_dead_letter(created["failing"], deadline),
            lambda found: found.found is not None,
            deadline,
        )
        letter = search.found
        report.check(
            letter is not None and letter.get("attempts") == 2,
            "the dead job's message is on the dead-letter queue (and is removed)",
            f"found {letter}, looked for attempts 2" if letter is not None else search.looked_for(),
        )


def _job(api: Api, job_id: str) -> JobView | None:
    try:
        return api.get_job(job_id)
    except NotFound:
        return None


def _poll(read: Callable[[], Any], done: Callable[[Any], bool], deadline: float) -> Any:
    value = read()
    while not (value is not None and done(value)) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        value = read()
    return value


RUNS = {"one-off": ["succeeded"], "failing": ["dead", "failed"], "recurring": ["succeeded"]}


def _check_runs(api: Api, kind: str, job_id: str, report: Report) -> None:
    try:
        runs = api.list_runs(job_id).runs
    except ApiError as exc:
        report.check(False, f"the {kind} job's run history", f"{exc.status}: {exc.message}")
        return
    # Newest first; a run's error says why it failed.
    seen = [run.status for run in runs]
    holds = seen[: len(RUNS[kind])] == RUNS[kind] and all(run.started_at for run in runs)
    shown = [run.model_dump(mode="json") for run in runs]
    report.check(holds, f"the {kind} job's run history is {', '.join(RUNS[kind])}", shown)


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
        report.call(f"cancel the {kind} job", partial(api.cancel_job, job_id))
