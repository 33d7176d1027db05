"""The admission rules of a key's shard, driven through arrivals, starts and ends: the bounds a limit
promises hold for every sequence Hypothesis finds (docs/api.md, "Limits")."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sundial.contract.vocabulary import Priority
from sundial.shared.limits import LimitConfig, ShardState, admit, booked, rank_of, shard_count, share_of
from sundial.shared.limits.gate import (
    BOOKING_HORIZON_MS,
    BOOKING_MIN_WINDOW_MS,
    HOLD_MAX_MS,
    HOLD_MIN_MS,
    WAITERS_KEPT,
    ShardShare,
    booking_ceiling,
    start_interval_ms,
)

SECOND = 1000


def _run(config: LimitConfig, arrivals: list[tuple[int, int, int]]) -> tuple[list[int], int]:
    """Feeds arrivals (at ms, priority index, attempt ms) to shard 0; returns the start instants and
    the most attempts that ran at once."""
    share = share_of(config, 0)
    state = ShardState()
    starts: list[int] = []
    ends: dict[str, int] = {}
    most = 0
    for n, (at, priority, took) in enumerate(sorted(arrivals)):
        job = f"job{n:04d}"
        ends = {j: end for j, end in ends.items() if end > at}
        holders = dict(state.holders)
        for j in list(holders):
            if j not in ends:
                holders.pop(j)  # ended: its settle gave the slot back
        state = replace(state, holders=holders)
        decision = admit(
            share, state, job, rank_of(Priority(["high", "medium", "low"][priority]), at, job), at
        )
        if decision.admitted:
            starts.append(at)
            ends[job] = at + took
            if share.max_concurrent is not None:
                state = replace(state, holders={**state.holders, job: at + took + 60 * SECOND})
            interval = start_interval_ms(share)
            if interval is not None:  # the start's time goes on the end of what is taken
                state = replace(state, rate_at=max(at, state.rate_at or at) + interval)
            most = max(most, len(ends))
        else:
            assert HOLD_MIN_MS <= decision.delay_ms <= HOLD_MAX_MS
    return starts, most


arrivals = st.lists(
    st.tuples(st.integers(0, 20 * SECOND), st.integers(0, 2), st.integers(1, 5 * SECOND)), max_size=80
)


@settings(max_examples=200, deadline=None)
@given(arrivals, st.integers(1, 5), st.integers(1, 8))
def test_no_second_sees_more_than_burst_plus_rate_starts(
    arrived: list[tuple[int, int, int]], rate: int, burst: int
) -> None:
    config = LimitConfig("k", None, float(rate), burst, 1, 0)
    starts, _ = _run(config, arrived)
    for start in starts:
        in_window = sum(1 for other in starts if start <= other < start + SECOND)
        assert in_window <= burst + rate


def _run_booking(share: ShardShare, arrivals: list[int], rush: int) -> tuple[list[float], int]:
    """Feeds arrivals (at ms) to a rate-only shard: each starts on a token taken now, books one, or
    waits. A booked one comes back to start as near `rush` as its booking's window lets it: the
    worst case, every booking crowding one instant. Returns every start's instant and how many
    booked."""
    state = ShardState()
    interval = start_interval_ms(share)
    assert interval is not None
    starts: list[float] = []
    bookings = 0
    for n, at in enumerate(sorted(arrivals)):
        job = f"job{n:04d}"
        decision = admit(share, state, job, rank_of(Priority.MEDIUM, at, job), at)
        if decision.admitted:
            starts.append(at)
            state = replace(state, rate_at=max(at, state.rate_at or at) + interval)
        elif decision.book_ceiling is not None:
            # The store's condition: the bucket in use and not booked past the ceiling.
            assert state.rate_at is not None and at <= state.rate_at <= decision.book_ceiling
            booking = booked(share, 0, "share", state.rate_at)
            assert at <= booking.closes_at and booking.opens_at <= at + BOOKING_HORIZON_MS
            state = replace(state, rate_at=state.rate_at + interval)
            starts.append(min(max(rush, booking.opens_at), booking.closes_at))
            bookings += 1
    return sorted(starts), bookings


@settings(max_examples=300, deadline=None)
@given(
    # Arrivals come in crowds (an instant, how many at it): a crowd is what fills a horizon.
    st.lists(st.tuples(st.integers(0, 10 * SECOND), st.integers(1, 60)), max_size=8),
    st.integers(0, 15 * SECOND),
    st.integers(1, 50),
    st.integers(1, 60),
)
@example(crowds=[(0, 40)], rush=1_300, rate=10, burst=10)
def test_booked_starts_and_starts_taken_on_arrival_together_keep_to_rate_and_burst(
    crowds: list[tuple[int, int]], rush: int, rate: int, burst: int
) -> None:
    """Booked tokens start anywhere in their windows, after later arrivals took theirs: no span of
    time sees more starts than the burst and the rate over it allow."""
    share = ShardShare(None, float(rate), burst)
    starts, bookings = _run_booking(share, [at for at, many in crowds for _ in range(many)], rush)
    if (burst - 1) * SECOND / rate < BOOKING_MIN_WINDOW_MS:
        assert bookings == 0  # a window too narrow to land in: nothing is booked
    for i, first in enumerate(starts):
        for j in range(i, len(starts)):
            span = starts[j] - first
            assert j - i + 1 <= burst + rate * span / SECOND + 1e-6, (first, span, j - i + 1)


def test_a_shard_that_limits_concurrency_books_no_token() -> None:
    share = ShardShare(2, 10.0, 10)
    state = ShardState(rate_at=1_500.0)
    assert booking_ceiling(share, state, 1_000, 1) is None
    assert booking_ceiling(ShardShare(None, 10.0, 10), state, 1_000, 1) == 1_000 + BOOKING_HORIZON_MS + 900


def test_an_arrival_delivered_later_than_its_window_is_wide_books_nothing_and_takes_its_turn() -> None:
    share = ShardShare(None, 100.0, 100)  # a window of 99 starts' time: 990 ms
    busy = ShardState(rate_at=2_000.0)
    rank = rank_of(Priority.LOW, 0, "j")
    on_the_edge = admit(share, busy, "j", rank, 1_000, late_ms=990)
    behind = admit(share, busy, "j", rank, 1_000, late_ms=991)
    assert on_the_edge.book_ceiling is not None
    assert not behind.admitted and behind.book_ceiling is None and behind.waiter is not None


def test_a_held_back_arrival_on_a_busy_rate_books_its_token_and_the_horizon_bounds_it() -> None:
    share = ShardShare(None, 100.0, 100)  # a shard of a key at 500 a second over five
    busy = ShardState(rate_at=1_000 + 1_000.0)  # the burst used up
    decision = admit(share, busy, "j", rank_of(Priority.LOW, 0, "j"), 1_000)
    assert not decision.admitted and decision.book_ceiling == 1_000 + BOOKING_HORIZON_MS + 990
    booking = booked(share, 0, "share", 2_000.0)
    assert (booking.opens_at, booking.closes_at) == (1_010, 2_000)  # its burst's time, to its own
    beyond = ShardState(rate_at=1_000 + BOOKING_HORIZON_MS + 1_000.0)
    assert admit(share, beyond, "j", rank_of(Priority.LOW, 0, "j"), 1_000).book_ceiling is None


@settings(max_examples=200, deadline=None)
@given(arrivals, st.integers(1, 4))
def test_never_more_than_max_concurrent_at_once(
    arrived: list[tuple[int, int, int]], most_at_once: int
) -> None:
    config = LimitConfig("k", most_at_once, None, 1, 1, 0)
    _, most = _run(config, arrived)
    assert most <= most_at_once


def test_a_holder_whose_lease_ended_frees_its_slot() -> None:
    share = share_of(LimitConfig("k", 1, None, 1, 1, 0), 0)
    held = ShardState(holders={"gone": 10 * SECOND})
    assert not admit(share, held, "next", rank_of(Priority.MEDIUM, 0, "next"), 10 * SECOND).admitted
    freed = admit(share, held, "next", rank_of(Priority.MEDIUM, 0, "next"), 10 * SECOND + 1)
    assert freed.admitted and freed.expired == ("gone",)


def test_a_later_high_is_ranked_before_an_earlier_low() -> None:
    share = share_of(LimitConfig("k", 1, None, 1, 1, 0), 0)
    low = rank_of(Priority.LOW, 0, "low")
    high = rank_of(Priority.HIGH, 5 * SECOND, "high")
    state = ShardState()
    held_high = admit(share, replace(state, holders={"busy": 60 * SECOND}), "high", high, SECOND)
    assert held_high.waiter is not None
    state = replace(state, waiters={"high": held_high.waiter})
    assert not admit(share, state, "low", low, 2 * SECOND).admitted  # a slot is free, but the high is owed it
    assert admit(share, state, "high", high, 2 * SECOND).admitted


def test_the_line_keeps_the_best_ranked_and_pushes_out_the_worst() -> None:
    share = share_of(LimitConfig("k", 1, None, 1, 1, 0), 0)
    state = ShardState(holders={"busy": 60 * SECOND})
    for n in range(WAITERS_KEPT):
        job = f"low{n:02d}"
        decision = admit(share, state, job, rank_of(Priority.LOW, n, job), SECOND)
        assert decision.waiter is not None
        state = replace(state, waiters={**state.waiters, job: decision.waiter})
    unranked = admit(share, state, "late", rank_of(Priority.LOW, 10**6, "late"), SECOND)
    assert unranked.waiter is None and unranked.evicted == ()
    high = admit(share, state, "high", rank_of(Priority.HIGH, 10**6, "high"), SECOND)
    assert high.waiter is not None and high.evicted == (f"low{WAITERS_KEPT - 1:02d}",)


def test_shares_add_up_to_the_limit() -> None:
    for concurrent, rate in [(10_000, None), (7, 5000.0), (250, 0.5), (None, 10_000.0)]:
        config = LimitConfig("k", concurrent, rate, max(1, int(rate or 1)), shard_count(concurrent, rate), 0)
        shares = [share_of(config, n) for n in range(config.shards)]
        if concurrent is not None:
            assert sum(s.max_concurrent or 0 for s in shares) == concurrent
        if rate is not None:
            assert abs(sum(s.per_second or 0 for s in shares) - rate) < 1e-6
        assert 1 <= config.shards <= 64


def test_beyond_the_line_an_arrival_asks_for_the_next_instant_of_the_queue_of_looks() -> None:
    share = share_of(LimitConfig("k", None, 5.0, 5, 1, 0), 0)
    state = ShardState(rate_at=SECOND + 1 * SECOND)  # an empty bucket: its 5 tokens taken at 5 a second
    for n in range(WAITERS_KEPT):
        job = f"early{n:02d}"
        decision = admit(share, state, job, rank_of(Priority.MEDIUM, 0, job), SECOND)
        assert decision.waiter is not None
        state = replace(state, waiters={**state.waiters, job: decision.waiter})

    late = admit(share, state, "late", rank_of(Priority.MEDIUM, 0, "late"), SECOND)
    assert late.waiter is None and late.look_spacing_ms == 200  # one start at 5 a second
    assert late.look_floor is not None and late.look_floor >= SECOND + WAITERS_KEPT * 200  # after the line

    waiting = admit(
        share, state, "late", rank_of(Priority.MEDIUM, 0, "late"), SECOND, looks_at=SECOND + 30 * SECOND
    )
    assert waiting.look_spacing_ms is None and waiting.delay_ms == 30 * SECOND  # its instant, no new one
    far = admit(
        share, state, "late", rank_of(Priority.MEDIUM, 0, "late"), SECOND, looks_at=SECOND + 200 * SECOND
    )
    assert far.delay_ms == HOLD_MAX_MS  # a minute at a time, so that a raised limit reaches it
