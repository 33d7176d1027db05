"""The worker's gate for jobs that name a limit key: take a slot and a token with the fence, or hold
the delivery back and send it again for when the key should allow it (docs/design.md, "Limits per
key").

A held-back occurrence is not failed and uses no attempt: its job stays queued under the same token,
with a lease past the instant it looks again, and its message goes back to its queue with that delay.
Nothing polls: the delay is sized from the key's rate, its free slots, its line and the time its
attempts take.
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
from sundial.shared.engine.patience import throttled
from sundial.shared.errors import LimitChanged, StaleDelivery
from sundial.shared.limits import Admission, Booking, ShardState, admit, booked, rank_of
from sundial.shared.limits.gate import HOLD_MAX_MS, bounded_delay_ms
from sundial.shared.models import Job
from sundial.shared.store.jobs import FENCED_FROM, SlotTake
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
# A hold's lease reaches this far past the instant the occurrence looks again, so that later holds
# of a long wait rarely need to move it.
HOLD_LEASE_SLACK_MS = 120 * SECOND_MS
# Locks a process's takes of one key share (keys may share one): a bounded set however many keys.
TAKE_LOCKS = 256
# An arrival whose shard refused its read (a hot shard throttles) is held back without one, when
# this process saw the key limited this recently: a burst of arrivals that each rode the throttle
# out kept the shard's partition saturated with their retries, and those that ran out of patience
# all came back together when their messages' visibility ended.
LIMITED_MEMORY_MS = 60 * SECOND_MS
# It then looks again at a random instant up to this long ahead, doubled with each of its first
# three holds: the burst spreads itself over what the shard can read.
THROTTLED_SPREAD_MS = 2 * SECOND_MS
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
    )


class HeldBack(Exception):
    """The key holds this delivery back: its message went back to its queue with a delay."""

    def __init__(self, message: JobMessage, delay_ms: int) -> None:
        super().__init__(f"job {message.job_id} waits {delay_ms} ms for its limit key")
        self.message = message
        self.delay_ms = delay_ms


class HoldFailed(RuntimeError):
    """A held-back message could not be sent again: the delivery must fail so SQS keeps it."""


class LimitGate:
    def __init__(self, engine: EngineContext) -> None:
        self._engine = engine
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
            held = self._hold(message, shard, admission)
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
            shard = self._read_shard(key, tried, delivery_id)
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
                if len(tried) < min(shard.shards, SHARDS_TRIED):
                    continue  # another shard of a hot key may have room
                break
            waited = now_ms - message.held_since if message.held_since is not None else None
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
        waited = now_ms - message.held_since if message.held_since is not None else None
        try:
            return self._fence(message, worker, delivery_id, now_ms, SlotTake(shard, 1, (), waited, True))
        except LimitChanged:
            return None

    def _read_shard(self, key: str, tried: set[int], delivery_id: str) -> Shard | None:
        """A shard of the key to take from, or None when its read was refused and the arrival is
        held back without one (`_holds_unread`)."""
        try:
            shard = self._shard(key, tried)
        except ClientError as error:
            if not self._holds_unread(key, delivery_id, error):
                raise
            return None
        if shard.share is not None:
            self._note_limited(key, self._engine.clock.now_ms())
        return shard

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
        waited = now_ms - message.held_since if message.held_since is not None else None
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
            if throttled(error):
                raise  # refused whole: nothing was written
            with self._lock:
                self._unsure[delivery_id] = None
                if len(self._unsure) > UNSURE_KEPT:
                    del self._unsure[next(iter(self._unsure))]
            raise

    def _reserve_look(self, shard: Shard, spacing_ms: int, floor_ms: int) -> int | None:
        """The next instant of the shard's queue of looks, or None when the shard refused the write
        (a hot shard throttles): the occurrence then looks again without one."""
        try:
            return self._engine.store.reserve_look(shard, spacing_ms, floor_ms)
        except (ClientError, BotoCoreError):
            logger.warning("shard %s of key %s gave no instant to look again", shard.number, shard.key)
            return None

    def _still_waiting(self, message: JobMessage) -> None:
        """A read, not a write, when the lease still covers the wait: the job must still wait under
        this delivery's token."""
        job = self._engine.store.get(message.job_id)
        if job.status not in FENCED_FROM or job.token != message.token or job.limit_key != message.limit_key:
            raise StaleDelivery(f"job '{message.job_id}' no longer waits for this delivery", current=job)

    def _shard(self, key: str, tried: set[int]) -> Shard:
        now_ms = self._engine.clock.now_ms()
        with self._lock:
            known = self._counts.get(key)
        if known is None or now_ms - known[1] > SHARD_COUNT_TTL_MS:
            first = self._engine.store.limit_shard(key, 0)
            with self._lock:
                self._counts[key] = (first.shards, now_ms)
            if first.shards == 1 or (0 not in tried and random.random() < 1 / first.shards):
                return first
            count = first.shards
        else:
            count = known[0]
        left = [n for n in range(count) if n not in tried] or list(range(count))
        return self._engine.store.limit_shard(key, random.choice(left))

    def _hold(self, message: JobMessage, shard: Shard | None, admission: Admission | None) -> HeldBack:
        """Keeps the occurrence queued, its place in line, and sends its message again for later.

        The job's lease comes first, covering the longest hold: whatever fails after it, no tick takes
        the wait for a lost message. It raises StaleDelivery when the job moved on (a cancel, a pause,
        another token): its place in line is then given up, and its message dropped."""
        now_ms = self._engine.clock.now_ms()
        held_since = message.held_since if message.held_since is not None else now_ms
        lease_needed = now_ms + (HOLD_MAX_MS + lifecycle.lease_seconds(message.timeout_seconds) * SECOND_MS)
        lease_until = message.held_lease_until
        if lease_until is None or lease_until < lease_needed:
            lease_until = lease_needed + HOLD_LEASE_SLACK_MS
            self._engine.store.hold(
                message.job_id,
                message.token,
                message.limit_key or "",
                message.priority,
                lease_until,
                held_since,
            )
        else:
            self._still_waiting(message)
        if shard is None:  # its read was refused: it looks again at a random instant, spread out
            spread = THROTTLED_SPREAD_MS * 2 ** min(message.holds, 3)
            delay_ms = bounded_delay_ms(now_ms + round(spread * random.random()), now_ms)
            wait = (held_since, lease_until)
            return self._send_again(message, wait, now_ms, delay_ms, message.looks_at, None)
        booking = self._book(message, shard, admission, now_ms)
        if booking is not None:
            # Its token is booked: it comes back to start, at the booking's opening.
            delay_ms = max(0, booking.opens_at - now_ms)
            return self._send_again(message, (held_since, lease_until), now_ms, delay_ms, None, booking)
        delay_ms = admission.delay_ms if admission is not None and not admission.admitted else SECOND_MS
        looks_at = message.looks_at
        if (
            admission is not None
            and admission.look_spacing_ms is not None
            and admission.look_floor is not None
        ):
            # Beyond the line: the next instant of the shard's queue of looks, one start after the last.
            looks_at = self._reserve_look(shard, admission.look_spacing_ms, admission.look_floor)
            if looks_at is None:  # spread over twice the line's wait, and ask again then
                delay_ms = bounded_delay_ms(now_ms + round(delay_ms * (1 + random.random())), now_ms)
            else:
                delay_ms = bounded_delay_ms(looks_at, now_ms)
        if admission is not None and (admission.waiter is not None or admission.expired or admission.evicted):
            drop = tuple(sorted(set(admission.expired) | set(admission.evicted)))
            try:
                self._engine.store.wait_in_line(shard, message.job_id, admission.waiter, drop)
            except (ClientError, BotoCoreError):
                # A place in line orders the waiters; without it the occurrence still waits and looks
                # again, so a throttled shard does not fail the hold.
                logger.warning("job %s: its place in line was not kept", message.job_id, exc_info=True)
        return self._send_again(message, (held_since, lease_until), now_ms, delay_ms, looks_at, None)

    def _book(
        self, message: JobMessage, shard: Shard, admission: Admission | None, now_ms: int
    ) -> Booking | None:
        """The token booked for the held-back occurrence, when its shard books (Admission's
        `book_ceiling`) and the horizon still has one; None otherwise, or when the shard refused the
        write (a hot shard throttles): the occurrence then waits in line or in the queue of looks."""
        if admission is None or admission.book_ceiling is None or shard.share is None:
            return None
        try:
            token_at = self._engine.store.book_token(shard, message.job_id, admission.book_ceiling, now_ms)
        except (ClientError, BotoCoreError):
            logger.warning("shard %s of key %s booked no token", shard.number, shard.key)
            return None
        if token_at is None:
            return None
        assert shard.share_text is not None
        return booked(shard.share, shard.number, shard.share_text, token_at)

    def _send_again(
        self,
        message: JobMessage,
        wait: tuple[int, int],
        now_ms: int,
        delay_ms: int,
        looks_at: int | None,
        booking: Booking | None,
    ) -> HeldBack:
        """Sends the held-back message again, `delay_ms` from `now_ms`; `wait` is when it was first
        held and the job's lease over its wait."""
        held_since, lease_until = wait
        again = message.model_copy(
            update={
                "held_since": held_since,
                "not_before": now_ms + delay_ms,
                "holds": message.holds + 1,
                "held_lease_until": lease_until,
                "looks_at": looks_at,
                "booking": booking,
            }
        )
        if self._engine.dispatcher.send([again]):
            raise HoldFailed(f"could not send job '{message.job_id}' back to wait for its limit key")
        return HeldBack(again, delay_ms)


__all__ = ["HeldBack", "HoldFailed", "LimitGate"]
