"""Who of a key's occurrences may start now, and when one held back should look again.

A key's state lives in one or more shard items (docs/design.md, "Limits per key"). Each shard holds:
- `holders`: the running attempts that took one of its concurrency slots, each with the end of its
  attempt's lease. A slot is a lease: a holder whose lease has ended counts for nothing, so a crashed
  worker's slot comes back on its own when its lease would have;
- the rate as a generic cell rate (`rate_at`: the instant the starts taken so far are paid off at the
  key's rate; the bucket is full once it has passed, and empty `burst` starts' time before it);
- `waiters`: the best-ranked occurrences held back (high before medium before low, then oldest due),
  each until the instant it is expected back. A free slot or token goes to an arrival only when every
  better-ranked live waiter is covered too: a later high never waits behind an earlier low.

Everything here is arithmetic on what one read of a shard returned. The store writes a start
conditional on what it needs being there still (a slot count under the limit, `rate_at` early enough
for its tokens), not on nothing having changed: two workers never both take the last slot, and many
taking side by side from a shard with room all succeed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c

SECOND_MS = 1000
# A shard takes this many slots or starts a second at most: its item stays small (a holder is about
# 40 bytes, one write unit per KB) and its writes (a fence and a settle per start) far below a
# partition's 1,000 a second.
SLOTS_PER_SHARD = 100
STARTS_PER_SHARD_PER_SECOND = 100
# With the registry item, a PUT writes every shard in one transaction of at most 100 items.
MAX_LIMIT_SHARDS = 64
# The best-ranked waiters a shard keeps in line; beyond them an occurrence takes the next instant of
# the shard's queue of looks (`next_look`), one start's time after the one before it. Ten keep a
# rate-limited shard's item within a kilobyte: each of its writes one unit, a take's two (twenty
# made them three and six, and a busy key's shard spent its partition on them).
WAITERS_KEPT = 10
# A held-back occurrence looks again after this at the soonest (SQS delays are whole seconds) and at
# the latest: a limit raised or deleted reaches the occurrences it held back at their next look.
HOLD_MIN_MS = 1 * SECOND_MS
HOLD_MAX_MS = 60 * SECOND_MS
# A waiter's place is kept this long past the instant it is expected back (a late delivery).
WAITER_GRACE_MS = 30 * SECOND_MS
# Until a key has seen an attempt end, an attempt is assumed to take this long.
ASSUMED_ATTEMPT_MS = 1 * SECOND_MS
# A held-back occurrence on a shard that limits only the rate books the token it will start on, when
# that token's time is at most this far off: it then comes back to start, not to race the others for
# what the line leaves (at 100 starts a second a shard the line of ten covers a tenth of a second,
# and a held-back message comes back a whole second later at the soonest). The horizon bounds how
# long a booking made before a better-ranked arrival keeps its turn ahead of it.
BOOKING_HORIZON_MS = 3 * SECOND_MS
# A booked token may be used from the earliest instant a start could have taken it until its own
# time: `burst - 1` starts' time. Narrower than this, a delivery rarely lands in it, and the
# occurrence books nothing.
BOOKING_MIN_WINDOW_MS = 200


def shard_count(max_concurrent: int | None, per_second: float | None) -> int:
    by_slots = math.ceil(max_concurrent / SLOTS_PER_SHARD) if max_concurrent else 1
    by_rate = math.ceil(per_second / STARTS_PER_SHARD_PER_SECOND) if per_second else 1
    return max(1, min(MAX_LIMIT_SHARDS, max(by_slots, by_rate)))


@dataclass(frozen=True)
class LimitConfig:
    key: str
    max_concurrent: int | None
    per_second: float | None
    burst: int
    shards: int
    updated_at: int


@dataclass(frozen=True)
class ShardShare:
    """One shard's part of its key's limit: the parts add up to the limit (a burst below the shard
    count gives each shard one, the least a bucket can hold)."""

    max_concurrent: int | None
    per_second: float | None
    burst: int

    @property
    def closed(self) -> bool:
        return self.max_concurrent == 0


def share_of(config: LimitConfig, shard: int) -> ShardShare:
    count = config.shards

    def part(total: int) -> int:
        return total // count + (1 if shard < total % count else 0)

    concurrent = part(config.max_concurrent) if config.max_concurrent is not None else None
    rate = config.per_second / count if config.per_second is not None else None
    return ShardShare(concurrent, rate, max(1, part(config.burst)))


def rank_of(priority: Priority, due_at: int, job_id: str) -> str:
    """A text that sorts as occurrences take their turn: priority, then the oldest due, then the id."""
    return f"{c.PRIORITIES.index(priority)}{max(0, due_at):013d}{job_id}"


@dataclass(frozen=True)
class Waiter:
    rank: str
    since: int  # when the occurrence was first held back
    until: int  # its place is kept until then


@dataclass(frozen=True)
class ShardState:
    holders: dict[str, int] = field(default_factory=dict)  # job id → the end of its attempt's lease
    waiters: dict[str, Waiter] = field(default_factory=dict)
    rate_at: float | None = None  # None: a full bucket
    last_attempt_ms: int | None = None  # the latest attempt's time, as its settle gave it back

    def live_holders(self, now_ms: int, other_than: str | None = None) -> dict[str, int]:
        return {job: end for job, end in self.holders.items() if end >= now_ms and job != other_than}

    def live_waiters(self, now_ms: int, other_than: str | None = None) -> dict[str, Waiter]:
        return {job: w for job, w in self.waiters.items() if w.until >= now_ms and job != other_than}


@dataclass(frozen=True)
class Admission:
    """What one arrival may do. Admitted: take a slot and a token, `needed` of each still there when
    the take is written (itself and the live waiters ranked before it). Held: look again after
    `delay_ms`, `waiter` its place in line (None: unranked, beyond the line)."""

    admitted: bool
    delay_ms: int = 0
    waiter: Waiter | None = None
    evicted: tuple[str, ...] = ()  # waiters this arrival's place pushes out of the line
    expired: tuple[str, ...] = ()  # holders and waiters whose time is over: removed by the write
    # Beyond the line for the first time: take the instant after the shard's `next_look`, no sooner
    # than `look_floor`, `look_spacing_ms` after the one before it (the store reserves it).
    look_spacing_ms: int | None = None
    look_floor: int | None = None
    needed: int = 1
    # Held back on a shard that books: the latest `rate_at` its booking may find (see `Booking`).
    book_ceiling: float | None = None


@dataclass(frozen=True)
class Booking:
    """A token taken for a start to come: the booking moved `rate_at` on one start's time from
    `token_at`, so that a start at any instant from `opens_at` to `closes_at` is one a take at that
    instant could have made (`rate_at` was within the burst of it and not behind it), and with every
    other booking and take the key keeps to its rate and burst. Used once: by the fence of the
    occurrence that booked it, conditional on the shard's share being the one booked under."""

    shard: int
    share_text: str
    opens_at: int
    closes_at: int


