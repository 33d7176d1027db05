"""Limits per key against the emulator: a slot is a lease taken with the fence and returned with the
settle, a held-back occurrence stays queued and uses no attempt, high goes before low on one key, and
a key's rate holds (docs/design.md, "Limits per key")."""

from __future__ import annotations

import contextlib
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sundial.contract.jobs import JobCreate, JobUpdate
from sundial.contract.limits import LimitPut
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.clock import format_rfc3339
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine import gate
from sundial.shared.engine.gate import HeldBack
from sundial.shared.engine.worker import AttemptEnd, Outcome
from sundial.shared.errors import StaleDelivery
from sundial.shared.limits import WAITERS_KEPT
from sundial.shared.models import Job
from sundial.shared.service.limits import LimitService
from tests.adapter.conftest import Engine, python_target

SECOND = 1000
KEY = "payments-api"


def limit(engine: Engine, **fields: Any) -> LimitService:
    service = LimitService(engine.store, engine.clock)
    service.put(KEY, LimitPut.model_validate(fields))
    return service


def create(engine: Engine, **fields: Any) -> str:
    body = {"target": python_target(), "limit_key": KEY, "run_at": format_rfc3339(engine.clock.now_ms())}
    view, _ = engine.service.create(JobCreate.model_validate({**body, **fields}))
    return view.id


def messages_of(engine: Engine, *job_ids: str) -> dict[str, JobMessage]:
    found = {m.job_id: m for m in engine.receive()}
    return {job_id: found[job_id] for job_id in job_ids}


def fence(engine: Engine, message: JobMessage) -> Job:
    return engine.worker.fence(message)


def settle(engine: Engine, job: Job, ok: bool = True) -> Outcome:
    end = AttemptEnd(None if ok else "target said no")
    assert job.token is not None and job.started_at is not None
    return engine.worker.finish(job, job.token, job.started_at, end).outcome


def held_again(engine: Engine, job_id: str) -> JobMessage:
    """The message a hold sent back to its queue."""
    return next(m for m in reversed(engine.receive()) if m.job_id == job_id)


def test_at_most_max_concurrent_run_and_a_settle_gives_its_slot_back(engine: Engine) -> None:
    service = limit(engine, max_concurrent=2)
    ids = [create(engine) for _ in range(3)]
    messages = messages_of(engine, *ids)

    first, second = fence(engine, messages[ids[0]]), fence(engine, messages[ids[1]])
    with pytest.raises(HeldBack):
        fence(engine, messages[ids[2]])

    third = engine.store.get(ids[2])
    assert third.status is JobStatus.QUEUED and third.attempt == 0  # held back: no attempt used
    assert third.limit_held_since is not None
    view = service.get(KEY)
    assert (view.running, view.waiting) == (2, 1)
    again = held_again(engine, ids[2])
    assert again.held_since is not None and again.not_before is not None and again.holds == 1

    assert settle(engine, first) is Outcome.SUCCEEDED
    assert service.get(KEY).running == 1
    engine.clock.advance((again.not_before - engine.clock.now_ms()) / SECOND)
    started = fence(engine, again)
    assert started.status is JobStatus.RUNNING and started.attempt == 1
    assert started.limit_wait_ms is not None and started.limit_wait_ms >= 0
    assert service.get(KEY).running == 2 and service.get(KEY).waiting == 0
    settle(engine, second)
    settle(engine, started)
    assert service.get(KEY).running == 0
    runs = engine.store.runs(ids[2], 10, None)[0]
    assert runs[0].limit_wait_ms == started.limit_wait_ms


def test_a_slot_whose_worker_vanished_comes_back_when_its_attempts_lease_ends(engine: Engine) -> None:
    service = limit(engine, max_concurrent=1)
    ids = [create(engine, timeout_seconds=30) for _ in range(2)]
    messages = messages_of(engine, *ids)
    vanished = fence(engine, messages[ids[0]])  # its worker dies: no settle, no heartbeat
    with pytest.raises(HeldBack):
        fence(engine, messages[ids[1]])
    again = held_again(engine, ids[1])

    assert vanished.lease_until is not None
    engine.clock.advance((vanished.lease_until - engine.clock.now_ms()) / SECOND - 1)
    with pytest.raises(HeldBack):  # the lease still runs: so does the slot
        fence(engine, again)
    again = held_again(engine, ids[1])
    assert service.get(KEY).running == 1

    engine.clock.advance(2)
    assert service.get(KEY).running == 0
    started = fence(engine, again)
    assert started.status is JobStatus.RUNNING
    assert service.get(KEY).running == 1


