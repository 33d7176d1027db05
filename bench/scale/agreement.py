"""One small scenario whose outcome, job by job, must be the same on the model and on `sundial
local`: one-off jobs over the three priorities (some failing, retried, then dead) and jobs on a
schedule (one occurrence of them, some failing: the next is a day later).

Both sides create the same jobs through the API's code, relative to a base instant, and are read
back through it once every job has settled: each job's status, attempt, health, next run, its calls
per occurrence and attempt, and its history, every instant as an offset from the base. The model's
base has the local run's second within its minute, so the schedule's occurrence falls at the same
offset. Only outcomes are compared: the local stack runs fewer workers, so it may take longer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.scale import limits
from bench.scale.runtime import Sim, green
from bench.scale.scenario import START_S
from bench.scale.world import Settings, World
from sundial.contract.jobs import JobCreate
from sundial.shared.clock import format_rfc3339
from sundial.shared.dispatch import Dispatcher
from sundial.shared.service.service import JobService

PRIORITIES = ("high", "medium", "low")
SPREAD_S = 20  # the one-offs fall due over this many seconds after the base
Json = dict[str, Any]


@dataclass(frozen=True)
class Planned:
    name: str
    body: Json  # the create request's body, its target's URL a path on the endpoint
    fails: bool
    recurring: bool


@dataclass(frozen=True)
class Call:
    job_id: str
    scheduled_ms: int
    attempt: int


def plan(jobs: int, base_ms: int) -> list[Planned]:
    """`jobs` jobs: a tenth on the schedule, half of those failing; a fifth of the rest failing."""
    planned = []
    for n in range(jobs):
        recurring = n % 10 == 9
        fails = n % 5 == 0 or n % 20 == 19
        name = f"{'fail' if fails else 'ok'}-{'daily' if recurring else 'once'}-{n}"
        body: Json = {
            "name": name,
            "priority": PRIORITIES[n % 3],
            "target": {"type": "http", "url": f"/{'fail' if fails else 'ok'}/{name}"},
            "timeout_seconds": 10,
        }
        if recurring:
            body |= {"schedule": daily_at(first_occurrence_ms(base_ms)), "max_retries": 1, "backoff": [1]}
        else:
            due_ms = base_ms + (n % SPREAD_S) * 1000 + (n * 37) % 1000
            body |= {"run_at": format_rfc3339(due_ms), "max_retries": 2, "backoff": [1, 2]}
        planned.append(Planned(name, body, fails, recurring))
    return planned


def with_endpoint(body: Json, endpoint: str) -> Json:
    target = dict(body["target"], url=endpoint.rstrip("/") + body["target"]["url"])
    return dict(body, target=target)


def first_occurrence_ms(base_ms: int) -> int:
    """The schedule's first instant: the first whole minute at least 5 s after the base."""
    return ((base_ms + 5_000) // 60_000 + 1) * 60_000


def daily_at(instant_ms: int) -> str:
    """Every day at that minute (UTC): one occurrence in the scenario, the next a day later."""
    moment = datetime.fromtimestamp(instant_ms / 1000, UTC)
    return f"cron({moment.minute} {moment.hour} * * ? *)"


def settled(planned: Planned, view: Json, runs: list[Json], base_ms: int) -> bool:
    """Whether a job has done all the scenario waits for: a one-off ended, a scheduled job's first
    occurrence ended (succeeded, or each of its attempts failed) and its next one placed."""
    if not planned.recurring:
        return bool(view["status"] in ("succeeded", "dead"))
    first = first_occurrence_ms(base_ms)
    ended = [run for run in runs if _ms(run["scheduled_at"]) == first]
    return len(ended) == (2 if planned.fails else 1) and _ms(view["next_run_at"] or "") > first


def outcome(view: Json, runs: list[Json], calls: Iterable[Call], base_ms: int) -> Json:
    """What the scenario compares of one job, its instants as offsets from the base."""

    def at(text: str | None) -> int | None:
        return None if text is None else _ms(text) - base_ms

    per_attempt = Counter((call.scheduled_ms - base_ms, call.attempt) for call in calls)
    return {
        "status": view["status"],
        "attempt": view["attempt"],
        "health": view["health"],
        "consecutive_failures": view["consecutive_failures"],
        "next_run_at": at(view["next_run_at"]),
        "calls": sorted([offset, attempt, count] for (offset, attempt), count in per_attempt.items()),
        "runs": sorted([at(run["scheduled_at"]), run["attempt"], run["status"]] for run in runs),
    }


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000) if text else 0


def model_base_ms(local_base_ms: int) -> int:
    """The model's base: its own day, with the local base's place in its minute."""
    return int(START_S * 1000) + local_base_ms % 60_000


def simulate(
    jobs: int, base_ms: int, lead_s: float, observe_s: float, settings: Settings | None = None
) -> dict[str, Json]:
    """The scenario on the model: created `lead_s` before the base, read `observe_s` after it."""
    planned = plan(jobs, base_ms)
    sim = Sim(base_ms / 1000 - lead_s - 1)
    with green(sim):
        world = World(sim, settings or Settings())
        service = JobService(
            world.store, Dispatcher(*world.dispatch_args), world.clock, allow_private_targets=False
        )
        ids: dict[str, str] = {}

        def create_all() -> None:
            for job in planned:
                spec = JobCreate.model_validate(with_endpoint(job.body, "https://jobs.example.com"))
                ids[job.name] = service.create(spec)[0].id

        sim.spawn(create_all, at=base_ms / 1000 - lead_s)
        # The schedule's tick, at an instant in the minute the local stack's first tick might take.
        world.start_ticks(base_ms / 1000 - lead_s + 1 + limits.TICK_START_S.value, base_ms / 1000 + observe_s)
        world.start_pollers()
        sim.run(until=base_ms / 1000 + observe_s)
        calls = [Call(c.job_id, c.scheduled_at_ms, c.attempt) for c in world.target.calls]
        return read_back(
            planned, ids, lambda i: _view(service, i), lambda i: _runs(service, i), calls, base_ms
        )


def _view(service: JobService, job_id: str) -> Json:
    return service.get(job_id).model_dump(mode="json")


def _runs(service: JobService, job_id: str) -> list[Json]:
    return [run.model_dump(mode="json") for run in service.runs(job_id, 100, None).runs]


def read_back(
    planned: list[Planned],
    ids: dict[str, str],
    view: Callable[[str], Json],
    runs: Callable[[str], list[Json]],
    calls: list[Call],
    base_ms: int,
) -> dict[str, Json]:
    """Every job's outcome, by name (the one thing both sides share)."""
    by_job: dict[str, list[Call]] = {}
    for call in calls:
        by_job.setdefault(call.job_id, []).append(call)
    return {
        job.name: outcome(view(ids[job.name]), runs(ids[job.name]), by_job.get(ids[job.name], []), base_ms)
        for job in planned
    }


def differences(model: dict[str, Json], local: dict[str, Json]) -> list[str]:
    """Each job whose outcome differs, with both outcomes."""
    return [
        f"{name}: model {model.get(name)} != local {local.get(name)}"
        for name in sorted(set(model) | set(local))
        if model.get(name) != local.get(name)
    ]
