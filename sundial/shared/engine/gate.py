"""The worker's gate for jobs that name a limit key: take a slot and a token with the fence, or hold
the delivery back (sundial/shared/engine/holds.py) for when the key should allow it (docs/design.md,
"Limits per key").
"""

from __future__ import annotations

import logging
import random
import threading
import zlib
from dataclasses import replace

from botocore.exceptions import BotoCoreError, ClientError

from sundial.shared import lifecycle
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.holds import HeldBack, HoldFailed, LimitHolds
from sundial.shared.engine.patience import throttled
from sundial.shared.errors import LimitChanged, StaleDelivery
from sundial.shared.limits import Admission, ShardState, admit, rank_of
from sundial.shared.models import Job
from sundial.shared.store.jobs import SlotTake
from sundial.shared.store.limit_shards import Shard

logger = logging.getLogger(__name__)
SECOND_MS = 1000
# How often one arrival reads its shard again after another worker changed it first.
SHARD_TRIES = 5
# How many of a hot key's shards an arrival reads before it is held back: when one is full the others
# mostly are too, and reading every one of five on each look made reads most of a busy key's load.
SHARDS_TRIED = 2
# A key's shard count is read from its shard 0 and kept this long: a change of limit applies
# within a second.
SHARD_COUNT_TTL_MS = 1000
# Locks a process's takes of one key share (keys may share one): a bounded set however many keys.
TAKE_LOCKS = 256
# An arrival whose shard refused its read (a hot shard throttles) is held back without one, when
# this process saw the key limited this recently: a burst of arrivals that each rode the throttle
# out kept the shard's partition saturated with their retries, and those that ran out of patience
# all came back together when their messages' visibility ended.
LIMITED_MEMORY_MS = 60 * SECOND_MS
# The calls that make the fence: a throttle of one of them refused the fence whole.
FENCE_WRITES = frozenset({"TransactWriteItems", "UpdateItem"})
# The deliveries whose take failed without an answer (it may have been applied) that a process
# remembers: such a delivery never holds without a read, which would take its own fence for
# another's.
UNSURE_KEPT = 1024


def _queued_lease(message: JobMessage, now_ms: int) -> int | None:
    """The lease its sender queued the job under when it wrote ahead of the instant (a completion
    placing the next occurrence, a create, a tick's claim of a job of the longest timeout), if it
    still covers this attempt as a fresh one would: the fence keeps it, conditional on it. A held
    delivery's job has the hold's lease instead."""
    if message.held_since is not None:
        return None
    lease = lifecycle.queued_lease(message.due_at, message.due_at, message.timeout_seconds)
    return lease if lease >= lifecycle.shortest_running_lease(now_ms, message.timeout_seconds) else None


def _waited_ms(message: JobMessage, now_ms: int) -> int | None:
    """How long the occurrence has waited for its key, from its first hold (None: never held)."""
    return now_ms - message.held_since if message.held_since is not None else None


def _admit(message: JobMessage, shard: Shard, rank: str, now_ms: int, contended: bool) -> Admission:
    assert shard.share is not None
    return admit(
        shard.share,
        shard.state,
        message.job_id,
        rank,
        now_ms,
        message.held_since,
        message.looks_at,
        contended,
        max(0, now_ms - message.starts_after),
    )