def test_a_later_high_starts_before_an_earlier_low_on_one_key(engine: Engine) -> None:
    limit(engine, max_concurrent=1)
    busy, low, high = create(engine), create(engine, priority="low"), create(engine, priority="high")
    messages = messages_of(engine, busy, low, high)
    running = fence(engine, messages[busy])
    with pytest.raises(HeldBack):
        fence(engine, messages[low])
    low_again = held_again(engine, low)
    with pytest.raises(HeldBack):
        fence(engine, messages[high])
    high_again = held_again(engine, high)

    settle(engine, running)
    with pytest.raises(HeldBack):  # the low looks first, but the high waits before it
        fence(engine, low_again)
    low_again = held_again(engine, low)
    started = fence(engine, high_again)
    assert started.id == high and started.status is JobStatus.RUNNING
    settle(engine, started)
    assert fence(engine, low_again).status is JobStatus.RUNNING


def test_starts_keep_to_the_keys_rate_and_burst(engine: Engine) -> None:
    limit(engine, per_second=2, burst=2)
    ids = [create(engine) for _ in range(5)]
    messages = messages_of(engine, *ids)
    started = []
    held: list[JobMessage] = []
    for job_id in ids:
        try:
            started.append(fence(engine, messages[job_id]))
        except HeldBack as exc:
            held.append(exc.message)
    assert len(started) == 2 and len(held) == 3  # the burst, at once
    engine.clock.advance(1)  # two more tokens
    assert sum(1 for m in held[:2] if _starts(engine, m)) == 2
    assert not _starts(engine, held[2])


def _starts(engine: Engine, message: JobMessage) -> bool:
    try:
        fence(engine, message)
    except HeldBack:
        return False
    return True


def test_a_message_that_names_no_key_is_fenced_by_the_jobs_own_key(engine: Engine) -> None:
    limit(engine, max_concurrent=1)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])
    keyless = messages[ids[1]].model_copy(update={"limit_key": None})  # as the tick's ahead rows are

    result = engine.worker.process(keyless)

    assert result.outcome is Outcome.HELD
    assert engine.store.get(ids[1]).status is JobStatus.QUEUED


def test_a_deleted_limit_lets_its_jobs_run_unlimited(engine: Engine) -> None:
    service = limit(engine, max_concurrent=1)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    first = fence(engine, messages[ids[0]])
    service.delete(KEY)
    assert fence(engine, messages[ids[1]]).status is JobStatus.RUNNING
    assert settle(engine, first) is Outcome.SUCCEEDED


def test_a_cancelled_waiting_occurrence_is_dropped_when_it_looks_again(engine: Engine) -> None:
    limit(engine, max_concurrent=1)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])
    with pytest.raises(HeldBack):
        fence(engine, messages[ids[1]])
    again = held_again(engine, ids[1])
    engine.service.cancel(ids[1])
    with pytest.raises(StaleDelivery):
        fence(engine, again)


def test_a_patched_key_is_the_one_the_next_fence_takes(engine: Engine) -> None:
    limit(engine, max_concurrent=1)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])
    engine.service.update(ids[1], JobUpdate.model_validate({"limit_key": None}))
    assert engine.worker.process(messages[ids[1]]).outcome is Outcome.SUCCEEDED


def test_a_worker_whose_clock_lags_takes_no_refill_twice(engine: Engine) -> None:
    limit(engine, per_second=2.5, burst=2)
    start = engine.clock.now_ms()
    ids = [create(engine) for _ in range(4)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])  # 1 token left, as of start
    engine.clock.set(start + 1400)
    fence(engine, messages[ids[1]])  # refilled to 2, 1 left, as of start + 1.4 s
    engine.clock.set(start + 1000)  # another worker, its clock 0.4 s behind: none left as of then
    with pytest.raises(HeldBack) as lagging:
        fence(engine, messages[ids[2]])
    engine.clock.set(start + 1400)
    assert fence(engine, lagging.value.message).status is JobStatus.RUNNING  # the last token, first in line
    with pytest.raises(HeldBack):  # no refill has come since start + 1.4 s
        fence(engine, messages[ids[3]])


def test_many_held_back_at_once_each_get_their_own_instant_in_the_queue_of_looks(engine: Engine) -> None:
    limit(engine, per_second=2, burst=1)
    ids = [create(engine) for _ in range(30)]
    messages = messages_of(engine, *ids)
    held: list[JobMessage] = []
    for job_id in ids:
        try:
            fence(engine, messages[job_id])
        except HeldBack as exc:
            held.append(exc.message)
    beyond = sorted(m.looks_at for m in held if m.looks_at is not None)
    assert len(beyond) == 30 - 1 - WAITERS_KEPT  # one started, the line full, the rest beyond it
    gaps = {later - earlier for earlier, later in itertools.pairwise(beyond)}
    assert gaps == {500}  # one start apart at 2 a second, none sharing an instant


