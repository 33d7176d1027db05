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
from typing import TYPE_CHECKING

from shared import constants as c
from shared.clock import Clock
from shared.dispatch import Dispatcher, JobMessage
from shared.engine.settle import release
from shared.store import JobStore, SentMarks

if TYPE_CHECKING:
    from shared.engine.scheduler import TickReport

logger = logging.getLogger(__name__)
# Chunks waiting for a sender, per sender: claims pause when the senders fall behind, so that at the
# deadline only so many chunks are claimed and not sent.
QUEUED_CHUNKS_PER_SENDER = 2


@dataclass(frozen=True)
class Taken:
    """A message the tick sends: after its claim, or from an ahead row with no write at all."""

    message: JobMessage
    claimed: bool = True


@dataclass(frozen=True)
class Outgoing:
    """A message on its way, with the shard of the row it came from."""

    taken: Taken
    shard: int


class Marks:
    """Per shard, how far this tick may record its sends: up to its horizon, held below the first
    ahead row whose message it did not send. A shard the tick could not read keeps its mark."""

    def __init__(self, read: SentMarks | None, horizon_ms: int, shards: Iterable[int]) -> None:
        self._read = read
        self._until = {} if read is None else dict.fromkeys(shards, horizon_ms)
        self._lock = threading.Lock()

    def of(self, shard: int) -> int | None:
        """The shard's mark as read; None when unread (its ahead rows are left to the next tick)."""
        return None if self._read is None else self._read.of(shard)

    def hold(self, shard: int, due_at: int) -> None:
        """An ahead row due at `due_at` may not have been sent: the mark stays below it."""
        read = self.of(shard)
        if read is None or due_at <= read:
            return  # sent by an earlier tick, or the mark is not written anyway
        with self._lock:
            if shard in self._until:
                self._until[shard] = min(self._until[shard], due_at - 1)

    def unread(self, shard: int) -> None:
        with self._lock:
            self._until.pop(shard, None)

    def moved(self) -> dict[int, int]:
        """The shards whose mark this tick moves forward, and where to."""
        with self._lock:
            return {shard: until for shard, until in self._until.items() if until > (self.of(shard) or 0)}


class Senders:
    """Sends the tick's messages on `pool` (a bounded pool of threads), a chunk per sender, batch by
    batch, none started after the deadline; on leaving, waits for the chunks under way."""

    def __init__(
        self,
        pool: Executor,
        threads: int,
        store: JobStore,
        dispatcher: Dispatcher,
        clock: Clock,
        deadline_ms: int | None,
        marks: Marks,
        report: TickReport,
    ) -> None:
        self._pool = pool
        self._room = threading.Semaphore(threads * QUEUED_CHUNKS_PER_SENDER)
        self._store, self._dispatcher, self._clock = store, dispatcher, clock
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
            if self._deadline_ms is not None and self._clock.now_ms() >= self._deadline_ms:
                self._report.out_of_time = True
                self._hand_back(batch)
                self._report.count("unsent", len(batch))
                continue
            failed = {id(message) for message in self._dispatcher.send([o.taken.message for o in batch])}
            self._hand_back([o for o in batch if id(o.taken.message) in failed])
            sent = [o for o in batch if id(o.taken.message) not in failed]
            self._report.count("dispatched", len(sent))
            self._report.note_sent(o.taken.message for o in sent)
            self._report.count("sent_ahead", sum(1 for o in sent if not o.taken.claimed))
            self._report.count("send_failures", len(failed))

    def _hand_back(self, unsent: list[Outgoing]) -> None:
        release(self._store, self._clock, [o.taken.message for o in unsent if o.taken.claimed])
        for o in unsent:
            if not o.taken.claimed:
                self._marks.hold(o.shard, o.taken.message.due_at)


def _batches(outgoing: Sequence[Outgoing]) -> list[list[Outgoing]]:
    """Batches of up to SendMessageBatch's ten, each for one queue: one request each."""
    by_priority: dict[c.Priority, list[Outgoing]] = {}
    for o in outgoing:
        by_priority.setdefault(o.taken.message.priority, []).append(o)
    return [
        messages[start : start + c.SEND_BATCH_SIZE]
        for priority in c.PRIORITIES
        for messages in [by_priority.get(priority, [])]
        for start in range(0, len(messages), c.SEND_BATCH_SIZE)
    ]
