"""Retry timing: the job's backoff list, its last entry repeating, ±10 % jitter."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sundial.contract.bounds import DEFAULT_BACKOFF
from sundial.shared.backoff import retry_delay_seconds


class _Edge(random.Random):
    """Returns the low or the high end of every uniform draw."""

    def __init__(self, high: bool) -> None:
        super().__init__()
        self.high = high

    def uniform(self, a: float, b: float) -> float:
        return b if self.high else a


@pytest.mark.parametrize(
    ("retry", "low", "high"),
    [
        (1, 4.5, 5.5),  # 5 s ± 10 %
        (2, 27.0, 33.0),  # 30 s ± 10 %
        (3, 108.0, 132.0),  # 2 min ± 10 %
        (4, 540.0, 660.0),  # 10 min ± 10 %
        (5, 3240.0, 3960.0),  # 1 h ± 10 %
        (9, 3240.0, 3960.0),  # past the list: the last entry repeats
    ],
)
def test_default_backoff(retry: int, low: float, high: float) -> None:
    assert retry_delay_seconds(DEFAULT_BACKOFF, retry, _Edge(high=False)) == pytest.approx(low)
    assert retry_delay_seconds(DEFAULT_BACKOFF, retry, _Edge(high=True)) == pytest.approx(high)


@given(
    backoff=st.lists(st.integers(0, 86_400), min_size=1, max_size=20),
    retry=st.integers(1, 30),
    seed=st.integers(0, 2**32),
)
def test_jitter_stays_within_ten_percent(backoff: list[int], retry: int, seed: int) -> None:
    base = backoff[min(retry, len(backoff)) - 1]
    delay = retry_delay_seconds(backoff, retry, random.Random(seed))
    assert base * 0.9 - 1e-9 <= delay <= base * 1.1 + 1e-9


@pytest.mark.parametrize(("backoff", "retry"), [((), 1), ((5,), 0)])
def test_nonsense_is_refused(backoff: tuple[int, ...], retry: int) -> None:
    with pytest.raises(ValueError, match="backoff"):
        retry_delay_seconds(backoff, retry)