def test_a_patch_of_its_key_stops_showing_a_job_as_waiting_on_the_old_one(engine: Engine) -> None:
    limit(engine, max_concurrent=1)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])
    with pytest.raises(HeldBack):
        fence(engine, messages[ids[1]])
    assert engine.service.get(ids[1]).waiting_on_limit_since is not None

    view = engine.service.update(ids[1], JobUpdate.model_validate({"limit_key": None}))

    assert view.waiting_on_limit_since is None and engine.store.get(ids[1]).limit_held_since is None


def test_a_shard_that_refuses_an_instant_to_look_again_does_not_fail_the_hold(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=1, burst=1)
    ids = [create(engine) for _ in range(WAITERS_KEPT + 2)]
    messages = messages_of(engine, *ids)
    for job_id in ids[: WAITERS_KEPT + 1]:  # one starts, the rest fill the line
        with contextlib.suppress(HeldBack):
            fence(engine, messages[job_id])

    def throttled(*_: Any) -> int:
        error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
        raise ClientError(error, "UpdateItem")  # type: ignore[arg-type]

    monkeypatch.setattr(engine.store, "reserve_look", throttled)
    with pytest.raises(HeldBack) as held:
        fence(engine, messages[ids[WAITERS_KEPT + 1]])

    again = held.value.message
    assert again.looks_at is None and again.not_before is not None  # it looks again, unreserved
    job = engine.store.get(ids[WAITERS_KEPT + 1])
    assert job.status is JobStatus.QUEUED and (job.lease_until or 0) > again.not_before


def test_a_shard_the_key_no_longer_uses_does_not_let_a_job_run_unlimited(
    engine: Engine, monkeypatch: Any
) -> None:
    service = limit(engine, per_second=300)  # three shards
    ids = [create(engine) for _ in range(3)]
    messages = messages_of(engine, *ids)
    monkeypatch.setattr(gate.random, "random", lambda: 0.99)
    monkeypatch.setattr(gate.random, "choice", max)  # always the last shard known
    fence(engine, messages[ids[0]])  # the worker now knows three shards, for a second
    service.put(KEY, LimitPut.model_validate({"max_concurrent": 1}))  # one shard from now on

    fence(engine, messages[ids[1]])
    with pytest.raises(HeldBack):  # the one slot is taken: shard 2 is no way around it
        fence(engine, messages[ids[2]])


def _row_keys(engine: Engine, job_id: str) -> list[str]:
    return [row.due_key for row in engine.index_rows() if row.job_id == job_id]


def test_an_on_time_fence_that_takes_a_slot_keeps_the_queued_lease_and_its_index_row(engine: Engine) -> None:
    limit(engine, max_concurrent=2)
    job_id = create(engine, run_at=format_rfc3339(engine.clock.now_ms() + 5 * SECOND), timeout_seconds=30)
    queued = engine.store.get(job_id)
    rows_before = _row_keys(engine, job_id)
    [message] = messages_of(engine, job_id).values()
    engine.clock.advance(5.5)  # a start half a second after its instant

    started = fence(engine, message)

    assert started.status is JobStatus.RUNNING and started.limit_slot is not None
    assert started.lease_until == queued.lease_until  # the lease the create queued it under
    assert _row_keys(engine, job_id) == rows_before  # so its index row did not move
    assert engine.store.limit_shard(KEY, 0).state.holders == {job_id: started.lease_until}


def test_a_slot_taking_fence_of_a_job_under_another_lease_gives_it_a_fresh_one(engine: Engine) -> None:
    """A message whose sender knew another timeout implies another lease than the job's: the fence's
    first write, conditional on the implied lease, fails, and the attempt gets a fresh lease that its
    slot ends with."""
    limit(engine, max_concurrent=2)
    job_id = create(engine, run_at=format_rfc3339(engine.clock.now_ms() + 5 * SECOND), timeout_seconds=30)
    queued = engine.store.get(job_id)
    [message] = messages_of(engine, job_id).values()
    engine.clock.advance(5)

    started = fence(engine, message.model_copy(update={"timeout_seconds": 120}))

    assert started.status is JobStatus.RUNNING and started.lease_until != queued.lease_until
    assert started.lease_until == engine.clock.now_ms() + lifecycle.lease_seconds(120) * SECOND
    assert engine.store.limit_shard(KEY, 0).state.holders == {job_id: started.lease_until}


