"""Ticks cut short, mixed into EngineMachine: a tick killed mid-send, and a tick stopped at its
deadline; and the checks that hold every tick's sent marks to what it sent.

A killed tick is a Lambda that dies: as its k-th send (or write) would leave, or once it was applied,
before the answer is read; nothing after it runs, no mark, no release. A stopped tick's clock says
its time is up after it looked at it k times, and the tick stops as it does at a real deadline: it
releases what it claimed and did not send, and holds its marks below what it did not send. Both run
in chunks of one row with a mark after every chunk, as a tick at scale does (its chunks take longer
than the mark period): the model's few rows stand for its many. When an ahead row waits unsent,
the clock first moves to the first tick that sends its message: ahead rows are what the marks are
about, and the steps alone seldom stand there.

A mark past an ahead row whose message did not go out loses the row (nothing sends it before its
implied lease, minutes late), so after every tick (docs/design.md, "The tick"):

- the marks are facts: every ahead row the tick took (not covered by its shard's mark when the tick
  began) that still waits as it was, and that the marks now cover, had its message sent;
- each row a tick killed or stopped took and left is owed: an ahead row the marks do not cover, a
  run row, a job it claimed without sending its message. The next tick that runs clean (no fault
  armed on its calls, not cut short) sends each such ahead row again and claims each such run row;
  a claimed job whose message never left waits for its lease (a killed tick releases nothing), and
  the first clean tick after that lease sends it. A row a user's action or any other step moved
  since is accounted for by that step; one the marks of a later tick cover was checked there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

import sundial.shared.engine.scheduler as scheduler_module
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared.clock import FixedClock
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.models import WAITING
from sundial.shared.store import DueRow, SentMarks, items
from tests.model import checks

if TYPE_CHECKING:
    from sundial.shared.dispatch import JobMessage

SECOND = 1000
LEASE_RUNS = "its lease runs"
WAITING_AHEAD = "two jobs waiting ahead"  # a start of EngineMachine
HORIZON_MS = c.DISPATCH_HORIZON_SECONDS * SECOND
# Where a killed tick dies: as its k-th send (or DynamoDB write) would leave, or once it was applied,
# before the answer is read. A send left is the claim's write done and its message not sent, or a
# row sent and its mark not written; a write is a claim, or a mark after a send.
CUTS = ["before send", "after send", "after write", "before write"]
# Rows a tick claims before it sends their messages and records its marks: one (a tick at scale, its
# marks recorded between chunks), or the deployed chunk (every row of the model's window at once).
CHUNKS = st.sampled_from([1, scheduler_module.CLAIM_CHUNK])


Sends = set[tuple[str, str]]  # (job id, token) of every message sent


@dataclass(frozen=True)
class Taken:
    """A row a tick acts on: a run row within its horizon, or an ahead row its shard's mark was below."""

    job_id: str
    row: DueRow
    position: str  # where the tick takes it in its order (items.send_position)

    def covered(self, marks: SentMarks) -> bool:
        return marks.mark(items.shard_number(self.job_id)).covers(self.row.due_at, self.position)

    def __repr__(self) -> str:
        what = "ahead row" if self.row.ahead_token else "run row"
        return f"{checks.short(self.job_id)}'s {what} due {self.row.due_at}"


@dataclass(frozen=True)
class TickView:
    """What a tick began with."""

    now: int
    snap: checks.Snapshot
    marks: SentMarks
    taken: list[Taken]
    sent_before: int  # messages the model held by then (EngineMachine.sent_log)
    clean: bool  # no fault armed on the tick's calls


@dataclass(frozen=True)
class Owed:
    """What a tick cut short left: a row it took (`taken`), or a job it claimed whose message with
    `token` never left."""

    job_id: str
    taken: Taken | None
    token: str | None
    left_by: str

    @property
    def key(self) -> tuple[str, str]:
        return self.job_id, self.taken.row.due_key if self.taken else f"claimed {self.token}"


@dataclass
class ShortTickState:
    owed: dict[tuple[str, str], Owed] = field(default_factory=dict)


class DeadlineClock:
    """The stopped tick's clock: its deadline is a millisecond away, and that millisecond passes
    (on the model's clock, for every actor) once the tick has looked at it `looks` times: the work
    it did meanwhile took that long, and a tick learns the time only by looking."""

    def __init__(self, clock: FixedClock, looks: int) -> None:
        self._clock = clock
        self._looks = looks
        self.deadline_ms = clock.now_ms() + 1

    def now_ms(self) -> int:
        self._looks -= 1
        if self._looks < 0:
            self._clock.set(max(self._clock.now_ms(), self.deadline_ms))
        return self._clock.now_ms()


