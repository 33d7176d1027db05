"""Bulk operations on the emulator: every matching job acted on exactly once, the others untouched,
and a runner that dies mid-way resumed by the next without acting twice or losing a count."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.contract.bulk import ActionFilter, ActionRequest
from sundial.contract.jobs import JobCreate
from sundial.contract.vocabulary import BulkAction, JobStatus
from sundial.shared.clock import format_rfc3339
from sundial.shared.models import Operation
from sundial.shared.service.operations import LEASE_MS, SLICE, Operations
from tests.adapter.conftest import Engine, python_target

DAY_MS = 24 * 3600 * 1000


def _create(engine: Engine, name: str, count: int, **fields: Any) -> list[str]:
    run_at = engine.clock.now_ms() + DAY_MS
    spec = {"name": name, "run_at": format_rfc3339(run_at), "target": python_target(), **fields}
    return [engine.service.create(JobCreate.model_validate(spec))[0].id for _ in range(count)]


def _items(engine: Engine, job_ids: list[str]) -> dict[str, Any]:
    return {job_id: engine.store.get(job_id) for job_id in job_ids}


def test_a_bulk_cancel_by_filter_cancels_each_match_once_and_touches_nothing_else(engine: Engine) -> None:
    matching = _create(engine, "purge-me", SLICE * 2 + 17)
    others = _create(engine, "keep-me", 12) + _create(engine, "purge", 3)  # "purge" is no match of "purge-"
    before = _items(engine, others)
    operations = Operations(engine.store, engine.service, engine.clock)
    request = ActionRequest(action=BulkAction.CANCEL, filter=ActionFilter(name_prefix="purge-"))

    started = operations.start(request, "arn:aws:sts::111122223333:assumed-role/ops/alice")
    assert started.state == "running" and started.done == SLICE  # the API's own slice
    while operations.advance_all(engine.clock.now_ms() + 60_000):
        pass

    view = operations.get(started.id)
    assert (view.state, view.done, view.refused, view.left) == ("done", len(matching), 0, 0)
    assert view.who == "arn:aws:sts::111122223333:assumed-role/ops/alice"
    for job in _items(engine, matching).values():
        assert job.status is JobStatus.CANCELLED
        assert job.revision == 1  # one user action's write
        assert job.operation == started.id
    assert _items(engine, others) == before
    assert engine.store.running_operations() == []  # the tick forgot it once done


def test_a_runner_killed_mid_slice_is_resumed_and_acts_once_on_each_job(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # trigger is the action a repeat would show: a second trigger is a second run.
    job_ids = _create(engine, "nightly", SLICE + 40, schedule="rate(1 day)", run_at=None)
    operations = Operations(engine.store, engine.service, engine.clock)
    started = operations.start(ActionRequest(action=BulkAction.TRIGGER, ids=job_ids), None)
    assert started.done == SLICE

    counted = Operations._counted
    calls: list[int] = []

    def killed(self: Operations, operation: Operation, outcomes: list[Any]) -> Operation:
        calls.append(len(outcomes))
        raise RuntimeError("killed after acting on its slice, before saving its counts")

    monkeypatch.setattr(Operations, "_counted", killed)
    with pytest.raises(RuntimeError):
        operations.advance_all(engine.clock.now_ms() + 60_000)
    assert calls == [40]  # every job of the second slice was acted on
    monkeypatch.setattr(Operations, "_counted", counted)

    operations.advance_all(engine.clock.now_ms() + 60_000)
    assert operations.get(started.id).state == "running"  # the dead runner's lease holds it
    engine.clock.advance(LEASE_MS + 1)
    operations.advance_all(engine.clock.now_ms() + 60_000)

    view = operations.get(started.id)
    assert (view.state, view.done, view.refused) == ("done", len(job_ids), 0)
    for job in _items(engine, job_ids).values():
        assert job.revision == 1, job.id  # triggered once, not again by the repeated slice
        assert job.operation == started.id


def test_jobs_whose_state_refuses_the_action_are_counted_with_their_reasons(engine: Engine) -> None:
    one_offs = _create(engine, "once", 3)
    recurring = _create(engine, "often", 2, schedule="rate(1 hour)", run_at=None)
    operations = Operations(engine.store, engine.service, engine.clock)
    missing = "01JD0000000000000000000000"
    request = ActionRequest(action=BulkAction.PAUSE, ids=[*one_offs, *recurring, missing])

    view = operations.start(request, None)

    assert (view.state, view.done, view.refused, view.left) == ("done", 2, 4, 0)
    refused = {refusal.job_id: refusal.message for refusal in view.refusals}
    assert set(refused) == {*one_offs, missing}
    assert "not recurring" in refused[one_offs[0]] and "not found" in refused[missing]
    assert all(engine.store.get(job_id).paused for job_id in recurring)