def test_a_late_fence_that_takes_a_slot_gets_a_fresh_lease(engine: Engine) -> None:
    limit(engine, max_concurrent=2)
    job_id = create(engine, timeout_seconds=30)
    queued = engine.store.get(job_id)
    [message] = messages_of(engine, job_id).values()
    engine.clock.advance(c.HEARTBEAT_EVERY_SECONDS + 1)  # the queued lease no longer covers a start

    started = fence(engine, message)

    assert queued.lease_until is not None and started.lease_until is not None
    assert started.lease_until > queued.lease_until
    assert engine.store.limit_shard(KEY, 0).state.holders == {job_id: started.lease_until}


def test_a_settled_attempt_returns_its_slot_only_while_it_still_holds_it(engine: Engine) -> None:
    """The return is its own write after the settle, conditional on the holder's end: by then a later
    attempt of the job may hold a slot of the same shard under its own lease, and keeps it."""
    limit(engine, max_concurrent=1)
    job_id = create(engine, timeout_seconds=30)
    [message] = messages_of(engine, job_id).values()
    first = fence(engine, message)
    assert first.limit_slot is not None and first.lease_until is not None
    later_lease = first.lease_until + 60 * SECOND
    engine.store.heartbeat(job_id, message.token, later_lease, engine.clock.now_ms(), first.limit_slot)

    assert not engine.store.return_slot(first.limit_slot, job_id, (first.lease_until,), 10)
    assert engine.store.limit_shard(KEY, 0).state.holders == {job_id: later_lease}
    assert engine.store.return_slot(first.limit_slot, job_id, (later_lease,), 10)
    assert engine.store.limit_shard(KEY, 0).state.holders == {}


def test_a_slot_whose_return_failed_comes_back_when_the_attempts_lease_ends(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = limit(engine, max_concurrent=1)
    ids = [create(engine, timeout_seconds=30) for _ in range(2)]
    messages = messages_of(engine, *ids)
    first = fence(engine, messages[ids[0]])

    def throttled(*_: Any) -> bool:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "UpdateItem")

    with monkeypatch.context() as patched:
        patched.setattr(engine.store, "return_slot", throttled)
        assert settle(engine, first) is Outcome.SUCCEEDED  # the settle stands; the slot stays held

    assert engine.store.get(ids[0]).status is JobStatus.SUCCEEDED
    assert service.get(KEY).running == 1
    with pytest.raises(HeldBack):
        fence(engine, messages[ids[1]])
    again = held_again(engine, ids[1])
    assert first.lease_until is not None
    engine.clock.advance((first.lease_until - engine.clock.now_ms()) / SECOND + 1)
    assert service.get(KEY).running == 0
    assert fence(engine, again).status is JobStatus.RUNNING


def test_deliveries_of_one_key_side_by_side_in_a_worker_take_their_slots_without_losing_a_write(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A batch's records run side by side; each take is a transaction conditional on the shard's
    # version. Taken one at a time in the process, none loses its write and tries again.
    limit(engine, max_concurrent=20)
    ids = [create(engine) for _ in range(8)]
    messages = messages_of(engine, *ids)
    fences, lock = [0], threading.Lock()
    store_fence = engine.store.fence

    def counted(*args: Any, **kwargs: Any) -> Job:
        with lock:
            fences[0] += 1
        return store_fence(*args, **kwargs)

    monkeypatch.setattr(engine.store, "fence", counted)
    together = threading.Barrier(len(ids))

    def deliver(job_id: str) -> Job:
        together.wait()
        return fence(engine, messages[job_id])

    with ThreadPoolExecutor(len(ids)) as pool:
        started = list(pool.map(deliver, ids))
    assert all(job.status is JobStatus.RUNNING for job in started)
    assert LimitService(engine.store, engine.clock).get(KEY).running == len(ids)
    assert fences[0] == len(ids)  # one transaction each: none lost to another of the batch


def _answer_first(engine: Engine, monkeypatch: Any, shard: Any) -> list[int]:
    """The next read of the key's shard answers `shard` (as a worker whose read came before other
    takes would see it); later reads are real, and counted in the list answered."""
    real, answers, reads = engine.store.limit_shard, iter([shard]), [0]

    def read(key: str, number: int) -> Any:
        found = next(answers, None)
        if found is not None:
            return found
        reads[0] += 1
        return real(key, number)

    monkeypatch.setattr(engine.store, "limit_shard", read)
    return reads


def test_a_take_read_before_another_start_still_succeeds_while_the_shard_has_room(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=1, burst=3)
    ids = [create(engine) for _ in range(3)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])  # 2 tokens left
    seen = engine.store.limit_shard(KEY, 0)  # a second worker reads them
    fence(engine, messages[ids[1]])  # a third takes one: 1 left

    reads = _answer_first(engine, monkeypatch, seen)
    assert fence(engine, messages[ids[2]]).status is JobStatus.RUNNING
    assert reads == [0]  # its take needed one token and found it: no read again, as a version would