def start_interval_ms(share: ShardShare) -> float | None:
    """One start's time at the shard's rate, what each start moves `rate_at` on: rounded up to the
    microsecond, so that the number stays short and the rate is never exceeded."""
    return None if not share.per_second else math.ceil(SECOND_MS * 1000 / share.per_second) / 1000


def tokens_now(share: ShardShare, state: ShardState, now_ms: int) -> float | None:
    interval = start_interval_ms(share)
    if interval is None:
        return None
    if state.rate_at is None or state.rate_at <= now_ms:
        return float(share.burst)
    return share.burst - (state.rate_at - now_ms) / interval


def rate_ceiling(share: ShardShare, now_ms: int, needed: int) -> float:
    """The latest `rate_at` at which `needed` tokens are there at `now_ms`: a start's write is
    conditional on it."""
    interval = start_interval_ms(share)
    assert interval is not None
    return now_ms + (share.burst - needed) * interval


def booking_ceiling(
    share: ShardShare, state: ShardState, now_ms: int, needed: int, late_ms: int = 0
) -> float | None:
    """The latest `rate_at` at which a held-back arrival books a token (its `needed - 1` better-ranked
    waiters still finding theirs within the horizon), or None when it books nothing: the shard also
    limits concurrency (slots are not booked), its window is too narrow, its bucket is not in use
    (the arrival waits for the line, not a token) or already booked past the horizon.

    Nor does an arrival delivered `late_ms` after its instant book, when that is longer than the
    window: its queue is behind by as much, and a message sent back to it would come back past its
    window. Such a booking is a token no start uses; a burst of them at 0.5 of the bench's
    limit goal held every start back for eight seconds while the queue caught up."""
    interval = start_interval_ms(share)
    if share.max_concurrent is not None or interval is None:
        return None
    window = (share.burst - 1) * interval
    if window < BOOKING_MIN_WINDOW_MS or late_ms > window:
        return None
    ceiling = rate_ceiling(share, now_ms + BOOKING_HORIZON_MS, needed)
    if state.rate_at is None or not now_ms <= state.rate_at <= ceiling:
        return None
    return ceiling


def booked(share: ShardShare, shard: int, share_text: str, token_at: float) -> Booking:
    """The booking of the token whose time is `token_at` (`rate_at` before the booking moved it)."""
    interval = start_interval_ms(share)
    assert interval is not None
    opens_at = math.ceil(token_at - (share.burst - 1) * interval)
    return Booking(shard, share_text, opens_at, math.floor(token_at))


