"""Every conditional write of the store, on the emulator: it succeeds when its condition holds and
changes nothing when it does not."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.contract.vocabulary import JobStatus, RunStatus
from sundial.shared.errors import Conflict, StaleDelivery
from sundial.shared.lifecycle import Placement, on_cancel, on_pause
from sundial.shared.models import Run, RunSummary
from sundial.shared.store import DueRow, IdempotencyRecord, new_token
from tests.adapter.conftest import Engine
from tests.adapter.test_engine import create

SECOND = 1000


def _later(engine: Engine, seconds: int = 600) -> str:
    from sundial.shared.clock import format_rfc3339

    return format_rfc3339(engine.clock.now_ms() + seconds * SECOND)


def _row(engine: Engine, job_id: str) -> DueRow:
    job = engine.store.get(job_id)
    rows = [row for row in engine.index_rows() if row.job_id == job.id]
    assert len(rows) == 1, "a job is in the due index once, or not at all"
    return rows[0]


def _index_rows(engine: Engine) -> list[DueRow]:
    return engine.index_rows()


def _unchanged(engine: Engine, job_id: str, before: Any) -> None:
    assert engine.store.get(job_id) == before


def test_claim_takes_a_waiting_job_once(engine: Engine) -> None:
    job_id = create(engine, run_at=_later(engine))
    row = _row(engine, job_id)

    claimed = engine.store.claim(row, new_token(), engine.clock.now_ms())
    assert claimed.status is JobStatus.QUEUED and claimed.token
    before = engine.store.get(job_id)
    with pytest.raises(StaleDelivery):
        engine.store.claim(row, new_token(), engine.clock.now_ms())
    _unchanged(engine, job_id, before)
    assert _row(engine, job_id).is_lease


def test_claim_refuses_a_stale_index_row(engine: Engine) -> None:
    job_id = create(engine, run_at=_later(engine))
    row = _row(engine, job_id)
    stale = DueRow(row.job_id, f"{row.due_at - 1:013d}#run")
    before = engine.store.get(job_id)

    with pytest.raises(StaleDelivery):
        engine.store.claim(stale, new_token(), engine.clock.now_ms())
    _unchanged(engine, job_id, before)


def test_fence_runs_only_the_current_token(engine: Engine) -> None:
    job_id = create(engine)
    token = engine.store.get(job_id).token
    assert token is not None
    before = engine.store.get(job_id)
    with pytest.raises(StaleDelivery):
        engine.store.fence(job_id, "not-the-token", "w", engine.clock.now_ms())
    _unchanged(engine, job_id, before)

    running = engine.store.fence(job_id, token, "w", engine.clock.now_ms())
    assert (running.status, running.attempt, running.worker) == (JobStatus.RUNNING, 1, "w")
    with pytest.raises(StaleDelivery):
        engine.store.fence(job_id, token, "w2", engine.clock.now_ms())


def test_heartbeat_extends_only_a_lease_still_held(engine: Engine) -> None:
    job_id = create(engine)
    token = engine.store.get(job_id).token
    assert token is not None
    engine.store.fence(job_id, token, "w", engine.clock.now_ms())
    later = engine.clock.now_ms() + 999 * SECOND

    assert engine.store.heartbeat(job_id, token, later, engine.clock.now_ms()).lease_until == later
    assert _row(engine, job_id).due_at == later
    before = engine.store.get(job_id)
    with pytest.raises(StaleDelivery):
        engine.store.heartbeat(job_id, "zombie", later + 1, engine.clock.now_ms())
    _unchanged(engine, job_id, before)


def test_complete_and_fail_refuse_a_zombie(engine: Engine) -> None:
    job_id = create(engine)
    job = engine.store.get(job_id)
    assert job.token is not None
    running = engine.store.fence(job_id, job.token, "w", engine.clock.now_ms())
    run = RunSummary(scheduled_at=0, attempt=1, status=RunStatus.SUCCEEDED)
    done = Placement(JobStatus.SUCCEEDED, running.scheduled_at, None, 1)

    dead = Placement(JobStatus.DEAD, running.scheduled_at, None, 1)
    for write, placement in ((engine.store.complete, done), (engine.store.fail, dead)):
        with pytest.raises(StaleDelivery):
            write(running, "zombie", placement, run, None)
    _unchanged(engine, job_id, running)

    finished = engine.store.complete(running, job.token, done, run, None)
    assert finished.status is JobStatus.SUCCEEDED and finished.token is None
    assert _index_rows(engine) == []  # terminal jobs leave the due index
    # The same write again (a worker repeating it after an error) knows itself; any other is refused.
    assert engine.store.complete(running, job.token, done, run, None) == finished
    with pytest.raises(StaleDelivery):
        engine.store.complete(running, job.token, done, run.model_copy(update={"worker": "other"}), None)


def test_reclaim_needs_an_expired_lease_and_the_index_row_it_read(engine: Engine) -> None:
    job_id = create(engine)
    queued = engine.store.get(job_id)
    assert queued.token is not None
    job = engine.store.fence(job_id, queued.token, "w", engine.clock.now_ms())
    row = _row(engine, job_id)
    run = RunSummary(scheduled_at=0, attempt=1, status=RunStatus.LOST)
    retry = Placement(JobStatus.FAILED, job.scheduled_at, engine.clock.now_ms(), 1)
    with pytest.raises(StaleDelivery):
        engine.store.reclaim(job, row.due_key, retry, run, new_token())
    _unchanged(engine, job_id, job)

    engine.clock.set(row.due_at + 1)
    beaten = engine.store.heartbeat(job_id, queued.token, row.due_at + 10**6, row.due_at)
    with pytest.raises(StaleDelivery):  # a heartbeat landed after the tick read the row
        engine.store.reclaim(job, row.due_key, retry, run, new_token())
    _unchanged(engine, job_id, beaten)

    row = _row(engine, job_id)
    engine.clock.set(row.due_at + 1)
    retry = Placement(JobStatus.FAILED, job.scheduled_at, engine.clock.now_ms(), 1)
    reclaimed = engine.store.reclaim(beaten, row.due_key, retry, run, new_token())
    assert reclaimed.status is JobStatus.QUEUED and reclaimed.token != job.token


def test_put_run_writes_each_attempt_once(engine: Engine) -> None:
    run = Run(job_id="j1", scheduled_at=1, attempt=1, status=RunStatus.SUCCEEDED)
    assert engine.store.put_run(run) is True
    assert engine.store.put_run(run.model_copy(update={"status": RunStatus.LOST})) is False
    assert [r.status for r in engine.store.runs("j1", 10, None)[0]] == [RunStatus.SUCCEEDED]


def test_create_with_an_idempotency_key_creates_one_job(engine: Engine) -> None:
    template = engine.store.get(create(engine))
    expires = engine.clock.now_ms() // 1000 + 60

    def attempt(job_id: str, body_hash: str) -> tuple[Any, bool]:
        record = IdempotencyRecord("key-1", body_hash, job_id, expires)
        return engine.store.create(template.model_copy(update={"id": job_id}), record)

    first, created = attempt("a", "hash-a")
    again, created_again = attempt("b", "hash-a")

    assert (created, created_again) == (True, False)
    assert again.id == first.id == "a"
    with pytest.raises(Conflict):
        attempt("c", "hash-b")
    with pytest.raises(Exception, match="not found"):
        engine.store.get("b")


def test_api_changes_are_conditional_on_the_version_read(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    job = engine.store.get(job_id)
    engine.store.pause(job, on_pause(job))

    with pytest.raises(StaleDelivery):
        engine.store.cancel(job, on_cancel(job))  # read before the pause: its version is stale
    paused = engine.store.get(job_id)
    assert paused.paused and _index_rows(engine) == []
    cancelled = engine.store.cancel(paused, on_cancel(paused))
    assert cancelled.status is JobStatus.CANCELLED


def test_a_create_that_stopped_after_its_reservation_is_finished_by_the_retry(engine: Engine) -> None:
    template = engine.store.get(create(engine))
    record = IdempotencyRecord("key-2", "hash-a", "first-id", engine.clock.now_ms() // 1000 + 60)
    assert engine.store._reserve(record)  # the first attempt died here, before writing its job

    retry = IdempotencyRecord("key-2", "hash-a", "retry-id", record.expires_at)
    job, created = engine.store.create(template.model_copy(update={"id": "retry-id"}), retry)

    assert (job.id, created) == ("first-id", True)
    assert engine.store.get("first-id").id == "first-id"
    with pytest.raises(Exception, match="not found"):
        engine.store.get("retry-id")


def test_a_create_that_writes_its_job_after_its_retry_did_leaves_the_job_as_it_moved_on(
    engine: Engine,
) -> None:
    """The first try reserved its key, then stalled (an API call that outlived its client's
    timeout); the client's retry finished the job, and a user cancelled it. The first try's write of
    the job, when it comes, finds the job there: it answers with the job as it is, and overwrites
    nothing."""
    template = engine.store.get(create(engine))
    record = IdempotencyRecord("key-3", "hash-a", "first-id", engine.clock.now_ms() // 1000 + 60)
    assert engine.store._reserve(record)
    first = template.model_copy(update={"id": "first-id"})
    retry = IdempotencyRecord("key-3", "hash-a", "retry-id", record.expires_at)
    engine.store.create(template.model_copy(update={"id": "retry-id"}), retry)
    made = engine.store.get("first-id")
    cancelled = engine.store.cancel(made, on_cancel(made))

    job, created = engine.store._put_new(first, record)

    assert (job.status, created) == (JobStatus.CANCELLED, False)
    assert engine.store.get("first-id") == cancelled


def test_a_transaction_conflict_is_retried_because_the_write_did_not_apply(engine: Engine) -> None:
    from tests.chaos.faults import error_response

    job_id = create(engine)
    token = engine.store.get(job_id).token
    assert token is not None
    conflicts = []

    def conflict_twice(request: Any, **_: Any) -> Any:
        if b"UpdateItem" in request.headers.get("X-Amz-Target", b"") and len(conflicts) < 2:
            conflicts.append(request)
            return error_response(request, "TransactionConflictException")
        return None

    engine.store._client.meta.events.register("before-send.dynamodb", conflict_twice)
    running = engine.store.fence(job_id, token, "w", engine.clock.now_ms())

    assert len(conflicts) == 2
    assert running.status is JobStatus.RUNNING and running.attempt == 1


def test_catch_up_needs_the_queued_token(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    row = _row(engine, job_id)
    queued = engine.store.claim(row, new_token(), engine.clock.now_ms())
    assert queued.token is not None and queued.scheduled_at is not None
    nxt = queued.scheduled_at + 3600 * SECOND
    placement = Placement(JobStatus.PENDING, nxt, nxt, 0)

    with pytest.raises(StaleDelivery):
        engine.store.catch_up(queued, "not-the-token", placement, None)
    _unchanged(engine, job_id, queued)
    skipped = engine.store.catch_up(queued, queued.token, placement, None)
    assert (skipped.status, skipped.scheduled_at) == (JobStatus.PENDING, nxt)
    # An hour ahead, it waits with a token of its own: the claimed one is void.
    assert skipped.token not in (None, queued.token)


@pytest.mark.parametrize("change", ["resume", "revive", "trigger", "update"])
def test_every_api_change_refuses_a_stale_version(engine: Engine, change: str) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    stale = engine.store.get(job_id)
    engine.store.pause(stale, on_pause(stale))  # someone else's change: the version moves on
    current = engine.store.get(job_id)
    now = engine.clock.now_ms()
    placement = Placement(JobStatus.PENDING, now, now + 3600 * SECOND, 0)
    writes = {
        "resume": lambda: engine.store.resume(stale, placement, None),
        "revive": lambda: engine.store.revive(stale, placement, None),
        "trigger": lambda: engine.store.trigger(stale, placement, None),
        "update": lambda: engine.store.update(stale, {"name": "renamed"}, None, None),
    }

    with pytest.raises(StaleDelivery):
        writes[change]()
    _unchanged(engine, job_id, current)
