"""The run history as `GET /jobs/{id}/runs` reads it: from the settle on, the attempt the job
recorded is on the first page, before the worker's own history write lands (or if it never does)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sundial.contract.jobs import JobCreate
from sundial.shared import constants as c
from sundial.shared.clock import format_rfc3339
from sundial.shared.engine.worker import Outcome, Worker
from sundial.shared.models import Run
from sundial.shared.service.service import JobService
from tests.adapter.conftest import Engine, python_target


@pytest.fixture
def history_held(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Run]]:
    """The worker's history writes, held back: the moment between its settle and its history write."""
    held: list[Run] = []

    def hold(run: Run) -> bool:
        held.append(run)
        return True

    monkeypatch.setattr(engine.store, "put_run", hold)
    yield held


def _land(engine: Engine, run: Run) -> None:
    """A held history write, as the store makes it."""
    assert type(engine.store).put_run(engine.store, run)


def _failing_job(engine: Engine, retries: int) -> str:
    body = {"target": python_target(), "max_retries": retries, "backoff": [1]}
    view, _ = engine.service.create(JobCreate.model_validate(body))
    engine.targets.failures[view.id] = 99
    return view.id


def _run_attempts(engine: Engine, count: int) -> list[Outcome]:
    outcomes = []
    for _ in range(count):
        [message] = engine.receive()
        engine.clock.set(max(engine.clock.now_ms(), message.due_at))
        outcomes.append(engine.worker.process(message).outcome)
    return outcomes


def _shown(
    engine: Engine, job_id: str, limit: int = 10, token: str | None = None
) -> tuple[list[tuple[int, str]], str | None]:
    page = engine.service.runs(job_id, limit, token)
    return [(run.attempt, run.status) for run in page.runs], page.next_token


def test_a_dead_job_whose_last_history_write_has_not_landed_shows_its_dead_attempt_first(
    engine: Engine, history_held: list[Run]
) -> None:
    job_id = _failing_job(engine, retries=1)
    assert _run_attempts(engine, 1) == [Outcome.FAILED]
    _land(engine, history_held.pop())  # the first attempt's history write lands

    assert _run_attempts(engine, 1) == [Outcome.DEAD]
    assert engine.service.get(job_id).status == "dead"
    assert [(run.attempt, run.status) for run in history_held] == [(2, "dead")]  # not written yet
    assert _shown(engine, job_id) == ([(2, "dead"), (1, "failed")], None)


def test_the_recorded_attempt_is_shown_once_after_its_history_write_lands(
    engine: Engine, history_held: list[Run]
) -> None:
    job_id = _failing_job(engine, retries=0)
    assert _run_attempts(engine, 1) == [Outcome.DEAD]
    assert _shown(engine, job_id) == ([(1, "dead")], None)

    _land(engine, history_held.pop())
    assert _shown(engine, job_id) == ([(1, "dead")], None)


def test_a_full_first_page_gives_way_to_the_recorded_attempt_and_the_next_page_goes_on_from_it(
    engine: Engine, history_held: list[Run]
) -> None:
    job_id = _failing_job(engine, retries=2)
    assert _run_attempts(engine, 2) == [Outcome.FAILED, Outcome.FAILED]
    while history_held:
        _land(engine, history_held.pop())
    assert _run_attempts(engine, 1) == [Outcome.DEAD]

    first, token = _shown(engine, job_id, limit=2)
    assert first == [(3, "dead"), (2, "failed")] and token is not None
    second, last = _shown(engine, job_id, limit=2, token=token)
    assert (second, last) == ([(1, "failed")], None)


def _succeeds_under_failures_history(engine: Engine, timing: dict[str, str]) -> tuple[JobService, str]:
    """A job created and run once, successfully, by a service and a worker that keep failures only."""
    keeps_failures = c.History.FAILURES
    worker = Worker(
        engine.context,
        engine.targets,
        "w",
        sleep=lambda _: None,
        history=keeps_failures,
    )
    service = JobService(
        engine.store, engine.dispatcher, engine.clock, allow_private_targets=True, history=keeps_failures
    )
    view, _ = service.create(JobCreate.model_validate({"target": python_target(), **timing}))
    engine.clock.set(engine.store.get(view.id).due_at or 0)
    [message] = engine.receive()
    assert worker.process(message).outcome is Outcome.SUCCEEDED
    return service, view.id


def test_under_failures_only_history_a_recurring_success_stays_in_last_run_alone(engine: Engine) -> None:
    service, job_id = _succeeds_under_failures_history(engine, {"schedule": "rate(1 minute)"})
    view = engine.store.get(job_id)

    assert engine.store.get(view.id).last_run is not None
    assert service.runs(view.id, 10, None).runs == []
    # A service whose workers keep every attempt shows it: its own worker's write would be due.
    assert [run.status for run in engine.service.runs(view.id, 10, None).runs] == ["succeeded"]


def test_under_failures_only_history_a_one_off_s_success_writes_no_item_and_is_still_its_run(
    engine: Engine, dynamodb: Any
) -> None:
    # The job's last_run holds what the item would: the write unit is saved, the answers are not.
    run_at = format_rfc3339(engine.clock.now_ms() + 5_000)
    service, job_id = _succeeds_under_failures_history(engine, {"run_at": run_at})
    view = engine.store.get(job_id)

    stored = dynamodb.query(
        TableName=engine.resources.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :run)",
        ExpressionAttributeValues={":pk": {"S": f"JOB#{view.id}"}, ":run": {"S": "RUN#"}},
    )["Items"]
    assert stored == []
    [run] = service.runs(view.id, 10, None).runs
    assert (run.status, run.attempt) == ("succeeded", 1)
