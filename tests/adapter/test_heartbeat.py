"""A heartbeat that meets an error it did not expect keeps beating: its thread ending would let the
lease lapse unseen while the call still runs, and the occurrence run twice."""

from __future__ import annotations

import threading
from typing import Any

from sundial.contract.bounds import LONGEST_TIMEOUT_SECONDS
from sundial.contract.jobs import JobCreate
from sundial.shared.engine.heartbeat import Heartbeat
from tests.adapter.conftest import Engine, python_target


def test_a_beat_that_fails_unexpectedly_is_tried_again(engine: Engine, monkeypatch: Any) -> None:
    spec = {"target": python_target(), "timeout_seconds": LONGEST_TIMEOUT_SECONDS}
    view, _ = engine.service.create(JobCreate.model_validate(spec))
    [message] = engine.receive()
    job = engine.store.fence(view.id, message.token, "w", engine.clock.now_ms())
    engine.clock.advance(120)  # the lease runs short: the next beat renews it
    renewed = threading.Event()
    calls: list[str] = []
    real = engine.store.heartbeat

    def first_one_breaks(*args: Any) -> Any:
        calls.append("beat")
        if len(calls) == 1:
            raise TypeError("a bug in the store, not an AWS error")
        answer = real(*args)
        renewed.set()
        return answer

    monkeypatch.setattr(engine.store, "heartbeat", first_one_breaks)
    with Heartbeat(engine.context, job, message.token, 0.05) as heartbeat:
        assert renewed.wait(10), calls

    assert not heartbeat.lost and len(calls) >= 2
    assert (engine.store.get(view.id).lease_until or 0) > (job.lease_until or 0)
