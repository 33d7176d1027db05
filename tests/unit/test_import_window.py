"""`sundial jobs import`'s window of requests in flight: it starts small, grows by one an answer up
to --in-flight, halves on a throttle or failure, and gives up after failures in a row."""

from __future__ import annotations

import pytest

from sundial.client.errors import Throttled
from sundial.commands.bulk import _Window


def throttled() -> Throttled:
    return Throttled("Too Many Requests", status=429)


def test_it_grows_one_an_answer_up_to_the_most() -> None:
    window = _Window(10)
    sizes = [window.size]
    for _ in range(4):
        window.answered()
        sizes.append(window.size)
    assert sizes == [8, 9, 10, 10, 10]
    assert _Window(3).size == 3


def test_it_halves_on_a_failure_and_gives_up_after_eight_in_a_row() -> None:
    window = _Window(250)
    for _ in range(100):
        window.answered()
    window.failed(throttled())
    assert window.size == 54
    window.answered()  # an answer ends the run of failures
    for _ in range(7):
        window.failed(throttled())
    assert window.size == 1
    with pytest.raises(Throttled):
        window.failed(throttled())
