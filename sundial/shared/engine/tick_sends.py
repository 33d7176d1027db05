"""The tick's sends and its sent marks.

Messages leave in batches on a bounded pool of sender threads, and no batch starts once the deadline
has come. What is not sent is handed back, so nothing is lost: a claimed job is released to the next
tick, and an ahead row holds its shard's mark below its due time, so the next tick sends it again
(and everything after it in that shard: copies, which the fence drops).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from types import TracebackType

from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.settle import release
from sundial.shared.engine.tick_report import TickReport
from sundial.shared.store import DueRow, SentMark, SentMarks, items

logger = logging.getLogger(__name__)
SECOND_MS = 1000
PRIORITY_RANK = {priority: rank for rank, priority in enumerate(c.PRIORITIES)}
# Chunks waiting for a sender, per sender: claims pause when the senders fall behind, so that at the
# deadline only so many chunks are claimed and not sent.
QUEUED_CHUNKS_PER_SENDER = 2


@dataclass(frozen=True)
class Due:
    """A row read, with where it was read from."""

    row: DueRow
    priority: Priority
    shard: int

    @property
    def order(self) -> tuple[int, int, int]:
        """Earliest first; within one second (SQS delays are whole seconds, so such messages become
        visible together) high before medium before low."""
        due_at = self.row.due_at
        return due_at // SECOND_MS, PRIORITY_RANK[self.priority], due_at

    @property
    def position(self) -> str:
        return items.send_position(self.priority, self.row.due_key)


@dataclass(frozen=True)
class Taken:
    """A message the tick sends: after its claim, or from an ahead row with no write at all."""

    message: JobMessage
    claimed: bool = True


@dataclass(frozen=True)
class Outgoing:
    """A message on its way, with the row it came from."""

    taken: Taken
    due: Due


class _Progress:
    """One shard's ahead rows this tick has to send, in the tick's order, and how far every one of
    them is sent: the first not sent yet (or held: not sent at all) is where the mark stops."""

    def __init__(self) -> None:
        self.positions: list[str] = []
        self.sent: dict[str, bool] = {}
        self.held: set[str] = set()
        self.first_unsent = 0

    def frontier(self) -> int:
        while self.first_unsent < len(self.positions):
            position = self.positions[self.first_unsent]
            if position in self.held or not self.sent[position]:
                break
            self.first_unsent += 1
        return self.first_unsent


class Marks:
    """Per shard, how far this tick may record its sends: up to its horizon, or just below the
    first ahead row whose message is not sent yet, or not sent at all. A tick records that as it
    goes (`moved`), so a kill or a deadline costs only the rows sent since. A shard the tick could
    not read keeps its mark."""

    def __init__(self, read: SentMarks | None, horizon_ms: int, shards: Iterable[int]) -> None:
        self._read = read
        self._horizon_ms = horizon_ms
        self._progress = {} if read is None else {shard: _Progress() for shard in shards}
        self._written: dict[int, SentMark] = {}
        self._lock = threading.Lock()

    def of(self, shard: int) -> SentMark | None:
        """The shard's mark as read; None when unread (its ahead rows are left to the next tick)."""
        return None if self._read is None else self._read.mark(shard)

    def expect(self, rows: Iterable[Due]) -> None:
        """The ahead rows read that no earlier tick sent: the marks wait for each of them."""
        for due in rows:
            progress, read = self._progress.get(due.shard), self.of(due.shard)
            if progress is None or read is None or due.row.ahead_token is None:
                continue
            position = due.position
            if not read.covers(due.row.due_at, position) and position not in progress.sent:
                progress.positions.append(position)
                progress.sent[position] = False
        for progress in self._progress.values():
            progress.positions.sort()

    def done(self, due: Due) -> None:
        """The row needs nothing more of this tick: its message is sent, or it was claimed."""
        progress = self._progress.get(due.shard)
        if progress is not None and due.position in progress.sent:
            with self._lock:
                progress.sent[due.position] = True

    def hold(self, due: Due) -> None:
        """The row's message may not have been sent: the mark stays below it."""
        progress = self._progress.get(due.shard)
        if progress is not None and due.position in progress.sent:
            with self._lock:
                progress.held.add(due.position)

    def unread(self, shard: int) -> None:
        with self._lock:
            self._progress.pop(shard, None)

    def moved(self) -> dict[int, SentMark]:
        """The shards whose mark this tick moves forward since it last recorded them, and where to."""
        with self._lock:
            marks = {shard: self._mark(shard, progress) for shard, progress in self._progress.items()}
            moved = {
                shard: mark
                for shard, mark in marks.items()
                if mark.after(self._written.get(shard) or self._read_mark(shard))
            }
            self._written.update(moved)
            return moved

    def _read_mark(self, shard: int) -> SentMark:
        return self.of(shard) or SentMark(0)

    def _mark(self, shard: int, progress: _Progress) -> SentMark:
        read, first = self._read_mark(shard), progress.frontier()
        if first == len(progress.positions):
            return SentMark(max(read.until, self._horizon_ms), read.within)
        # Every row before the first unsent one is sent: the seconds before its own, and its own
        # second up to the row before it.
        unsent_second = int(progress.positions[first][:10])
        until = max(read.until, unsent_second * SECOND_MS - 1)
        within = max(read.within, progress.positions[first - 1]) if first else read.within
        return SentMark(until, within)