def test_an_arrival_that_loses_its_token_to_another_start_takes_a_place_in_line(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=1, burst=1)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    seen = engine.store.limit_shard(KEY, 0)  # the one token, as a second worker read it
    fence(engine, messages[ids[0]])  # the first worker took it
    # Every read it makes shows the token, as reads racing others' takes do on a busy key.
    monkeypatch.setattr(engine.store, "limit_shard", lambda key, number: seen)
    takes = [0]
    store_fence = engine.store.fence

    def counted(*args: Any, **kwargs: Any) -> Job:
        takes[0] += 1
        return store_fence(*args, **kwargs)

    monkeypatch.setattr(engine.store, "fence", counted)
    with pytest.raises(HeldBack) as held:
        fence(engine, messages[ids[1]])

    assert takes == [1]  # lost once, then it waits its turn rather than race again
    monkeypatch.undo()
    assert ids[1] in engine.store.limit_shard(KEY, 0).state.waiters
    assert held.value.delay_ms >= 1000


def _shard_rate_at(engine: Engine) -> float | None:
    return engine.store.limit_shard(KEY, 0).state.rate_at


def _booked_one(engine: Engine, **limits: Any) -> tuple[str, JobMessage]:
    """A key at its burst, and an occurrence held back behind it with the token it booked."""
    limit(engine, **limits)
    ids = [create(engine) for _ in range(int(limits["burst"]) + 1)]
    messages = messages_of(engine, *ids)
    for job_id in ids[:-1]:
        fence(engine, messages[job_id])
    with pytest.raises(HeldBack) as held:
        fence(engine, messages[ids[-1]])
    return ids[-1], held.value.message


def test_an_occurrence_held_back_on_a_busy_rate_books_its_token_and_starts_on_it_unread(
    engine: Engine, monkeypatch: Any
) -> None:
    before = engine.clock.now_ms()
    job_id, again = _booked_one(engine, per_second=2, burst=2)
    assert engine.store.get(job_id).status is JobStatus.QUEUED
    booking = again.booking
    assert booking is not None and again.looks_at is None
    # The two starts moved the bucket a second ahead; the booking one more start's time.
    assert (booking.opens_at, booking.closes_at) == (before + 500, before + 1000)
    assert again.not_before == booking.opens_at
    assert _shard_rate_at(engine) == before + 1500
    assert engine.store.limit_shard(KEY, 0).state.waiters == {}  # nothing to wait for in line

    reads: list[int] = []
    monkeypatch.setattr(engine.store, "limit_shard", lambda *args: reads.append(1))
    engine.clock.set(booking.opens_at)
    started = fence(engine, again)
    monkeypatch.undo()

    assert started.status is JobStatus.RUNNING and started.attempt == 1 and reads == []
    assert started.limit_wait_ms == 500
    assert _shard_rate_at(engine) == before + 1500  # its token was the booked one: nothing more taken


def test_an_arrival_delivered_later_than_a_booking_window_waits_in_line_rather_than_book(
    engine: Engine,
) -> None:
    limit(engine, per_second=2, burst=2)  # a window of one start's time: 500 ms
    ids = [create(engine) for _ in range(3)]
    messages = messages_of(engine, *ids)
    engine.clock.set(messages[ids[2]].starts_after + 501)  # the queue is behind by more than that
    fence(engine, messages[ids[0]])
    fence(engine, messages[ids[1]])
    before = _shard_rate_at(engine)
    with pytest.raises(HeldBack) as held:
        fence(engine, messages[ids[2]])
    assert held.value.message.booking is None and _shard_rate_at(engine) == before  # no token taken
    assert ids[2] in engine.store.limit_shard(KEY, 0).state.waiters  # its place in line instead


def test_occurrences_whose_instant_came_with_no_token_left_to_book_take_their_next_instants(
    engine: Engine,
) -> None:
    limit(engine, per_second=2, burst=2)
    ids = [create(engine) for _ in range(2 + 6 + WAITERS_KEPT + 2)]
    messages = messages_of(engine, *ids)
    for job_id in ids[:-2]:  # two start, six book the horizon full, and the line keeps the rest
        with contextlib.suppress(HeldBack):
            fence(engine, messages[job_id])
    assert len(engine.store.limit_shard(KEY, 0).state.waiters) == WAITERS_KEPT
    now = engine.clock.now_ms()
    came = {"looks_at": now - SECOND, "held_on": 0, "held_since": now - 5 * SECOND, "holds": 3}

    again = []
    for job_id in ids[-2:]:
        with pytest.raises(HeldBack) as held:
            fence(engine, messages[job_id].model_copy(update=came))
        again.append(held.value.message)
    # Each takes the next instant of the queue of looks, one start apart, rather than look again as
    # soon as a token might be free, when every other such occurrence would look too.
    assert all(m.booking is None and m.looks_at is not None and m.looks_at > now for m in again)
    assert again[1].looks_at - again[0].looks_at == 500  # type: ignore[operator]
    assert again[0].not_before == again[0].looks_at


