"""SQS delays: whole seconds, rounded so that a message arrives early, or a few tens of ms late."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from sundial.shared.clock import FixedClock
from sundial.shared.dispatch import GATHER_FROM_MS, Dispatcher, JobMessage, SharedSends, delay_seconds

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


class StubSqs:
    """SendMessageBatch calls, answered with the entries whose bodies name a job in `refuse` failed."""

    def __init__(self, refuse: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.calls: list[list[str]] = []
        self.urls: list[str] = []
        self._refuse = refuse
        self._lock = threading.Lock()

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803
        with self._lock:
            self.calls.append([JobMessage.model_validate_json(e["MessageBody"]).job_id for e in Entries])
            self.urls.append(QueueUrl)
        failed = [
            e for e in Entries if JobMessage.model_validate_json(e["MessageBody"]).job_id in self._refuse
        ]
        return {"Failed": [{"Id": e["Id"], "SenderFault": False, "Code": "x"} for e in failed]}


def _message(n: int) -> JobMessage:
    return JobMessage(job_id=f"job-{n}", token="t", due_at=NOW + 60_000, priority=Priority.MEDIUM)


def test_shared_sends_put_concurrent_sends_in_one_request_and_answer_each_caller_for_its_own() -> None:
    sqs = StubSqs(refuse={"job-3"})
    urls = dict.fromkeys(c.PRIORITIES, "https://queue")
    shared = SharedSends(sqs, urls, "https://dead", FixedClock(NOW), window_seconds=30.0)  # type: ignore[arg-type]
    start = threading.Barrier(c.SEND_BATCH_SIZE)

    def send(n: int) -> list[str]:
        start.wait()
        return [m.job_id for m in shared.send([_message(n)])]

    began = time.monotonic()
    with ThreadPoolExecutor(c.SEND_BATCH_SIZE) as pool:
        answers = list(pool.map(send, range(c.SEND_BATCH_SIZE)))

    # Ten messages fill a batch: it leaves at once, not after the 30 s window.
    assert time.monotonic() - began < 10
    first, *retries = sqs.calls
    assert sorted(first) == sorted(f"job-{n}" for n in range(10))
    assert retries == [["job-3"], ["job-3"]]  # the refused entry is retried alone, as without sharing
    assert answers == [["job-3"] if n == 3 else [] for n in range(c.SEND_BATCH_SIZE)]


def test_a_lone_shared_send_leaves_after_the_window() -> None:
    sqs = StubSqs()
    urls = dict.fromkeys(c.PRIORITIES, "https://queue")
    shared = SharedSends(sqs, urls, "https://dead", FixedClock(NOW), window_seconds=0.05)  # type: ignore[arg-type]
    assert shared.send([_message(1)]) == []
    assert sqs.calls == [["job-1"]]


URLS = {p: f"https://queue/{p.value}" for p in c.PRIORITIES}


def _gathering(sqs: StubSqs, clock: FixedClock) -> Any:
    return Dispatcher(sqs, URLS, "https://dead", clock).gathering()  # type: ignore[arg-type]


def _due(n: int, in_ms: int, priority: Priority = Priority.MEDIUM) -> JobMessage:
    return JobMessage(job_id=f"job-{n}", token="t", due_at=NOW + in_ms, priority=priority)


def test_a_batch_s_messages_gather_by_queue_and_leave_ten_to_a_request() -> None:
    sqs, clock = StubSqs(), FixedClock(NOW)
    gathering = _gathering(sqs, clock)
    for n in range(25):
        assert gathering.send([_due(n, 60_000)]) == []
        assert sum(map(len, sqs.calls)) == 10 * ((n + 1) // 10)  # nothing leaves before ten gathered
    assert sqs.calls == [[f"job-{n}" for n in range(10)], [f"job-{n}" for n in range(10, 20)]]
    assert [m.job_id for m in gathering.rest()] == [f"job-{n}" for n in range(20, 25)]
    assert gathering.rest() == []  # taken once


def test_each_queue_gathers_its_own_ten() -> None:
    sqs, clock = StubSqs(), FixedClock(NOW)
    gathering = _gathering(sqs, clock)
    for n in range(19):
        gathering.send([_due(n, 60_000, Priority.HIGH if n % 2 else Priority.LOW)])
    assert sqs.urls == [URLS[Priority.LOW]]  # the tenth low one; nine high ones wait
    gathering.send([_due(19, 60_000, Priority.HIGH)])
    assert sqs.urls == [URLS[Priority.LOW], URLS[Priority.HIGH]]
    assert all(len(call) == 10 for call in sqs.calls)


def test_a_message_that_starts_soon_leaves_at_once_and_one_that_came_close_with_the_next_send() -> None:
    sqs, clock = StubSqs(), FixedClock(NOW)
    gathering = _gathering(sqs, clock)
    gathering.send([_due(1, GATHER_FROM_MS - 1)])
    assert sqs.calls == [["job-1"]]
    gathering.send([_due(2, GATHER_FROM_MS + 2_000)])
    assert sqs.calls == [["job-1"]]  # gathering
    clock.advance(2.5)  # the batch's writes were slow: job-2 now starts within GATHER_FROM_MS
    gathering.send([_due(3, 60_000)])
    assert sqs.calls == [["job-1"], ["job-2"]]
    assert [m.job_id for m in gathering.rest()] == ["job-3"]


def test_a_send_answers_the_failed_messages_of_what_it_sent_whoever_gathered_them() -> None:
    sqs, clock = StubSqs(refuse={"job-4"}), FixedClock(NOW)
    gathering = _gathering(sqs, clock)
    failed = [m.job_id for n in range(10) for m in gathering.send([_due(n, 60_000)])]
    assert failed == ["job-4"]  # returned by the tenth send, which sent all ten