class Senders:
    """Sends the tick's messages on `pool` (a bounded pool of threads), a chunk per sender, batch by
    batch, none started after the deadline; on leaving, waits for the chunks under way."""

    def __init__(
        self,
        pool: Executor,
        threads: int,
        engine: EngineContext,
        deadline_ms: int | None,
        marks: Marks,
        report: TickReport,
    ) -> None:
        self._pool = pool
        self._room = threading.Semaphore(threads * QUEUED_CHUNKS_PER_SENDER)
        self._engine = engine
        self._deadline_ms = deadline_ms
        self._marks = marks
        self._report = report
        self._under_way: list[Future[None]] = []

    def __enter__(self) -> Senders:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for batch in self._under_way:
            batch.result()

    def send(self, outgoing: Sequence[Outgoing]) -> None:
        """Queues a chunk of messages for a sender, which sends its batches in order (high's
        first); waits while the senders are behind."""
        if not outgoing:
            return
        self._room.acquire()
        future = self._pool.submit(self._send_chunk, _batches(outgoing))
        future.add_done_callback(lambda _: self._room.release())
        self._under_way.append(future)

    def _send_chunk(self, batches: list[list[Outgoing]]) -> None:
        for batch in batches:
            if self._deadline_ms is not None and self._engine.clock.now_ms() >= self._deadline_ms:
                self._report.out_of_time = True
                self._hand_back(batch)
                self._report.count("unsent", len(batch))
                continue
            failed = {
                id(message) for message in self._engine.dispatcher.send([o.taken.message for o in batch])
            }
            self._hand_back([o for o in batch if id(o.taken.message) in failed])
            sent = [o for o in batch if id(o.taken.message) not in failed]
            for o in sent:
                self._marks.done(o.due)
            self._report.count("dispatched", len(sent))
            self._report.note_sent(o.taken.message for o in sent)
            self._report.count("sent_ahead", sum(1 for o in sent if not o.taken.claimed))
            self._report.count("send_failures", len(failed))

    def _hand_back(self, unsent: list[Outgoing]) -> None:
        release(self._engine, [o.taken.message for o in unsent if o.taken.claimed])
        for o in unsent:
            if not o.taken.claimed:
                self._marks.hold(o.due)


def _batches(outgoing: Sequence[Outgoing]) -> list[list[Outgoing]]:
    """Batches of up to SendMessageBatch's ten, each for one queue: one request each."""
    by_priority: dict[Priority, list[Outgoing]] = {}
    for o in outgoing:
        by_priority.setdefault(o.taken.message.priority, []).append(o)
    return [
        messages[start : start + c.SEND_BATCH_SIZE]
        for priority in c.PRIORITIES
        for messages in [by_priority.get(priority, [])]
        for start in range(0, len(messages), c.SEND_BATCH_SIZE)
    ]


def lateness(rows: Iterable[Due], now_ms: int, marks: Marks) -> list[int]:
    """How late the run times are that nobody has acted on: run rows, and ahead rows never sent."""
    return [now_ms - due.row.due_at for due in rows if due.row.due_at <= now_ms and _unacted(due, marks)]


def _unacted(due: Due, marks: Marks) -> bool:
    row, sent = due.row, marks.of(due.shard)
    if row.is_lease or row.is_alert:
        return False
    return row.ahead_token is None or (sent is not None and not sent.covers(row.due_at, due.position))
