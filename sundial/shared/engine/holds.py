"""Holding a delivery back for its limit key (docs/design.md, "Limits per key"): the job stays queued
under its lease, the occurrence books its start or keeps its place in line or in the queue of looks,
and its message goes back to its queue for when it looks again.

A held-back occurrence is not failed and uses no attempt: its job stays queued under the same token,
with a lease past the instant it looks again. Nothing polls: the delay is sized from the key's rate,
its free slots, its line and the time its attempts take.
"""

from __future__ import annotations

import logging
import random

from botocore.exceptions import BotoCoreError, ClientError

from sundial.shared import lifecycle
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.patience import throttled
from sundial.shared.errors import StaleDelivery
from sundial.shared.limits import Admission, Booking, booked
from sundial.shared.limits.gate import HOLD_MAX_MS, bounded_delay_ms
from sundial.shared.store.jobs import FENCED_FROM
from sundial.shared.store.limit_shards import Shard

logger = logging.getLogger(__name__)
SECOND_MS = 1000
# A hold's lease reaches this far past the instant the occurrence looks again, so that later holds
# of a long wait rarely need to move it.
HOLD_LEASE_SLACK_MS = 120 * SECOND_MS
# It then looks again at a random instant up to this long ahead, doubled with each of its first
# three holds: the burst spreads itself over what the shard can read.
THROTTLED_SPREAD_MS = 2 * SECOND_MS


class HeldBack(Exception):
    """The key holds this delivery back: its message went back to its queue with a delay."""

    def __init__(self, message: JobMessage, delay_ms: int) -> None:
        super().__init__(f"job {message.job_id} waits {delay_ms} ms for its limit key")
        self.message = message
        self.delay_ms = delay_ms


class HoldFailed(RuntimeError):
    """A held-back message could not be sent again: the delivery must fail so SQS keeps it."""


class LimitHolds:
    """The writes and the send of a hold."""

    def __init__(self, engine: EngineContext) -> None:
        self._engine = engine

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
        this delivery's token. A read the table refuses (a throttle) passes: the message goes back
        as if it had, and its next look, or its fence, drops it if the job has moved on. Ridden out,
        such reads failed their deliveries after the fence's patience, and each came back a lease
        later."""
        try:
            job = self._engine.store.get(message.job_id)
        except ClientError as error:
            if not throttled(error):
                raise
            return
        if job.status not in FENCED_FROM or job.token != message.token or job.limit_key != message.limit_key:
            raise StaleDelivery(f"job '{message.job_id}' no longer waits for this delivery", current=job)

    def hold(self, message: JobMessage, shard: Shard | None, admission: Admission | None) -> HeldBack:
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
            return self._send_again(message, wait, now_ms, delay_ms, message.looks_at, None, message.held_on)
        booking = self._book(message, shard, admission, now_ms)
        if booking is not None:
            # Its token is booked: it comes back to start, at the booking's opening.
            delay_ms = max(0, booking.opens_at - now_ms)
            wait = (held_since, lease_until)
            return self._send_again(message, wait, now_ms, delay_ms, None, booking, shard.number)
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
        wait = (held_since, lease_until)
        return self._send_again(message, wait, now_ms, delay_ms, looks_at, None, shard.number)

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
        held_on: int | None,
    ) -> HeldBack:
        """Sends the held-back message again, `delay_ms` from `now_ms`; `wait` is when it was first
        held and the job's lease over its wait; `held_on` the shard it looks at again."""
        held_since, lease_until = wait
        again = message.model_copy(
            update={
                "held_since": held_since,
                "not_before": now_ms + delay_ms,
                "holds": message.holds + 1,
                "held_lease_until": lease_until,
                "held_on": held_on,
                "looks_at": looks_at,
                "booking": booking,
            }
        )
        if self._engine.dispatcher.send([again]):
            raise HoldFailed(f"could not send job '{message.job_id}' back to wait for its limit key")
        return HeldBack(again, delay_ms)


__all__ = ["HeldBack", "HoldFailed", "LimitHolds"]