def test_a_booking_whose_window_has_passed_is_not_used(engine: Engine) -> None:
    before = engine.clock.now_ms()
    _, again = _booked_one(engine, per_second=2, burst=2)
    assert again.booking is not None
    engine.clock.set(again.booking.closes_at + 1)  # delivered late: its token's time has gone
    started = fence(engine, again)  # on a token taken now, as any arrival's
    assert started.status is JobStatus.RUNNING
    assert _shard_rate_at(engine) == before + 2000


def test_a_limit_changed_since_the_booking_holds_its_occurrence_to_the_new_one(engine: Engine) -> None:
    job_id, again = _booked_one(engine, per_second=2, burst=2)
    assert again.booking is not None
    slower = LimitPut.model_validate({"per_second": 0.1, "burst": 1})
    LimitService(engine.store, engine.clock).put(KEY, slower)
    engine.clock.set(again.booking.opens_at)
    with pytest.raises(HeldBack):  # a start each 10 s now: the booking is no way around it
        fence(engine, again)
    assert engine.store.get(job_id).status is JobStatus.QUEUED


def _throttle(*_: Any) -> Any:
    error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
    raise ClientError(error, "GetItem")  # type: ignore[arg-type]


def test_an_arrival_whose_shard_read_is_throttled_is_held_back_without_it(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=1, burst=1)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])  # this worker has seen the key limited
    shard_before = engine.store.limit_shard(KEY, 0)
    now = engine.clock.now_ms()

    monkeypatch.setattr(engine.store, "limit_shard", _throttle)
    with pytest.raises(HeldBack) as held:
        fence(engine, messages[ids[1]])
    monkeypatch.undo()

    again = held.value.message
    assert again.not_before is not None and now + SECOND <= again.not_before <= now + 2 * SECOND
    job = engine.store.get(ids[1])
    assert job.status is JobStatus.QUEUED and job.attempt == 0 and (job.lease_until or 0) > again.not_before
    assert engine.store.limit_shard(KEY, 0) == shard_before  # nothing written to the shard it could not read
    engine.clock.set(again.not_before + SECOND)
    assert fence(engine, again).status is JobStatus.RUNNING


def test_an_arrival_whose_take_a_hot_shard_refuses_is_held_back_not_failed(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=1, burst=2)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])  # this worker has seen the key limited; a token is left
    shard_before = engine.store.limit_shard(KEY, 0)
    now = engine.clock.now_ms()
    real_transact, transactions = engine.store._client.transact_write_items, [0]

    def refused(**request: Any) -> Any:
        transactions[0] += 1
        error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}
        raise ClientError(error, "TransactWriteItems")  # type: ignore[arg-type]

    monkeypatch.setattr(engine.store._client, "transact_write_items", refused)
    with pytest.raises(HeldBack) as held:
        fence(engine, messages[ids[1]])
    monkeypatch.setattr(engine.store._client, "transact_write_items", real_transact)

    assert transactions[0] == 1  # not ridden out: its retries are what keeps a hot shard refusing
    again = held.value.message
    assert again.not_before is not None and now + SECOND <= again.not_before <= now + 2 * SECOND
    job = engine.store.get(ids[1])
    assert job.status is JobStatus.QUEUED and job.attempt == 0 and (job.lease_until or 0) > again.not_before
    assert engine.store.limit_shard(KEY, 0) == shard_before  # the refused take wrote nothing
    engine.clock.set(again.not_before)
    assert fence(engine, again).status is JobStatus.RUNNING


def test_a_take_applied_whose_read_after_is_refused_starts_its_job_not_holds_it(
    engine: Engine, monkeypatch: Any
) -> None:
    """A transaction answers no item, so the fence reads the job after it; a throttle of that read
    is no refused take: the retry recognises its own applied fence, where a hold would find the job
    running, drop the delivery, and leave the attempt to be reclaimed as lost."""
    limit(engine, per_second=1, burst=2)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])  # this worker has seen the key limited; one token is left
    real_get, reads = engine.store.get, [0]

    def refused_once(job_id: str) -> Job:
        reads[0] += 1
        return _throttle() if reads[0] == 1 else real_get(job_id)

    monkeypatch.setattr(engine.store, "get", refused_once)
    started = fence(engine, messages[ids[1]])
    monkeypatch.undo()

    assert reads[0] == 1 and started.status is JobStatus.RUNNING and started.attempt == 1
    assert engine.store.get(ids[1]).token == messages[ids[1]].token


