"""A job's alert route on the emulator: owed in the write that ends an occurrence DEAD, sent once by
the worker, or handed on by the tick to a worker when the writer crashed or the route failed; with
on_failure_streak, heard of once a streak."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from sundial.contract.bounds import MAX_FAILURE_STREAK
from sundial.contract.jobs import JobCreate
from sundial.shared import constants as c
from sundial.shared.dispatch import AlertMessage, JobMessage
from sundial.shared.engine.worker import Outcome, Worker
from sundial.shared.errors import InvalidInput, StaleDelivery
from sundial.shared.models import Job
from sundial.shared.store import items
from sundial.shared.targets.alert_delivery import AlertNotice
from tests.adapter.conftest import Engine, python_target

SECOND = 1000
QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/alerts"


class Crash(BaseException):
    """The worker's process ends here (not an error it could catch)."""


@dataclass
class RouteLog:
    """What the routes received; `failures` makes the next N sends fail, `crash` ends the process."""

    notices: list[AlertNotice] = field(default_factory=list)
    failures: int = 0
    crash: bool = False

    def __call__(self, job: Job, notice: AlertNotice) -> None:
        if self.crash:
            raise Crash
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("the route said no")
        self.notices.append(notice)


@pytest.fixture
def routes(engine: Engine) -> RouteLog:
    """The engine's worker with a route sender that records what it sends."""
    log = RouteLog()
    engine.worker = Worker(
        engine.context,
        engine.targets,
        "worker-1",
        sleep=engine.clock.advance,
        heartbeat_seconds=3600,
        route=log,
    )
    return log


def create(engine: Engine, **fields: Any) -> str:
    spec = {"target": python_target(), "on_dead": {"type": "sqs", "queue_url": QUEUE}, "max_retries": 0}
    view, _ = engine.service.create(JobCreate.model_validate(spec | fields))
    engine.targets.failures[view.id] = 10**6
    return view.id


def run_due(engine: Engine) -> list[Outcome]:
    """Every job message visible, each run at its instant; errands are left on their queue."""
    outcomes = []
    for message in engine.receive():
        engine.clock.set(max(engine.clock.now_ms(), message.due_at))
        outcomes.append(engine.worker.process(message).outcome)
    return outcomes


def errands(engine: Engine) -> list[AlertMessage]:
    """The tick's errands on the priority queues (deleted as read)."""
    found = []
    for url in engine.resources.queue_urls.values():
        while batch := engine.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
            for message in batch:
                engine.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                found.append(AlertMessage.model_validate_json(message["Body"]))
    return found


def run_errands(engine: Engine) -> int:
    found = errands(engine)
    for errand in found:
        engine.worker.send_owed_route(errand.job_id, errand.alert)
    return len(found)


def owed_routes(engine: Engine, job_id: str) -> list[str]:
    return [
        row.sort_key
        for row in engine.index_rows()
        if row.job_id == job_id and row.sort_key.startswith(items.ROUTE_PREFIX)
    ]


def test_the_route_gets_the_dead_occurrence_s_summary_once(engine: Engine, routes: RouteLog) -> None:
    job_id = create(engine, name="nightly")

    assert run_due(engine) == [Outcome.DEAD]

    [notice] = routes.notices
    job = engine.store.get(job_id)
    assert job.last_run is not None
    assert notice.model_dump() == {
        "job_id": job_id,
        "name": "nightly",
        "scheduled_at": notice.scheduled_at,
        "attempts": 1,
        "error": "target said no",
        "consecutive_failures": 1,
        "trace_id": job.last_run.trace_id,
        "kind": "dead",
        "missed": None,
        "reason": None,
        "until": None,
    }
    assert "missed" not in notice.as_delivery().payload  # a dead occurrence's notice as it always was
    assert owed_routes(engine, job_id) == []
    assert len(engine.dead_letters()) == 1  # the stack's own alert goes out as before
    engine.clock.advance(3600)
    engine.scheduler.tick()
    assert errands(engine) == [] and len(routes.notices) == 1


def test_a_crash_between_death_and_alert_still_sends_it_once(engine: Engine, routes: RouteLog) -> None:
    job_id = create(engine)
    routes.crash = True
    with pytest.raises(Crash):
        run_due(engine)
    routes.crash = False
    assert engine.store.get(job_id).status.value == "dead"
    assert len(owed_routes(engine, job_id)) == 1  # owed by the write that marked the death

    engine.scheduler.tick()
    assert errands(engine) == []  # the writer has a minute to send it itself
    engine.clock.advance(61)
    report = engine.scheduler.tick()
    assert report.routes_handed_on == 1
    assert run_errands(engine) == 1

    assert len(routes.notices) == 1 and routes.notices[0].job_id == job_id
    assert owed_routes(engine, job_id) == []
    engine.clock.advance(3600)
    engine.scheduler.tick()
    assert run_errands(engine) == 0 and len(routes.notices) == 1


def test_a_failing_route_is_tried_again_with_growing_waits_until_it_takes_the_alert(
    engine: Engine, routes: RouteLog
) -> None:
    job_id = create(engine)
    routes.failures = 3  # the worker's own try, and the first two errands'
    run_due(engine)
    handed_in_minute = []
    for minute in range(1, 13):  # a tick a minute
        engine.clock.advance(60.001)
        engine.scheduler.tick()
        if run_errands(engine):
            handed_in_minute.append(minute)
        if routes.notices:
            break

    assert [notice.job_id for notice in routes.notices] == [job_id]
    assert handed_in_minute == [1, 2, 4]  # waits of a minute, then two: each try waits longer
    assert owed_routes(engine, job_id) == []


