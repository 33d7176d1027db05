"""`sundial jobs import`'s window of requests in flight: it starts small, grows by one an answer up
to --in-flight, halves on a throttle or failure, and gives up after failures in a row; the items an
answer refuses as throttled go again alone, after a pause that grows with each setback in a row."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from sundial.client.errors import Throttled
from sundial.commands.bulk import _Request, _Sender, _Tally, _Window
from sundial.contract.bulk import BatchAnswer, BatchItem
from sundial.contract.errors import ErrorBody


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


def test_throttled_items_halve_it_and_each_setback_in_a_row_doubles_the_pause() -> None:
    window = _Window(250, jitter=lambda: 1.0)
    for _ in range(40):
        window.answered()
    assert window.pause() == 0.0
    pauses = []
    for _ in range(8):
        window.shed(made_any=False)
        pauses.append(window.pause())
    assert window.size == 1
    assert pauses == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 20.0]
    window.answered()
    assert (window.size, window.pause()) == (2, 0.0)


def test_throttled_items_never_end_the_import_but_whole_failures_still_do() -> None:
    window = _Window(8)
    for _ in range(50):
        window.shed(made_any=False)
    for _ in range(7):
        window.failed(throttled())
    with pytest.raises(Throttled):
        window.failed(throttled())


class _BusyTable:
    """A client whose table refuses some items of each request as throttled the first time."""

    def __init__(self) -> None:
        self.made: list[str] = []
        self.sent: list[list[str]] = []
        self.pauses: list[float] = []
        self.busy_seen: set[str] = set()
        self._lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)

    def create_jobs(self, jobs: list[dict[str, Any]]) -> BatchAnswer:
        with self._lock:
            self.sent.append([job["name"] for job in jobs])
            results = []
            for index, job in enumerate(jobs):
                if job["name"].endswith("3") and job["name"] not in self.busy_seen:
                    self.busy_seen.add(job["name"])
                    error = ErrorBody(
                        message=f"jobs[{index}] was not made: throttling", field=f"jobs[{index}]"
                    )
                    results.append(BatchItem(index=index, status=429, error=error))
                else:
                    self.made.append(job["name"])
                    results.append(BatchItem(index=index, status=201))
            counted = [r.status for r in results]
            return BatchAnswer(
                results=results, created=counted.count(201), existing=0, refused=counted.count(429)
            )


def test_the_items_refused_as_throttled_go_again_alone_after_a_pause_and_are_made_once() -> None:
    client = _BusyTable()
    tally, progress = _Tally(), []
    bodies = [(n, {"name": f"job-{n}"}) for n in range(1, 251)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        sender = _Sender(client, pool, _Window(4), tally, progress.append)  # type: ignore[arg-type]
        for start in range(0, 250, 100):
            chunk = bodies[start : start + 100]
            sender.add(_Request(chunk, len(chunk)))
        sender.drain()

    names = [body["name"] for _, body in bodies]
    assert sorted(client.made) == sorted(names)  # each once
    assert tally.counts == {"created": 250, "already there": 0, "refused": 0}
    assert sum(progress) == 250
    resent = [sent for sent in client.sent if all(name.endswith("3") for name in sent)]
    assert len(resent) == 3 and all(len(sent) == 10 for sent in resent[:2])  # only the throttled
    assert any(pause > 0 for pause in client.pauses)