def test_a_hold_whose_look_at_the_job_is_refused_still_sends_it_back(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=1, burst=1)
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    fence(engine, messages[ids[0]])  # the key's one token
    with pytest.raises(HeldBack) as first:
        fence(engine, messages[ids[1]])
    lease = engine.store.get(ids[1]).lease_until

    monkeypatch.setattr(engine.store, "get", _throttle)  # the table refuses the job's read
    with pytest.raises(HeldBack) as second:  # its lease still covers the wait: a read, no write
        fence(engine, first.value.message)
    monkeypatch.undo()

    assert second.value.message.holds == 2
    job = engine.store.get(ids[1])
    assert job.status is JobStatus.QUEUED and job.attempt == 0 and job.lease_until == lease
    engine.clock.set((second.value.message.not_before or 0) + SECOND)
    assert fence(engine, second.value.message).status is JobStatus.RUNNING


def test_a_throttled_read_of_a_key_this_worker_never_saw_limited_is_ridden_out(
    engine: Engine, monkeypatch: Any
) -> None:
    job_id = create(engine)  # its key has no limit: holding it would make it wait for nothing
    message = messages_of(engine, job_id)[job_id]
    real, reads = engine.store.limit_shard, [0]

    def throttled_once(key: str, number: int) -> Any:
        reads[0] += 1
        return _throttle() if reads[0] == 1 else real(key, number)

    monkeypatch.setattr(engine.store, "limit_shard", throttled_once)
    assert fence(engine, message).status is JobStatus.RUNNING and reads[0] == 2


@pytest.mark.parametrize("read_after", ["answered", "throttled"])
def test_a_take_applied_with_its_answer_lost_is_recognised_though_the_key_now_shows_no_room(
    engine: Engine, monkeypatch: Any, read_after: str
) -> None:
    """Its own take used the key's one token: the read after shows none (or is refused), yet the
    retry must find its own fence, not hold the job back and call its own start another's."""
    limit(engine, per_second=1, burst=1)
    job_id = create(engine)
    message = messages_of(engine, job_id)[job_id]
    real_fence, real_read, reads = engine.store.fence, engine.store.limit_shard, [0]

    def applied_answer_lost(*args: Any, **kwargs: Any) -> Job:
        monkeypatch.setattr(engine.store, "fence", real_fence)
        real_fence(*args, **kwargs)
        error = {
            "Error": {"Code": "InternalServerError", "Message": "no answer"},
            "ResponseMetadata": {"HTTPStatusCode": 500},
        }
        raise ClientError(error, "TransactWriteItems")  # type: ignore[arg-type]

    def throttled_after_the_take(key: str, number: int) -> Any:
        reads[0] += 1
        return _throttle() if reads[0] == 2 and read_after == "throttled" else real_read(key, number)

    monkeypatch.setattr(engine.store, "fence", applied_answer_lost)
    monkeypatch.setattr(engine.store, "limit_shard", throttled_after_the_take)
    started = fence(engine, message)

    assert started.status is JobStatus.RUNNING and started.attempt == 1
    assert reads[0] == (3 if read_after == "throttled" else 2)
    assert _shard_rate_at(engine) == (started.started_at or 0) + SECOND  # one token taken, once


def test_takes_that_each_read_a_full_bucket_all_start_while_it_has_tokens(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=1, burst=3)
    ids = [create(engine) for _ in range(3)]
    messages = messages_of(engine, *ids)
    full = engine.store.limit_shard(KEY, 0)  # what two more workers read before any start
    fence(engine, messages[ids[0]])  # a third started first: the bucket's time set from now

    for job_id in ids[1:]:
        reads = _answer_first(engine, monkeypatch, full)
        assert fence(engine, messages[job_id]).status is JobStatus.RUNNING
        assert reads == [0]  # taken from the bucket in use, without reading it again
        monkeypatch.undo()
    assert _shard_rate_at(engine) == engine.clock.now_ms() + 3 * SECOND  # three tokens, once each


def test_an_occurrence_held_back_on_one_shard_looks_again_on_that_shard_where_its_place_is(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=200, burst=1)  # two shards, one token each
    start = engine.clock.now_ms()
    ids = [create(engine) for _ in range(3)]
    messages = messages_of(engine, *ids)
    monkeypatch.setattr(gate.random, "random", lambda: 0.99)  # no arrival reads shard 0 first
    monkeypatch.setattr(gate.random, "choice", max)  # but the highest it has not tried
    fence(engine, messages[ids[0]])  # shard 1's token
    fence(engine, messages[ids[1]])  # shard 1 is empty: shard 0's token
    with pytest.raises(HeldBack) as held:
        fence(engine, messages[ids[2]])  # both empty: held back on the last it read, shard 0
    again = held.value.message
    assert again.held_on == 0
    assert ids[2] in engine.store.limit_shard(KEY, 0).state.waiters
    engine.clock.set(start + SECOND)  # both shards have their token again

    assert fence(engine, again).status is JobStatus.RUNNING  # an arrival would have read shard 1 first

    shards = [engine.store.limit_shard(KEY, n).state for n in (0, 1)]
    assert shards[0].rate_at == start + SECOND + 10 and ids[2] not in shards[0].waiters
    assert shards[1].rate_at == start + 10  # untouched since the first start took its token