def admit(
    share: ShardShare,
    state: ShardState,
    job_id: str,
    rank: str,
    now_ms: int,
    held_since: int | None = None,
    looks_at: int | None = None,
    contended: bool = False,
    late_ms: int = 0,
) -> Admission:
    """Whether the arrival `job_id` (ranked `rank`) starts now on this shard, or how long it waits.

    `contended`: other starts took what this shard showed it, between its read and its take. It
    then takes its turn in line or in the queue of looks rather than race for the next slot or
    token: arrivals that each see the one token come back every second and race again, and none
    ever enters the line that orders them.

    `looks_at` is the instant the queue beyond the line gave it before, if any: until then it waits
    for that instant (at most HOLD_MAX_MS at a time); after it, its turn has come: it books, or takes
    its next instant.

    Held back on a shard that books (`booking_ceiling`), it first books its token: the line and the
    queue of looks are for the occurrences the horizon has no token for. `late_ms`: how long after
    its instant the arrival was delivered."""
    holders = state.live_holders(now_ms, job_id)
    waiters = state.live_waiters(now_ms, job_id)
    expired = tuple(
        sorted(
            {j for j, end in state.holders.items() if end < now_ms}
            | {j for j, w in state.waiters.items() if w.until < now_ms}
        )
    )
    free = math.inf if share.max_concurrent is None else share.max_concurrent - len(holders)
    tokens = tokens_now(share, state, now_ms)
    capacity = 0 if contended else min(free, math.inf if tokens is None else math.floor(tokens))
    ahead = sum(1 for waiter in waiters.values() if waiter.rank < rank)
    if capacity > ahead:
        return Admission(True, expired=expired, needed=ahead + 1)
    book = booking_ceiling(share, state, now_ms, ahead + 1, late_ms)
    line = sorted([*((w.rank, j) for j, w in waiters.items()), (rank, job_id)])
    kept = {j for _, j in line[:WAITERS_KEPT]}
    evicted = tuple(j for j in waiters if j not in kept)
    if job_id in kept:
        delay = _delay_ms(share, state, tokens, free, ahead + 1)
        since = held_since if held_since is not None else now_ms
        waiter = Waiter(rank, since, now_ms + delay + WAITER_GRACE_MS)
        return Admission(False, delay, waiter, evicted, expired, needed=ahead + 1, book_ceiling=book)
    behind_line = _delay_ms(share, state, tokens, free, ahead + 1)
    if looks_at is not None and looks_at > now_ms:
        # Its instant is still to come: no new place, and no booking, so that the queue of looks
        # keeps its order.
        return Admission(False, _bounded(looks_at - now_ms), None, (), expired, needed=ahead + 1)
    # Beyond the line for the first time, or its instant came and the horizon had no token left to
    # book: its turn to book is its next instant in the queue of looks, so that those waiting there
    # book in the order they came, not every one of a burst at once. One whose instant came books
    # first if the horizon has a token (`book_ceiling`), and takes a new instant only if it has none:
    # left to look again as soon as the next token would be free, such occurrences came back
    # together and faster than the key started them (docs/design.md, "Holding back").
    booking = book if looks_at is not None else None
    spacing = _start_spacing_ms(share, state)
    return Admission(False, behind_line, None, (), expired, spacing, now_ms + behind_line, ahead + 1, booking)


def _delay_ms(share: ShardShare, state: ShardState, tokens: float | None, free: float, turn: int) -> int:
    """How long until `turn` starts (1: the next) could all have started: the tokens they need at
    the key's rate, and the waves of attempts ahead of them at the latest attempt's time."""
    delay = 0.0
    if share.per_second is not None and tokens is not None:
        delay = max(delay, (turn - tokens) / share.per_second * SECOND_MS)
    if share.max_concurrent is not None and free < turn:
        waves = math.ceil((turn - max(0.0, free)) / max(1, share.max_concurrent))
        delay = max(delay, waves * (state.last_attempt_ms or ASSUMED_ATTEMPT_MS))
    return _bounded(delay)


def _bounded(delay_ms: float) -> int:
    return int(min(HOLD_MAX_MS, max(HOLD_MIN_MS, math.ceil(delay_ms))))


def _start_spacing_ms(share: ShardShare, state: ShardState) -> int:
    """How far apart the queue beyond the line sends its occurrences to look again: one start's worth
    of the shard's rate, or of its slots at the latest attempt's time, whichever is slower."""
    spacing = 0.0
    if share.per_second:
        spacing = SECOND_MS / share.per_second
    if share.max_concurrent:
        spacing = max(spacing, (state.last_attempt_ms or ASSUMED_ATTEMPT_MS) / share.max_concurrent)
    return max(1, math.ceil(spacing))


def bounded_delay_ms(look_at: int, now_ms: int) -> int:
    """The delay until a reserved instant, within what one hold waits."""
    return _bounded(look_at - now_ms)