class ShortTickSteps:
    """Rules and checks of EngineMachine for ticks cut short (see the module docstring)."""

    # Provided by EngineMachine.
    clock: FixedClock
    env: Any
    step: int
    table: str
    checker: Any
    stores: dict[str, Any]
    tick_dispatcher: Any
    sent_log: list[JobMessage]
    _snapshot: Any
    _violation: Any
    _note: Any
    _begin: Any
    _run_tick: Any
    _tick_has_work: Any

    @property
    def _short(self) -> ShortTickState:
        found: ShortTickState = self.__dict__.setdefault("_short_tick_state", ShortTickState())
        return found

    # --- steps ------------------------------------------------------------------------------------

    def _unsent_ahead(self) -> int | None:
        """The due time of the earliest ahead row whose message no tick has sent."""
        snap = self._snapshot()
        rows = [row for rows in snap.index.values() for row in rows if row.ahead_token is not None]
        return min((row.due_at for row in rows if row.due_at > snap.sent_until(row.job_id)), default=None)

    def _short_tick_due(self) -> bool:
        return bool(self._tick_has_work() or self._unsent_ahead() is not None)

    def _to_the_next_send(self) -> None:
        """The clock moves to the first tick that sends an ahead row's message, if any waits."""
        due = self._unsent_ahead()
        if due is not None:
            self.clock.set(max(self.clock.now_ms(), due - HORIZON_MS))

    @contextmanager
    def _chunks(self, rows: int) -> Iterator[None]:
        """The tick claims `rows` rows at a time, and records its marks after every chunk."""
        saved = scheduler_module.CLAIM_CHUNK, scheduler_module.MARK_EVERY_MS
        scheduler_module.CLAIM_CHUNK, scheduler_module.MARK_EVERY_MS = rows, 0
        try:
            yield
        finally:
            scheduler_module.CLAIM_CHUNK, scheduler_module.MARK_EVERY_MS = saved

    # Arguments drawn inside, so that these rules sort with `during` and `finish`, among those
    # Hypothesis favours (EngineMachine's rule order): with three and two arguments they came late,
    # and the search cut a tick short about once in a hundred steps.
    @precondition(lambda self: self._short_tick_due())
    @rule(data=st.data())
    def killed_tick(self, data: st.DataObject) -> None:
        """A tick dies mid-send (see kill_tick)."""
        cut = data.draw(st.sampled_from(CUTS), "cut")
        self.kill_tick(cut, data.draw(st.integers(1, 4), "at"), data.draw(CHUNKS, "chunk"))

    @precondition(lambda self: self._short_tick_due())
    @rule(data=st.data())
    def stopped_tick(self, data: st.DataObject) -> None:
        """A tick stops at its deadline (see stop_tick)."""
        self.stop_tick(data.draw(st.integers(1, 8), "looks"), data.draw(CHUNKS, "chunk"))

    def kill_tick(self, cut: str, at: int = 1, chunk: int = 1) -> None:
        """The tick dies at its `at`-th send or write (`cut`), with no cleanup."""
        self._to_the_next_send()
        self._begin(f"tick killed {cut} {at}, chunks of {chunk}")
        self.env.seen[f"tick to be killed {cut}"] += 1
        when, what = cut.split()
        boundary = self.env.bags["tick"] if what == "send" else self.env.faults["tick"]
        boundary.arm("pass", at - 1)
        boundary.arm(f"dies {when}", 1)
        try:
            with self._chunks(chunk):
                self._run_tick()
        finally:
            boundary.pending.clear()

    def stop_tick(self, looks: int, chunk: int = 1) -> None:
        """The tick's deadline passes once it has looked at its clock `looks` times."""
        self._to_the_next_send()
        self._begin(f"tick stopped at its deadline, its clock read {looks} times, chunks of {chunk}")
        self.env.seen["tick to be stopped"] += 1
        clock = DeadlineClock(self.clock, looks)
        engine = EngineContext(self.stores["tick"], self.tick_dispatcher, clock)
        scheduler = Scheduler(engine, parallelism=1)
        with self._chunks(chunk):
            self._run_tick(scheduler, clock.deadline_ms)

    # --- the checks, at every tick ----------------------------------------------------------------

    def _tick_view(self) -> TickView:
        snap = checks.read_table(self.env.plain_ddb, self.table)
        marks = self.checker.sent_marks()
        now = self.clock.now_ms()
        armed = self.env.faults["tick"].pending or self.env.bags["tick"].pending
        return TickView(now, snap, marks, _taken(snap, marks, now), len(self.sent_log), not armed)

    def _tick_ended(self, view: TickView, cut_short: str | None) -> None:
        """After a tick: its marks are facts; what a tick cut short left is owed; a clean tick pays
        what is owed. `cut_short` says how the tick ended early (None: it finished)."""
        after = checks.read_table(self.env.plain_ddb, self.table)
        marks = self.checker.sent_marks()
        sent = {(m.job_id, m.token) for m in self.sent_log}
        found = [
            f"{taken}: the marks say its message was sent ({marks.mark(items.shard_number(taken.job_id))}), "
            "yet no message with its token ever left: nothing sends it before its implied lease"
            for taken in view.taken
            if taken.row.ahead_token
            and _waits_on(after, taken)
            and taken.covered(marks)
            and (taken.job_id, taken.row.ahead_token) not in sent
        ]
        self._violation(*found)
        if cut_short is not None:
            self._leave(view, after, marks, sent, f"the tick {cut_short} at step {self.step}")
        elif view.clean and self._short.owed:
            self._pay(view, after, sent)

    def _leave(
        self, view: TickView, after: checks.Snapshot, marks: SentMarks, sent: Sends, left_by: str
    ) -> None:
        owed = self._short.owed
        for taken in view.taken:
            job = after.jobs.get(taken.job_id)
            if _waits_on(after, taken):
                left: Owed | None = (
                    None
                    if taken.row.ahead_token and taken.covered(marks)
                    else Owed(taken.job_id, taken, None, left_by)
                )
            elif job is not None and job.status is JobStatus.QUEUED and (job.id, job.token) not in sent:
                left = Owed(job.id, None, job.token, left_by)
            else:
                left = None
            if left is not None:
                owed.setdefault(left.key, left)
        self.env.seen[f"rows owed after a tick cut short: {min(len(owed), 3)}"] += 1

    def _pay(self, view: TickView, after: checks.Snapshot, sent: Sends) -> None:
        """A clean tick sends again every ahead row left unsent, claims every run row left, and
        sends every job left claimed and unsent whose lease has ended."""
        mine = self.sent_log[view.sent_before :]
        found, kept = [], {}
        for key, owed in self._short.owed.items():
            if owed.taken is None:
                lost = _claimed_lost(owed, view, after, sent, mine)
                if lost == LEASE_RUNS:
                    kept[key] = owed  # the first clean tick after its lease sends it
                elif lost:
                    found.append(lost)
            else:
                found += _row_left(owed, owed.taken, view, after, mine)
        self._short.owed = kept
        if not found:
            self.env.seen["rows owed by ticks cut short, paid by a clean tick"] += 1
        self._violation(*found)


