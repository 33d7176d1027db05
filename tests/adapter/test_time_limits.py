"""Never two attempts of one job at once, whoever calls the worker: a target that outlives its limit
holds back its retry until the call is known to be over, with an invocation deadline or without."""

from __future__ import annotations

import threading
import time
from typing import Any

from sundial.contract.bounds import (
    LONGEST_TIMEOUT_SECONDS,
    MAX_EARLY_WAIT_SECONDS,
    WORKER_FUNCTION_TIMEOUT_SECONDS,
)
from sundial.contract.jobs import JobCreate
from sundial.shared.clock import format_rfc3339
from sundial.shared.engine.worker import Outcome
from sundial.shared.models import Job
from sundial.shared.targets import Delivery
from tests.adapter.conftest import Engine, python_target

SECOND = 1000


class OverlapWatch:
    """A target whose first call ignores its limit (sleeps past it, as a python handler may) and
    which counts how many of its calls ran at once."""

    def __init__(self, first_call_seconds: float) -> None:
        self._first = first_call_seconds
        self._lock = threading.Lock()
        self.running = 0
        self.most_at_once = 0
        self.calls = 0

    def __call__(self, job: Job, delivery: Delivery, limit_seconds: float = 0.0) -> None:
        with self._lock:
            self.calls += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            first = self.calls == 1
        try:
            if first:
                time.sleep(self._first)
                raise RuntimeError("gave up late")
        finally:
            with self._lock:
                self.running -= 1


def create(engine: Engine, **fields: Any) -> str:
    view, created = engine.service.create(JobCreate.model_validate({"target": python_target(), **fields}))
    assert created
    return view.id


def test_job_whose_target_ignores_its_limit_without_a_deadline_retries_only_after_the_call_ended(
    engine: Engine,
) -> None:
    watch = OverlapWatch(first_call_seconds=2.5)
    engine.worker._deliver = watch
    job_id = create(engine, timeout_seconds=1, max_retries=2, backoff=[1])
    [message] = engine.receive()

    first = engine.worker.process(message)  # no deadline: nothing ends the call but itself

    assert first.outcome is Outcome.FAILED
    assert watch.running == 0  # the settle came after the call ended, not at its limit
    job = engine.store.get(job_id)
    assert job.last_run is not None and job.last_run.status == "timed_out"
    [retry] = engine.receive()
    engine.clock.set(max(engine.clock.now_ms(), retry.due_at))
    assert engine.worker.process(retry).outcome is Outcome.SUCCEEDED
    assert (watch.calls, watch.most_at_once) == (2, 1)


def test_the_longest_timeout_the_api_accepts_is_given_in_full_to_an_early_message(engine: Engine) -> None:
    """Held for its instant as long as an early message may be, in an invocation of the worker's full
    length, an attempt still gets every second of the longest timeout the API accepts."""
    run_at = engine.clock.now_ms() + 60 * SECOND
    view, _ = engine.service.create(
        JobCreate.model_validate(
            {
                "target": python_target(),
                "run_at": format_rfc3339(run_at),
                "timeout_seconds": LONGEST_TIMEOUT_SECONDS,
            }
        )
    )
    engine.clock.advance(60 - MAX_EARLY_WAIT_SECONDS)
    [message] = engine.receive()
    invocation_ends = engine.clock.now_ms() + WORKER_FUNCTION_TIMEOUT_SECONDS * SECOND

    result = engine.worker.process(message, invocation_ends)

    assert result.outcome is Outcome.SUCCEEDED, result
    assert engine.targets.limits == [LONGEST_TIMEOUT_SECONDS]
    assert engine.store.get(view.id).retry.timeout_seconds == LONGEST_TIMEOUT_SECONDS
