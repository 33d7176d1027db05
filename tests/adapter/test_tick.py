"""The tick at scale's edges: it holds its deadline with sends counted, reads every shard's rows in
one order merged by due time, keeps a sent mark per shard, and loses nothing when it overlaps
another tick or when the shard count changes."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sundial.contract.jobs import JobCreate
from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from sundial.shared.clock import FixedClock, format_rfc3339
from sundial.shared.dispatch import Dispatcher, JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.engine.tick_report import TickReport
from sundial.shared.engine.tick_sends import PRIORITY_RANK, Due, Taken
from sundial.shared.engine.worker import Outcome
from sundial.shared.service.service import JobService
from sundial.shared.store import DueShards, JobStore, SentMarks, items
from tests.adapter.conftest import Engine, placed_as_before_the_writers_reach, python_target

SECOND = 1000
MINUTE = 60 * SECOND
HORIZON = c.DISPATCH_HORIZON_SECONDS * SECOND
SEND_LATENCY_MS = 40


class SharedClock(FixedClock):
    """A clock that the tick's threads move together."""

    def __init__(self, now_ms: int) -> None:
        super().__init__(now_ms)
        self._lock = threading.Lock()

    def advance(self, seconds: float) -> None:
        with self._lock:
            super().advance(seconds)


class SlowSends(Dispatcher):
    """The real dispatcher, each request taking SEND_LATENCY_MS of the injected clock; notes when
    each send started."""

    def __init__(self, engine: Engine, clock: SharedClock) -> None:
        resources = engine.resources
        super().__init__(engine.sqs, resources.queue_urls, resources.dead_letter_queue_url, clock)
        self.clock = clock
        self.started: list[int] = []

    def send(self, messages: Sequence[JobMessage]) -> list[JobMessage]:
        self.started.append(self.clock.now_ms())
        self.clock.advance(SEND_LATENCY_MS / SECOND)
        return super().send(messages)


def create(engine: Engine, run_at: int, priority: str = "medium") -> str:
    body = {"target": python_target(), "run_at": format_rfc3339(run_at), "priority": priority}
    view, _ = engine.service.create(JobCreate.model_validate(body))
    return view.id


def ahead_jobs(engine: Engine, count: int, first_at: int, apart_ms: int = 100) -> dict[str, int]:
    """Jobs placed far ahead (sent by the tick without a claim), due `apart_ms` after each other."""
    return {create(engine, first_at + n * apart_ms): first_at + n * apart_ms for n in range(count)}


def run_everything(engine: Engine, at_ms: int) -> Counter[Outcome]:
    engine.clock.set(at_ms)
    return Counter(result.outcome for result in engine.run_all())


def mark_of(engine: Engine, job_id: str) -> int:
    return engine.store.sent_marks().of(items.shard_number(job_id))


def test_the_tick_stops_sending_at_its_deadline_and_the_next_sends_the_rest_once(engine: Engine) -> None:
    first_at = engine.clock.now_ms() + 10 * MINUTE
    jobs = ahead_jobs(engine, 120, first_at)
    clock = SharedClock(first_at - 30 * SECOND)
    slow = SlowSends(engine, clock)
    deadline = clock.now_ms() + 10 * SEND_LATENCY_MS

    report = Scheduler(EngineContext(engine.store, slow, clock)).tick(deadline)

    assert report.out_of_time
    assert slow.started and all(started < deadline for started in slow.started)
    assert 0 < report.sent_ahead < len(jobs)
    assert report.sent_ahead + report.unsent + report.send_failures <= len(jobs)
    sent = {json.loads(entry["MessageBody"])["job_id"] for entry in engine.sent}
    assert len(sent) == len(engine.sent) == report.sent_ahead
    for job_id in jobs.keys() - sent:  # not sent: the mark of its shard stays below it
        assert mark_of(engine, job_id) < jobs[job_id]

    rest = Scheduler(EngineContext(engine.store, engine.dispatcher, clock)).tick()
    assert not rest.out_of_time
    outcomes = run_everything(engine, first_at + 20 * SECOND)
    copies = rest.sent_ahead - (len(jobs) - len(sent))
    assert outcomes == Counter({Outcome.SUCCEEDED: len(jobs)}) + Counter({Outcome.DROPPED: copies})
    assert all(engine.targets.count(job_id) == 1 for job_id in jobs)