def _claimed_lost(
    owed: Owed, view: TickView, after: checks.Snapshot, sent: Sends, mine: list[JobMessage]
) -> str | None:
    """Why a job a tick cut short claimed, and whose message it never sent, is lost after a clean
    tick; LEASE_RUNS while its lease has not ended; None when it moved on or was sent."""
    job = view.snap.jobs.get(owed.job_id)
    if job is None or job.status is not JobStatus.QUEUED or job.token != owed.token:
        return None
    if job.paused or job.cancel_requested or (job.id, job.token) in sent:
        return None
    if job.lease_until is not None and job.lease_until >= view.now:
        return LEASE_RUNS
    moved = after.jobs.get(job.id)
    unchanged = moved is not None and (moved.status, moved.token, moved.lease_until) == (
        job.status,
        job.token,
        job.lease_until,
    )
    if unchanged and not any(m.job_id == job.id for m in mine):
        return (
            f"{checks.short(job.id)}, claimed by {owed.left_by} and its message never sent, is still "
            f"queued after a clean tick past its lease ({job.lease_until}): lost"
        )
    return None


def _row_left(
    owed: Owed, taken: Taken, view: TickView, after: checks.Snapshot, mine: list[JobMessage]
) -> list[str]:
    """A row a tick cut short left: after a clean tick, claimed or sent again (unless it moved on)."""
    if not _waits_on(view.snap, taken) or (taken.row.ahead_token and taken.covered(view.marks)):
        return []  # moved on since, or covered by a later tick's marks (checked there)
    if not _waits_on(after, taken):
        return []  # this tick claimed it, or a step that raced it moved it
    if taken.row.ahead_token is None:
        return [f"{taken}, left by {owed.left_by}, was not claimed by the next clean tick"]
    if not any((m.job_id, m.token) == (taken.job_id, taken.row.ahead_token) for m in mine):
        return [f"{taken}, left unsent by {owed.left_by}, was not sent again by the next clean tick"]
    return []


def _taken(snap: checks.Snapshot, marks: SentMarks, now: int) -> list[Taken]:
    """The rows a tick at `now` acts on that are about sends: run rows within its horizon, and ahead
    rows within it that its shard's mark does not cover."""
    found = []
    for job_id, rows in snap.index.items():
        job = snap.jobs.get(job_id)
        if job is None:
            continue
        for row in rows:
            if row.sort_key != items.JOB_SK or row.is_lease or row.is_alert or row.due_at > now + HORIZON_MS:
                continue
            taken = Taken(job_id, row, items.send_position(job.priority.value, row.due_key))
            if row.ahead_token is None or not taken.covered(marks):
                found.append(taken)
    return found


def _waits_on(snap: checks.Snapshot, taken: Taken) -> bool:
    """Whether the job still waits on the row as the tick took it (same row, same place in the order)."""
    job = snap.jobs.get(taken.job_id)
    if job is None or job.status not in WAITING or job.paused or job.cancel_requested:
        return False
    keys = {row.due_key for row in snap.index[taken.job_id] if row.sort_key == items.JOB_SK}
    same_place = items.send_position(job.priority.value, taken.row.due_key) == taken.position
    return taken.row.due_key in keys and same_place