def test_two_ticks_hand_on_an_owed_alert_once(engine: Engine, routes: RouteLog) -> None:
    job_id = create(engine)
    routes.crash = True
    with pytest.raises(Crash):
        run_due(engine)
    [sort_key] = owed_routes(engine, job_id)
    engine.clock.advance(61)
    owed = engine.store.owed_route(job_id, sort_key)  # what both ticks read
    assert owed is not None

    engine.store.hand_on_route(owed, engine.clock.now_ms())

    with pytest.raises(StaleDelivery):
        engine.store.hand_on_route(owed, engine.clock.now_ms())


def test_a_cancel_before_the_owed_alert_went_out_drops_it(engine: Engine, routes: RouteLog) -> None:
    job_id = create(engine)
    routes.crash = True
    with pytest.raises(Crash):
        run_due(engine)
    routes.crash = False
    engine.service.cancel(job_id)

    engine.clock.advance(61)
    engine.scheduler.tick()
    run_errands(engine)

    assert routes.notices == []
    assert owed_routes(engine, job_id) == []


def test_a_failure_streak_is_heard_of_once_at_its_length(engine: Engine, routes: RouteLog) -> None:
    job_id = create(engine, schedule="rate(1 minute)", on_failure_streak=3)

    def occurrences(count: int) -> None:
        for _ in range(count):
            engine.clock.set(engine.store.get(job_id).due_at or 0)
            engine.scheduler.tick()
            assert len(run_due(engine)) == 1

    engine.clock.set((engine.store.get(job_id).due_at or 0) - 20 * SECOND)
    occurrences(2)
    assert routes.notices == []
    occurrences(2)  # the third in a row is heard of; the fourth is the same streak
    assert [notice.consecutive_failures for notice in routes.notices] == [3]
    engine.targets.failures[job_id] = 0
    occurrences(1)  # a success ends the streak
    engine.targets.failures[job_id] = 10**6
    occurrences(3)
    assert [notice.consecutive_failures for notice in routes.notices] == [3, 3]
    assert engine.store.get(job_id).consecutive_failures == 3
    assert all(not row.sort_key.startswith(items.ROUTE_PREFIX) for row in engine.index_rows())
    assert MAX_FAILURE_STREAK >= 3


def test_a_lost_attempt_that_ends_its_occurrence_owes_the_route_too(engine: Engine, routes: RouteLog) -> None:
    job_id = create(engine)
    [message] = engine.receive()
    engine.store.fence(message.job_id, message.token, "crashed-worker", engine.clock.now_ms())

    engine.clock.advance(c.LEASE_CHUNK_SECONDS + c.LEASE_MARGIN_SECONDS + 1)
    report = engine.scheduler.tick()

    assert (report.reclaimed, report.routes_handed_on) == (1, 1)
    assert run_errands(engine) == 1
    [notice] = routes.notices
    assert (notice.job_id, notice.attempts) == (job_id, 1)
    assert notice.error is not None and "stopped answering" in notice.error
    assert owed_routes(engine, job_id) == []


def drain(engine: Engine) -> tuple[list[JobMessage], list[AlertMessage]]:
    """Every visible message of the priority queues, job messages and errands apart (deleted as read)."""
    jobs, found = [], []
    for url in engine.resources.queue_urls.values():
        while batch := engine.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
            for message in batch:
                engine.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                body = json.loads(message["Body"])
                if "alert" in body:
                    found.append(AlertMessage.model_validate(body))
                else:
                    jobs.append(JobMessage.model_validate(body))
    return jobs, found


@pytest.mark.parametrize("asked", [True, False])
def test_missed_instants_are_heard_of_once_when_asked(engine: Engine, routes: RouteLog, asked: bool) -> None:
    job_id = create(engine, schedule="rate(1 minute)", misfire_policy="skip", alert_on_missed=asked)
    engine.targets.failures.pop(job_id)
    engine.clock.advance(5 * 60 + 30)  # nothing ran for five and a half minutes: four instants missed
    for _ in range(3):
        engine.scheduler.tick()
        _, found = drain(engine)
        for errand in found:
            engine.worker.send_owed_route(errand.job_id, errand.alert)
        engine.clock.advance(90)

    assert engine.store.get(job_id).missed == 4
    if not asked:
        assert routes.notices == []
        return
    [notice] = routes.notices
    assert (notice.kind, notice.missed, notice.reason) == ("missed", 4, "misfire")
    assert notice.idempotency_key == f"{job_id}:{notice.scheduled_at}:on_missed"
    assert owed_routes(engine, job_id) == []


def test_asking_for_missed_instants_needs_a_route_and_a_schedule(engine: Engine) -> None:
    with pytest.raises(InvalidInput) as refused:
        engine.service.create(
            JobCreate.model_validate(
                {"target": python_target(), "schedule": "rate(1 minute)", "alert_on_missed": True}
            )
        )
    assert refused.value.field == "alert_on_missed"
    with pytest.raises(InvalidInput) as one_off:
        create(engine, alert_on_missed=True)
    assert one_off.value.field == "alert_on_missed"