def test_the_rows_of_all_shards_are_taken_in_due_order_and_high_first_within_a_second(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_at = (engine.clock.now_ms() + 10 * MINUTE) // SECOND * SECOND
    for n in range(30):  # within each second: low first, then medium, then high
        create(engine, first_at + n * 370, priority=c.PRIORITIES[2 - n % 3])
    taken: list[tuple[int, Priority]] = []
    take = Scheduler._take

    def noted(self: Scheduler, due: Due, *args: Any) -> Taken | None:
        taken.append((due.row.due_at, due.priority))
        return take(self, due, *args)

    monkeypatch.setattr(Scheduler, "_take", noted)
    engine.clock.set(first_at - 30 * SECOND)

    Scheduler(engine.context, parallelism=1).tick()

    assert len(taken) == 30
    shards = {items.shard_number(row.job_id) for row in engine.index_rows()}
    assert len(shards) > 1
    assert taken == sorted(taken, key=lambda t: (t[0] // SECOND, PRIORITY_RANK[t[1]], t[0]))
    assert [due for due, _ in taken] != sorted(due for due, _ in taken)  # the second's order decided


def test_a_shard_that_could_not_be_read_keeps_its_mark_and_only_its_rows_go_again(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_at = engine.clock.now_ms() + 10 * MINUTE
    jobs = ahead_jobs(engine, 40, first_at)
    broken = items.shard_number(next(iter(jobs)))
    in_broken = [job_id for job_id in jobs if items.shard_number(job_id) == broken]
    read = engine.store.due_rows

    def flaky(priority: str, shard: int, up_to_ms: int) -> Any:
        if shard == broken:
            raise ClientError({"Error": {"Code": "InternalServerError"}}, "Query")
        return read(priority, shard, up_to_ms)

    engine.clock.set(first_at - 30 * SECOND)
    monkeypatch.setattr(engine.store, "due_rows", flaky)
    first = engine.scheduler.tick()
    monkeypatch.undo()
    second = engine.scheduler.tick()

    assert first.unread_shards == len(c.PRIORITIES)
    assert first.sent_ahead == len(jobs) - len(in_broken)
    assert second.sent_ahead == len(in_broken)  # the other shards' marks moved on
    assert run_everything(engine, first_at + 10 * SECOND) == Counter({Outcome.SUCCEEDED: len(jobs)})


def test_one_mark_of_all_shards_left_by_an_earlier_version_is_every_shards_start(
    engine: Engine, dynamodb: Any
) -> None:
    first_at = engine.clock.now_ms() + 10 * MINUTE
    jobs = ahead_jobs(engine, 30, first_at, apart_ms=SECOND)
    legacy_mark = first_at + 14 * SECOND  # the first 15 were sent by a tick of that version
    item = {**items.sent_mark_key(None), "sent_until": {"N": str(legacy_mark)}}
    dynamodb.put_item(TableName=engine.resources.table_name, Item=item)
    engine.clock.set(first_at - 30 * SECOND)

    report = engine.scheduler.tick()

    assert report.sent_ahead == 15
    assert {m.job_id for m in engine.receive()} == {j for j, due in jobs.items() if due > legacy_mark}
    assert all(mark_of(engine, job_id) == first_at - 30 * SECOND + HORIZON for job_id in jobs)


def test_two_overlapping_ticks_lose_nothing_and_their_copies_are_dropped_at_the_fence(
    engine: Engine,
) -> None:
    first_at = engine.clock.now_ms() + 10 * MINUTE
    ahead = ahead_jobs(engine, 20, first_at)
    engine.clock.set(first_at - 130 * SECOND)
    with placed_as_before_the_writers_reach():  # run rows: claimed
        claimed = [create(engine, first_at - 30 * SECOND) for _ in range(5)]
    engine.clock.set(first_at - 40 * SECOND)
    reports: list[TickReport] = []

    class Overlapped(Scheduler):
        """Runs a second tick, started a little later, from start to end after reading the rows,
        before taking any."""

        def _take_all(self, *args: Any) -> None:
            engine.clock.advance(5)
            reports.append(engine.scheduler.tick())
            engine.clock.advance(-5)
            super()._take_all(*args)

    first = Overlapped(engine.context).tick()
    [second] = reports

    assert first.sent_ahead == second.sent_ahead == len(ahead)  # both read the same marks
    assert (first.claimed, second.claimed) == (0, len(claimed))
    assert first.lost_races == len(claimed)
    # The first tick, finishing last, leaves the second's later marks.
    assert all(mark_of(engine, job_id) == first_at - 35 * SECOND + HORIZON for job_id in ahead)
    outcomes = run_everything(engine, first_at + 10 * SECOND)
    assert outcomes == Counter({Outcome.SUCCEEDED: len(ahead) + len(claimed), Outcome.DROPPED: len(ahead)})
    assert all(engine.targets.count(job_id) == 1 for job_id in [*ahead, *claimed])


def test_a_changed_shard_count_loses_nothing_while_readers_cover_both_counts(engine: Engine) -> None:
    first_at = engine.clock.now_ms() + 10 * MINUTE
    table = engine.resources.table_name
    sixteen = JobStore(engine.store._client, table, engine.clock, DueShards(16))
    service = JobService(sixteen, engine.dispatcher, engine.clock, allow_private_targets=True)
    before = ahead_jobs(replace(engine, service=service), 30, first_at)
    assert max(items.shard_number(job_id, 16) for job_id in before) >= 8
    changed = JobStore(engine.store._client, table, engine.clock, DueShards(8, before=16))
    service = JobService(changed, engine.dispatcher, engine.clock, allow_private_targets=True)
    after = ahead_jobs(replace(engine, service=service), 30, first_at + 5 * SECOND)
    assert {row.job_id for row in engine.index_rows()} == after.keys() | {
        job_id for job_id in before if items.shard_number(job_id, 16) < 8
    }  # a reader of the new count alone misses rows
    engine.clock.set(first_at - 30 * SECOND)
    tick = Scheduler(EngineContext(changed, engine.dispatcher, engine.clock))

    first, second = tick.tick(), tick.tick()

    assert (first.sent_ahead, second.sent_ahead) == (60, 0)
    outcomes = run_everything(engine, first_at + 10 * SECOND)
    assert outcomes == Counter({Outcome.SUCCEEDED: 60})


class Killed(BaseException):
    """The tick's process ending where it stands, as a timed-out Lambda does."""


class DiesMidSend(SlowSends):
    """Sends the first `batches` requests, then dies: no more message leaves, and no answer is read."""

    def __init__(self, engine: Engine, clock: SharedClock, batches: int) -> None:
        super().__init__(engine, clock)
        self.left = batches

    def send(self, messages: Sequence[JobMessage]) -> list[JobMessage]:
        if self.left <= 0:
            raise Killed
        self.left -= 1
        return super().send(messages)


def test_a_tick_killed_mid_send_costs_the_next_only_the_rows_sent_since_its_last_mark(
    engine: Engine, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sundial.shared.engine.scheduler.MARK_EVERY_MS", 0)  # a mark after every chunk
    instant = engine.clock.now_ms() + 10 * MINUTE
    jobs = ahead_jobs(engine, 200, instant, apart_ms=0)  # all due at once: one second, one ms
    clock = SharedClock(instant - 30 * SECOND)
    dying = DiesMidSend(engine, clock, batches=10)

    with pytest.raises(Killed):
        Scheduler(EngineContext(engine.store, dying, clock)).tick(clock.now_ms() + 50 * SECOND)

    sent_first = {json.loads(entry["MessageBody"])["job_id"] for entry in engine.sent}
    assert len(sent_first) == 100
    marks = engine.store.sent_marks()
    assert any(marks.mark(shard).within for shard in range(c.DUE_SHARDS))  # recorded inside the second
    # How many were sent after their shard's last mark depends on where the kill found each
    # shard's sender; the next tick must send exactly those again, and none the marks cover.
    unmarked = [job_id for job_id in sent_first if not _covered(engine, dynamodb, marks, job_id)]
    assert len(unmarked) < len(sent_first)
    # The next tick runs after the instant: the rows the marks cover are not sent again, and the
    # rest go as they are (within the misfire grace), without a claim.
    clock.set(instant + 2 * SECOND)
    rest = Scheduler(EngineContext(engine.store, engine.dispatcher, clock)).tick()
    copies = rest.sent_ahead - (len(jobs) - len(sent_first))
    assert rest.claimed == 0
    assert copies == len(unmarked)
    outcomes = run_everything(engine, instant + 3 * SECOND)
    assert outcomes == Counter({Outcome.SUCCEEDED: len(jobs)}) + Counter({Outcome.DROPPED: copies})
    assert all(engine.targets.count(job_id) == 1 for job_id in jobs)


def _covered(engine: Engine, dynamodb: Any, marks: SentMarks, job_id: str) -> bool:
    """Whether the job's ahead row, as stored, is one its shard's sent mark says was sent."""
    table = engine.resources.table_name
    found = dynamodb.get_item(TableName=table, Key=items.job_key(job_id), ConsistentRead=True)
    key = found["Item"][c.DUE_KEY_ATTRIBUTE]["S"]
    position = items.send_position(found["Item"]["priority"]["S"], key)
    return marks.mark(items.shard_number(job_id)).covers(items.parse_due_key(key)[0], position)


def test_a_window_too_large_for_one_invocation_goes_to_parallel_claimers_and_runs_once(
    engine: Engine,
) -> None:
    first_at = engine.clock.now_ms() + 10 * MINUTE
    jobs = ahead_jobs(engine, 60, first_at)
    handed: list[Sequence[int]] = []
    engine.clock.set(first_at - 30 * SECOND)
    tick = Scheduler(engine.context, claimers=handed.append, capacity=20)

    report = tick.tick()

    assert report.claimers == len(handed) >= 2
    shares = [set(share) for share in handed]
    assert all(not a & b for n, a in enumerate(shares) for b in shares[n + 1 :])
    kept = set(range(c.DUE_SHARDS)) - set().union(*shares)
    assert kept  # the tick keeps a share of its own
    in_kept = {job_id for job_id in jobs if items.shard_number(job_id) in kept}
    assert report.sent_ahead == len(in_kept)
    # Each claimer takes its shards alone, and hands nothing on.
    claimed = [tick.tick(shards=share) for share in handed]
    assert sum(r.sent_ahead for r in claimed) == len(jobs) - len(in_kept)
    assert all(r.claimers == 0 for r in claimed)
    assert Scheduler(engine.context).tick().sent_ahead == 0  # all marked
    assert run_everything(engine, first_at + 10 * SECOND) == Counter({Outcome.SUCCEEDED: len(jobs)})


def test_shards_no_claimer_took_are_the_ticks_own(engine: Engine) -> None:
    first_at = engine.clock.now_ms() + 10 * MINUTE
    jobs = ahead_jobs(engine, 60, first_at)

    def refused(shards: Sequence[int]) -> None:
        raise ClientError({"Error": {"Code": "TooManyRequestsException"}}, "Invoke")

    engine.clock.set(first_at - 30 * SECOND)
    report = Scheduler(engine.context, claimers=refused, capacity=20).tick()

    assert (report.claimers, report.sent_ahead) == (0, len(jobs))
    assert run_everything(engine, first_at + 10 * SECOND) == Counter({Outcome.SUCCEEDED: len(jobs)})