class LimitGate:
    def __init__(self, engine: EngineContext) -> None:
        self._engine = engine
        self._holds = LimitHolds(engine)
        self._counts: dict[str, tuple[int, int]] = {}  # key → (shard count, read at)
        self._lock = threading.Lock()
        self._takes: dict[int, threading.Lock] = {}  # made on first use: most workers meet few keys
        self._limited_at: dict[str, int] = {}  # key → when this process last read a limit of it
        self._unsure: dict[str, None] = {}  # delivery ids, oldest first

    def fence(self, message: JobMessage, worker: str, delivery_id: str) -> Job:
        """Fences the delivery of a job that names `message.limit_key`, taking its slot and token in
        the same write; raises HeldBack when the key holds it back (its message then went back to its
        queue), StaleDelivery when the delivery is stale."""
        key = message.limit_key
        assert key is not None
        # One take of a key at a time in this process: the records of a batch run side by side, and
        # each read then sees the takes before it. Takes side by side that all fit succeed anyway
        # (each is conditional on its needs, not on the shard being unchanged), but those that meet
        # a full bucket each restart it, and all but one would read and write again.
        with self._take_lock(key):
            taken = self._booked_start(message, worker, delivery_id, key) or self._take(
                message, worker, delivery_id, key
            )
            if not isinstance(taken, Job) and taken[0] is not None and self._is_unsure(delivery_id):
                taken = self._own_fence(message, worker, delivery_id, taken[0], taken[1])
        with self._lock:
            self._unsure.pop(delivery_id, None)
        if isinstance(taken, Job):
            return taken
        shard, admission = taken
        try:
            held = self._holds.hold(message, shard, admission)
        except StaleDelivery:
            if shard is not None:
                self._engine.store.leave_line(shard, message.job_id)
            raise
        raise held

    def _take(
        self, message: JobMessage, worker: str, delivery_id: str, key: str
    ) -> Job | tuple[Shard | None, Admission | None]:
        """The fence with its slot and token from a shard with room, or the shard it is held back
        on and why (None: its read was refused)."""
        rank = rank_of(message.priority, message.due_at, message.job_id)
        tried: set[int] = set()
        lost: set[int] = set()  # shards where others took what this arrival was shown
        shard: Shard | None = None
        admission: Admission | None = None
        for _ in range(SHARD_TRIES):
            shard = self._read_shard(key, tried, delivery_id, message.held_on)
            if shard is None:
                return None, None
            now_ms = self._engine.clock.now_ms()
            if shard.share is None and shard.number < shard.shards:
                return self._fence(message, worker, delivery_id, now_ms)  # no limit: runs unlimited
            if shard.share is None:
                # A shard the key no longer uses (its limit was lowered since the count was read):
                # read the count again rather than take the job for unlimited.
                with self._lock:
                    self._counts.pop(key, None)
                continue
            admission = _admit(message, shard, rank, now_ms, shard.number in lost)
            if not admission.admitted:
                tried.add(shard.number)
                if shard.number != message.held_on and len(tried) < min(shard.shards, SHARDS_TRIED):
                    continue  # another shard of a hot key may have room
                break  # held back where it was before, it keeps its place there
            waited = _waited_ms(message, now_ms)
            take = SlotTake(shard, admission.needed, admission.expired, waited)
            try:
                return self._take_from(message, worker, delivery_id, now_ms, take)
            except LimitChanged:
                lost.add(shard.number)
                continue  # others took what it needed first: read the shard again
            except StaleDelivery:
                self._engine.store.leave_line(shard, message.job_id)
                raise
        assert shard is not None
        if admission is not None and admission.admitted:
            # Every shard it read lost its take to others: its turn, in line or in the queue of looks.
            admission = _admit(message, shard, rank, self._engine.clock.now_ms(), True)
        return shard, admission

    def _take_from(
        self, message: JobMessage, worker: str, delivery_id: str, now_ms: int, take: SlotTake
    ) -> Job | tuple[None, None]:
        """The fence with `take`, or (None, None) when a hot shard refused it whole: the arrival is
        then held back as one whose read was refused is (`_holds_unread`). Ridden out, the retries of
        such takes kept the shard's partition saturated, and a take still refused when the fence's
        patience ran out failed its delivery, which came back a lease later (docs/design.md, "A
        shard that refuses a read or a take")."""
        try:
            return self._take_or_restart(message, worker, delivery_id, now_ms, take)
        except ClientError as error:
            if not self._holds_unread(take.shard.key, delivery_id, error):
                raise
            return None, None

    def _take_or_restart(
        self, message: JobMessage, worker: str, delivery_id: str, now_ms: int, take: SlotTake
    ) -> Job:
        """The fence with `take`. A take that found the shard's bucket full sets `rate_at` from now,
        on the condition that it has passed: of the takes side by side that read it full, one does,
        and the rest would fail though the bucket still holds all but one of its tokens. Such a take
        is made again at once as one from a bucket in use (`rate_at` on one start's time, within the
        burst of now), which needs no read: it holds whatever `rate_at` the first one set."""
        try:
            return self._fence(message, worker, delivery_id, now_ms, take)
        except LimitChanged:
            share, seen = take.shard.share, take.shard.state.rate_at
            # One other start's restart leaves room only in a burst above what this take needs.
            restarted = share is not None and share.per_second is not None and (seen or 0) < now_ms
            if not restarted or share is None or share.burst <= take.needed:
                raise
        in_use = replace(take.shard, state=replace(take.shard.state, rate_at=float(now_ms)))
        return self._fence(message, worker, delivery_id, now_ms, replace(take, shard=in_use))

    def _booked_start(self, message: JobMessage, worker: str, delivery_id: str, key: str) -> Job | None:
        """The fence on the token the occurrence booked when it was held back, while the booking's
        window is open: no read of the shard, only a check that its limit is still the one booked
        under. None when it has no booking, the window is not open, or the limit changed: the
        occurrence then takes its turn as any arrival does (a booking is never used twice, at worst
        not at all: the key then starts one fewer)."""
        booking = message.booking
        now_ms = self._engine.clock.now_ms()
        if booking is None or not booking.opens_at <= now_ms <= booking.closes_at:
            return None
        # The share as booked stands in for a read: the check fails if it no longer is the shard's.
        shard = Shard(key, booking.shard, 1, None, ShardState(), booking.share_text)
        waited = _waited_ms(message, now_ms)
        try:
            return self._fence(message, worker, delivery_id, now_ms, SlotTake(shard, 1, (), waited, True))
        except LimitChanged:
            return None

    def _read_shard(self, key: str, tried: set[int], delivery_id: str, held_on: int | None) -> Shard | None:
        """A shard of the key to take from, or None when its read was refused and the arrival is
        held back without one (`_holds_unread`)."""
        try:
            shard = self._shard(key, tried, held_on)
        except ClientError as error:
            if not self._holds_unread(key, delivery_id, error):
                raise
            return None
        if shard.share is not None:
            self._note_limited(key, self._engine.clock.now_ms())
        return shard

    def _note_count(self, key: str, count: int, now_ms: int) -> None:
        with self._lock:
            self._counts[key] = (count, now_ms)

    def _is_unsure(self, delivery_id: str) -> bool:
        with self._lock:
            return delivery_id in self._unsure

    def _own_fence(
        self, message: JobMessage, worker: str, delivery_id: str, shard: Shard, admission: Admission | None
    ) -> Job | tuple[Shard, Admission | None]:
        """Held back after a take of this delivery failed without an answer: the key may show no
        room because that take was applied and took it. The take is made again, conditional as
        ever: when the job shows the earlier one applied, the store answers it as this delivery's
        own fence; otherwise it takes only room that is there, and the arrival is held back as it
        was."""
        now_ms = self._engine.clock.now_ms()
        waited = _waited_ms(message, now_ms)
        needed = admission.needed if admission is not None else 1
        try:
            return self._fence(message, worker, delivery_id, now_ms, SlotTake(shard, needed, (), waited))
        except LimitChanged:
            return shard, admission

    def _note_limited(self, key: str, now_ms: int) -> None:
        with self._lock:
            if len(self._limited_at) >= UNSURE_KEPT and key not in self._limited_at:
                old = now_ms - LIMITED_MEMORY_MS
                self._limited_at = {k: at for k, at in self._limited_at.items() if at >= old}
            self._limited_at[key] = now_ms

    def _holds_unread(self, key: str, delivery_id: str, error: ClientError) -> bool:
        """Whether an arrival whose shard read met `error` is held back without it: a throttle, on a
        key this process saw limited within LIMITED_MEMORY_MS (one whose limit is gone runs at most
        a hold late), by a delivery whose earlier take, if any, surely failed."""
        if not throttled(error):
            return False
        with self._lock:
            seen = self._limited_at.get(key)
        recent = seen is not None and self._engine.clock.now_ms() - seen <= LIMITED_MEMORY_MS
        return recent and not self._is_unsure(delivery_id)

    def _take_lock(self, key: str) -> threading.Lock:
        stripe = zlib.crc32(key.encode()) % TAKE_LOCKS
        lock = self._takes.get(stripe)
        if lock is None:
            with self._lock:
                lock = self._takes.setdefault(stripe, threading.Lock())
        return lock

    def _fence(
        self, message: JobMessage, worker: str, delivery_id: str, now_ms: int, take: SlotTake | None = None
    ) -> Job:
        """The job's fence by its key; with `take`, the slot and token in the same transaction. An
        error that leaves it unknown whether the fence was applied marks the delivery unsure."""
        try:
            return self._engine.store.fence(
                message.job_id,
                message.token,
                worker,
                now_ms,
                message.timeout_seconds,
                delivery_id,
                limit_key=message.limit_key,
                take=take,
                queued_lease=_queued_lease(message, now_ms) if take is not None else None,
            )
        except (ClientError, BotoCoreError) as error:
            if isinstance(error, ClientError) and throttled(error) and error.operation_name in FENCE_WRITES:
                raise  # the write refused whole: nothing was written
            # Else it may have been applied: the read after an applied transaction (a transaction
            # answers no item) is refused by a throttle too, and taken for a refused take, its
            # occurrence was held back, its job found running and its delivery dropped, with no
            # one to run the attempt until the tick reclaimed it as lost.
            with self._lock:
                self._unsure[delivery_id] = None
                if len(self._unsure) > UNSURE_KEPT:
                    del self._unsure[next(iter(self._unsure))]
            raise

    def _shard(self, key: str, tried: set[int], held_on: int | None) -> Shard:
        """The shard an occurrence held back before reads first is the one it was held on, where its
        place in line or in the queue of looks is (while the key still has it): each shard's line and
        queue then send back as many as its share starts, where an occurrence that came back to a
        shard at random met lines that were not its own, and the key started far below its rate. An
        arrival reads one at random, the load spread evenly over them."""
        now_ms = self._engine.clock.now_ms()
        with self._lock:
            known = self._counts.get(key)
        count = known[0] if known is not None and now_ms - known[1] <= SHARD_COUNT_TTL_MS else None
        wanted = held_on if held_on is not None and held_on not in tried else None
        if wanted is None and count is None and known is not None:
            # A count this process read before, likely still the key's: a shard picked from it
            # tells the count afresh, where shard 0 for it and then another were two reads.
            wanted = random.choice(_untried(known[0], tried))
        if wanted is not None and (count is None or wanted < count):
            # Each shard holds the key's count (a change of limit writes them all in one transaction),
            # so its own read stands in for shard 0's, whose partition every worker's count read
            # made the hottest (docs/design.md, "Hot keys").
            held = self._engine.store.limit_shard(key, wanted)
            self._note_count(key, held.shards, now_ms)
            if wanted < held.shards:
                return held
            tried, count = tried | {wanted}, held.shards  # the key has fewer shards now
        first: Shard | None = None
        if count is None:
            first = self._engine.store.limit_shard(key, 0)
            self._note_count(key, first.shards, now_ms)
            count = first.shards
        if first is not None:
            if count == 1 or (0 not in tried and random.random() < 1 / count):
                return first
            # Shard 0 had its one chance in `count`: the pick is among the others, so that each
            # shard meets as many arrivals (and holds as many back) as the next.
            tried = tried | {0}
        return self._engine.store.limit_shard(key, random.choice(_untried(count, tried)))


def _untried(count: int, tried: set[int]) -> list[int]:
    """The shards of a key of `count` not tried yet, or all of them once every one was."""
    return [n for n in range(count) if n not in tried] or list(range(count))


__all__ = ["HeldBack", "HoldFailed", "LimitGate"]