def _held_on_shard_1(engine: Engine, monkeypatch: Any) -> tuple[LimitService, JobMessage, JobMessage]:
    """On a key of two shards with one token each, two starts and a third held back on shard 1: the
    limit, the held-back message, and a fourth job's first."""
    service = limit(engine, per_second=200, burst=1)
    ids = [create(engine) for _ in range(4)]
    messages = messages_of(engine, *ids)
    monkeypatch.setattr(gate.random, "random", lambda: 0.99)
    monkeypatch.setattr(gate.random, "choice", min)  # shard 1 after shard 0
    fence(engine, messages[ids[0]])
    fence(engine, messages[ids[1]])
    with pytest.raises(HeldBack) as held:
        fence(engine, messages[ids[2]])
    assert held.value.message.held_on == 1
    return service, held.value.message, messages[ids[3]]


def test_an_occurrence_held_on_a_shard_reads_that_shard_alone_for_the_count_too(
    engine: Engine, monkeypatch: Any
) -> None:
    start = engine.clock.now_ms()
    _, again, arrival = _held_on_shard_1(engine, monkeypatch)
    engine.clock.set(start + 5 * SECOND)  # the count this worker read is long out of date
    real_read, read = engine.store.limit_shard, []

    def counted(key: str, number: int) -> Any:
        read.append(number)
        return real_read(key, number)

    monkeypatch.setattr(engine.store, "limit_shard", counted)
    assert fence(engine, again).status is JobStatus.RUNNING
    assert read == [1]  # its own shard gave the count: shard 0 is read by arrivals alone
    assert fence(engine, arrival).status is JobStatus.RUNNING
    assert read == [1, 0]  # an arrival within the count's second picks at once, from what shard 1 said


def test_an_arrival_whose_count_is_out_of_date_reads_one_shard_for_it_not_shard_0_first(
    engine: Engine, monkeypatch: Any
) -> None:
    start = engine.clock.now_ms()
    limit(engine, per_second=300)  # three shards
    ids = [create(engine) for _ in range(2)]
    messages = messages_of(engine, *ids)
    monkeypatch.setattr(gate.random, "random", lambda: 0.99)
    monkeypatch.setattr(gate.random, "choice", max)
    assert fence(engine, messages[ids[0]]).status is JobStatus.RUNNING  # this worker learns the count
    engine.clock.set(start + 5 * SECOND)  # and it is long out of date
    real_read, read = engine.store.limit_shard, []

    def counted(key: str, number: int) -> Any:
        read.append(number)
        return real_read(key, number)

    monkeypatch.setattr(engine.store, "limit_shard", counted)
    assert fence(engine, messages[ids[1]]).status is JobStatus.RUNNING
    assert read == [2]  # any shard tells the count: shard 0 for it, then another, were two reads


def test_an_occurrence_held_on_a_shard_the_key_gave_up_looks_again_on_one_it_has(
    engine: Engine, monkeypatch: Any
) -> None:
    service, again, arrival = _held_on_shard_1(engine, monkeypatch)
    service.put(KEY, LimitPut.model_validate({"max_concurrent": 1}))  # one shard, its slot free

    assert fence(engine, again).status is JobStatus.RUNNING  # on shard 0, not unlimited
    with pytest.raises(HeldBack) as after:
        fence(engine, arrival)
    assert after.value.message.held_on == 0


def test_an_arrival_that_read_shard_0_for_the_count_and_passed_it_over_picks_among_the_others(
    engine: Engine, monkeypatch: Any
) -> None:
    limit(engine, per_second=300)  # three shards
    ids = [create(engine) for _ in range(1)]
    offered: list[list[int]] = []

    def pick(candidates: list[int]) -> int:
        offered.append(list(candidates))
        return candidates[0]

    monkeypatch.setattr(gate.random, "random", lambda: 0.99)  # not shard 0, its one chance in three
    monkeypatch.setattr(gate.random, "choice", pick)
    assert fence(engine, messages_of(engine, *ids)[ids[0]]).status is JobStatus.RUNNING
    assert offered == [[1, 2]]  # offered shard 0 again, such arrivals met it five times in nine
