"""SQS delays: whole seconds, rounded so that a message arrives early, or a few tens of ms late."""

from __future__ import annotations

import pytest

from shared import constants as c
from shared.dispatch import delay_seconds

NOW = 1_796_000_000_000


@pytest.mark.parametrize(
    ("due_in_ms", "extra_lead", "delay"),
    [
        (0, 0, 0),  # due now
        (-5_000, 0, 0),  # overdue: at once
        (949, 0, 0),  # under a second: at once, the worker waits 0.949 s
        (1_000, 0, 1),
        (29_949, 0, 29),  # arrives 0.949 s early
        (29_951, 0, 30),  # arrives 49 ms late rather than 951 ms early: a second of worker time saved
        (30_000, 0, 30),
        (30_000, 1, 29),  # the emulator's extra second of lead
        (2_000_000, 0, 900),  # SQS's longest delay; the worker sends it on again when it arrives
    ],
)
def test_delay_rounds_down_to_whole_seconds(due_in_ms: int, extra_lead: int, delay: int) -> None:
    assert delay_seconds(NOW + due_in_ms, NOW, extra_lead) == delay


@pytest.mark.parametrize(
    ("due_in_ms", "extra_lead", "delay"),
    [
        (0, 0, 0),
        (-5_000, 0, 0),
        (1, 0, 1),  # a millisecond ahead: a whole second later, never early
        (949, 0, 1),
        (1_000, 0, 1),
        (1_001, 0, 2),
        (29_951, 0, 30),
        (30_000, 1, 29),  # the emulator's extra second of lead still applies
        (2_000_000, 0, 900),
    ],
)
def test_sqs_precision_rounds_up_so_a_message_is_never_early(
    due_in_ms: int, extra_lead: int, delay: int
) -> None:
    assert delay_seconds(NOW + due_in_ms, NOW, extra_lead, c.Precision.SQS) == delay


def test_sqs_precision_arrives_on_or_within_a_second_after_the_instant() -> None:
    for due_in_ms in range(0, 900_000, 977):
        visible = NOW + delay_seconds(NOW + due_in_ms, NOW, 0, c.Precision.SQS) * 1000
        assert NOW + due_in_ms <= visible < NOW + due_in_ms + 1000, due_in_ms
