"""Exactly once when users act and deliveries run late: each case a reproduction of a way the promise
broke, on the real store, scheduler, worker and service over the emulator."""

from __future__ import annotations

import json
import time
from typing import Any

import botocore.endpoint
import pytest
import urllib3
from botocore.exceptions import ClientError

from sundial.contract.bounds import LONGEST_TIMEOUT_SECONDS, WORKER_FUNCTION_TIMEOUT_SECONDS
from sundial.contract.jobs import JobCreate, JobUpdate
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.heartbeat import Heartbeat
from sundial.shared.engine.worker import Outcome
from sundial.shared.errors import Conflict
from tests.adapter.conftest import Engine, python_target
from tests.chaos.faults import error_response
from tests.model.boundary import NoWait as _NoWait

SECOND = 1000
LEASE = (c.LEASE_CHUNK_SECONDS + c.LEASE_MARGIN_SECONDS) * SECOND
_http = urllib3.PoolManager()


def create(engine: Engine, **fields: Any) -> str:
    view, created = engine.service.create(JobCreate.model_validate({"target": python_target(), **fields}))
    assert created
    return view.id


def run_due(engine: Engine, rounds: int = 50) -> int:
    """Ticks and delivers until nothing is left that is due by now; returns the deliveries made.
    Messages not yet due wait for a later call, as SQS would hold them."""
    held: list[JobMessage] = engine.__dict__.setdefault("held", [])
    delivered = 0
    for _ in range(rounds):
        engine.scheduler.tick()
        held.extend(engine.receive())
        due = [m for m in held if m.due_at <= engine.clock.now_ms() + 1000]
        if not due:
            return delivered
        for message in due:
            held.remove(message)
            engine.worker.process(message)
            delivered += 1
    return delivered


def in_index(engine: Engine, job_id: str) -> bool:
    return any(row.job_id == job_id for row in engine.index_rows())


# 1. A cancel during a running attempt holds: the attempt finishes, the job is then cancelled.
def test_a_cancel_during_a_running_attempt_ends_the_job(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(10 seconds)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)
    engine.targets.during[job_id] = lambda: engine.service.cancel(job_id)

    [result] = engine.run_all()

    assert result.outcome is Outcome.SUCCEEDED
    job = engine.store.get(job_id)
    assert (job.status, job.token) == (JobStatus.CANCELLED, None)
    engine.clock.advance(60)
    assert run_due(engine) == 0
    assert engine.targets.count(job_id) == 1


# 2. A pause during a running attempt holds at once: no next occurrence while paused.
def test_a_pause_during_a_running_attempt_starts_no_next_occurrence(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(10 seconds)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)
    engine.targets.during[job_id] = lambda: engine.service.pause(job_id)

    engine.run_all()
    engine.clock.advance(120)
    run_due(engine)

    assert engine.targets.count(job_id) == 1
    job = engine.store.get(job_id)
    assert job.paused and not in_index(engine, job_id)


# 3. pause → trigger → resume during the triggered attempt: the schedule goes on afterwards.
def test_a_resume_during_a_triggered_run_of_a_paused_job_leaves_no_orphan(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(10 seconds)")
    engine.service.pause(job_id)
    engine.service.trigger(job_id)
    engine.targets.during[job_id] = lambda: engine.service.resume(job_id)

    engine.run_all()

    job = engine.store.get(job_id)
    assert not job.paused and job.due_at is not None and in_index(engine, job_id)
    engine.clock.advance(30)
    run_due(engine)
    assert engine.targets.count(job_id) >= 2


# 4. PATCH never re-runs an occurrence, never revives, never resets attempts.
def test_a_patch_of_a_finished_one_off_does_not_run_it_again(engine: Engine) -> None:
    job_id = create(engine)
    engine.run_all()

    view = engine.service.update(job_id, JobUpdate.model_validate({"priority": "high"}))

    assert view.status is JobStatus.SUCCEEDED
    engine.clock.advance(120)
    assert run_due(engine) == 0 and engine.targets.count(job_id) == 1
    with pytest.raises(Conflict, match="create a new job"):
        engine.service.update(job_id, JobUpdate.model_validate({"run_at": "2030-01-01T00:00:00Z"}))


def test_a_patch_of_a_cancelled_job_does_not_bring_it_back(engine: Engine) -> None:
    job_id = create(engine, run_at=_iso(engine.clock.now_ms() + 600 * SECOND))
    engine.service.cancel(job_id)

    view = engine.service.update(job_id, JobUpdate.model_validate({"priority": "high", "name": "x"}))

    assert view.status is JobStatus.CANCELLED
    engine.clock.advance(900)
    assert run_due(engine) == 0 and engine.targets.count(job_id) == 0
    with pytest.raises(Conflict):
        engine.service.update(job_id, JobUpdate.model_validate({"run_at": _iso(engine.clock.now_ms())}))


def test_a_patch_keeps_a_failed_jobs_attempts(engine: Engine) -> None:
    job_id = create(engine, max_retries=3, backoff=[600])
    engine.targets.failures[job_id] = 1
    engine.run_all()

    view = engine.service.update(job_id, JobUpdate.model_validate({"priority": "high"}))

    assert (view.status, view.attempt) == (JobStatus.FAILED, 1)


# 5. A delivery that arrives after its lease ran out runs once, even with a tick during its run.
def test_a_late_delivery_gets_a_fresh_lease_and_runs_once(engine: Engine) -> None:
    job_id = create(engine)
    [message] = engine.receive()
    engine.clock.advance(LEASE / SECOND + 20)  # a backlog: the lease ran out while it waited
    ticked: list[bool] = []

    def tick_right_after_the_fence(**_: Any) -> None:
        if not ticked:  # before any heartbeat could renew the lease
            ticked.append(True)
            engine.scheduler.tick()

    engine.store._client.meta.events.register("after-call.dynamodb.UpdateItem", tick_right_after_the_fence)
    result = engine.worker.process(message)
    engine.store._client.meta.events.unregister("after-call.dynamodb.UpdateItem", tick_right_after_the_fence)
    engine.clock.advance(1)
    run_due(engine)

    assert result.outcome is Outcome.SUCCEEDED
    assert engine.targets.count(job_id) == 1
    runs, _ = engine.store.runs(job_id, 10, None)
    assert [r.status for r in runs] == ["succeeded"]


# 6. A heartbeat lives through throttling; only another token holding the job ends it.
def test_a_throttled_heartbeat_keeps_beating(engine: Engine) -> None:
    job_id = create(engine, timeout_seconds=LONGEST_TIMEOUT_SECONDS)
    [message] = engine.receive()
    job = engine.store.fence(job_id, message.token, "w", engine.clock.now_ms())
    throttled = _throttle(engine.store._client, "UpdateItem", times=100)
    heartbeat = Heartbeat(engine.context, job, message.token, 3600)
    engine.clock.advance(60)

    heartbeat.beat()  # every SDK retry throttled: the beat fails, the heartbeat does not
    assert throttled and not heartbeat.lost
    throttled.extend(["done"] * 100)
    heartbeat.beat()
    assert (engine.store.get(job_id).lease_until or 0) > job.lease_until  # type: ignore[operator]


# 7. The tick's kill of an expired lease is conditional on the lease still being expired.
def test_a_heartbeat_between_the_ticks_read_and_its_kill_saves_the_attempt(engine: Engine) -> None:
    job_id = create(engine, max_retries=0)
    [message] = engine.receive()
    job = engine.store.fence(job_id, message.token, "slow-worker", engine.clock.now_ms())
    engine.clock.advance(LEASE / SECOND + 1)
    beat_once: list[bool] = []

    def heartbeat_after_the_ticks_read(**_: Any) -> None:
        if not beat_once:
            beat_once.append(True)
            now = engine.clock.now_ms()
            engine.store.heartbeat(job_id, message.token, now + LEASE, now)

    engine.store._client.meta.events.register("after-call.dynamodb.GetItem", heartbeat_after_the_ticks_read)
    engine.scheduler.tick()
    engine.store._client.meta.events.unregister("after-call.dynamodb.GetItem", heartbeat_after_the_ticks_read)

    assert engine.store.get(job_id).status is JobStatus.RUNNING
    assert engine.dead_letters() == []
    engine.worker.finish(job, message.token, job.started_at or 0, _ok())
    runs, _ = engine.store.runs(job_id, 10, None)
    assert [r.status for r in runs] == ["succeeded"]  # no `lost` row for a kept success


# 7b. A settle that meets throttles or faults past the SDK's retries is tried again, not left to the
# lease: the tick would otherwise record the attempt as lost and call the target a second time.
@pytest.mark.parametrize("write", ["UpdateItem", "PutItem"], ids=["the settle", "the history item"])
def test_a_settle_throttled_past_the_sdks_retries_is_kept(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    monkeypatch.setattr(botocore.endpoint, "time", _NoWait())
    job_id = create(engine, max_retries=0)
    [message] = engine.receive()
    engine.clock.set(message.due_at)
    faults = _WriteFaults(engine, lose_first_answer=False, operations={write, "GetItem"})
    engine.targets.during[job_id] = faults.arm

    result = engine.worker.process(message)

    assert f"throttled {write}" in faults.hits  # every SDK retry of the first try
    assert result.outcome is Outcome.SUCCEEDED
    assert engine.store.get(job_id).status is JobStatus.SUCCEEDED
    runs, _ = engine.store.runs(job_id, 10, None)
    assert [r.status for r in runs] == ["succeeded"]
    engine.clock.advance(LEASE / SECOND + 1)
    run_due(engine)
    assert engine.targets.count(job_id) == 1


def test_a_settle_applied_with_its_answer_lost_is_recognised_by_its_repeat(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write is applied but its answer is lost, its SDK retries and the read that would find it
    are throttled: the repeat, built again, must know its own write and go on to the history and
    the next occurrence's message, not take it for a stranger's and report the lease lost."""
    monkeypatch.setattr(botocore.endpoint, "time", _NoWait())
    job_id = create(engine, schedule="rate(30 seconds)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)
    [message] = engine.receive()
    faults = _WriteFaults(engine, lose_first_answer=True, operations={"UpdateItem", "GetItem"})
    engine.targets.during[job_id] = faults.arm

    result = engine.worker.process(message)

    assert faults.hits[0] == "lost UpdateItem" and "throttled GetItem" in faults.hits
    assert result.outcome is Outcome.SUCCEEDED
    runs, _ = engine.store.runs(job_id, 10, None)
    assert [r.status for r in runs] == ["succeeded"]
    job = engine.store.get(job_id)
    assert job.status is JobStatus.QUEUED  # the next occurrence, 30 s on, dispatched by the settle
    assert [m.token for m in engine.receive()] == [job.token]


@pytest.mark.parametrize("lose_first_answer", [False, True], ids=["throttled", "answer lost"])
def test_a_fence_that_meets_faults_past_the_sdks_retries_starts_the_job_once(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, lose_first_answer: bool
) -> None:
    """Given up, a throttled fence would leave the job to SQS's redelivery, minutes late; an applied
    fence taken for a duplicate's would leave it RUNNING with nobody running it, and the tick would
    count an attempt that never called the target."""
    monkeypatch.setattr(botocore.endpoint, "time", _NoWait())
    job_id = create(engine, max_retries=0)
    [message] = engine.receive()
    engine.clock.set(message.due_at)
    faults = _WriteFaults(engine, lose_first_answer, operations={"UpdateItem", "GetItem"})
    faults.arm()

    result = engine.worker.process(message)

    assert "throttled UpdateItem" in faults.hits and ("lost UpdateItem" in faults.hits) == lose_first_answer
    assert result.outcome is Outcome.SUCCEEDED
    assert engine.targets.count(job_id) == 1
    assert engine.store.get(job_id).attempt == 1


class _WriteFaults:
    """Once armed (here, or from inside the target call), the first UpdateItem may be applied and answered
    500; from then on every call of `operations` is throttled until the worker waits (its sleep
    moves the test clock)."""

    def __init__(self, engine: Engine, lose_first_answer: bool, operations: set[str]) -> None:
        self._clock = engine.clock
        self._lose = lose_first_answer
        self._operations = operations
        self._armed_at: int | None = None
        self.hits: list[str] = []
        engine.store._client.meta.events.register("before-send.dynamodb", self._before_send)

    def arm(self) -> None:
        self._armed_at = self._clock.now_ms()

    def _before_send(self, request: Any, **_: Any) -> Any:
        operation = request.headers.get("X-Amz-Target", b"").decode().rsplit(".", 1)[-1]
        if self._armed_at != self._clock.now_ms() or operation not in self._operations:
            return None
        if self._lose and not self.hits and operation == "UpdateItem":
            self.hits.append("lost UpdateItem")
            _http.request(request.method, request.url, body=request.body, headers=dict(request.headers))
            return error_response(request, "InternalServerError", status=500)
        self.hits.append(f"throttled {operation}")
        return error_response(request, "ThrottlingException")


# 8. Misfire policies after 10.5 minutes down: run_all runs each missed one, run_once the latest.
@pytest.mark.parametrize(("policy", "runs"), [("run_all", 11), ("run_once", 1), ("skip", 1)])
def test_misfires_after_downtime_follow_the_policy(engine: Engine, policy: str, runs: int) -> None:
    job_id = create(engine, schedule="rate(1 minute)", misfire_policy=policy)
    first = engine.store.get(job_id).due_at or 0
    engine.receive()  # the dispatch-on-create message is lost with the downtime
    engine.clock.set(first + 630 * SECOND)

    run_due(engine)

    scheduled = sorted({call.scheduled_at for call in engine.targets.calls if call.job_id == job_id})
    assert len(scheduled) == engine.targets.count(job_id) == runs
    assert scheduled[-1] == _iso(first + 600 * SECOND)


# 9. Time limits nest inside the worker's invocation; an attempt over its limit is timed_out, and
# a call that may still run holds back its retry until the invocation has ended.
def test_an_attempt_leaves_headroom_under_the_invocation(engine: Engine) -> None:
    job_id = create(engine, timeout_seconds=LONGEST_TIMEOUT_SECONDS)
    [message] = engine.receive()
    deadline = engine.clock.now_ms() + WORKER_FUNCTION_TIMEOUT_SECONDS * SECOND

    engine.worker.process(message, deadline)

    assert engine.targets.count(job_id) == 1
    assert 0 < engine.targets.limits[-1] <= WORKER_FUNCTION_TIMEOUT_SECONDS - 30


def test_an_attempt_over_its_limit_is_timed_out_and_not_retried_while_it_may_run(engine: Engine) -> None:
    job_id = create(engine, timeout_seconds=1, max_retries=2, backoff=[1])
    [message] = engine.receive()
    deadline = engine.clock.now_ms() + 600 * SECOND
    engine.targets.during[job_id] = lambda: time.sleep(2.5)  # ignores its limit, as a handler may

    result = engine.worker.process(message, deadline)

    assert result.outcome is Outcome.FAILED
    job = engine.store.get(job_id)
    assert job.last_run is not None and job.last_run.status == "timed_out"
    assert (job.due_at or 0) >= deadline


# 10. A dead job's alert is owed by the write that makes it dead, and the tick sends what is owed.
def test_a_dead_jobs_alert_survives_a_failed_send(engine: Engine) -> None:
    job_id = create(engine, max_retries=0)
    engine.targets.failures[job_id] = 1
    dead_queue = engine.resources.dead_letter_queue_url
    refused = _refuse_sends_to(engine.sqs, dead_queue, times=1)

    [result] = engine.run_all()

    assert result.outcome is Outcome.DEAD and refused
    assert engine.dead_letters() == []
    engine.clock.advance(61)
    report = engine.scheduler.tick()
    [letter] = engine.dead_letters()
    assert json.loads(letter)["job_id"] == job_id and report.dead == 1
    engine.clock.advance(61)
    assert engine.scheduler.tick().dead == 0  # sent once: the debt is cleared


# 11. A queued job waiting behind a backlog is not re-sent every lease period, and its first
# message still starts it.
def test_a_backlog_costs_a_few_resends_and_the_first_message_still_runs(engine: Engine) -> None:
    job_id = create(engine)
    [first] = engine.receive()
    resent = 0
    for _ in range(30):  # thirty minutes of ticks while the message waits in the queue
        engine.clock.advance(60)
        resent += engine.scheduler.tick().dispatched
        engine.receive()

    assert resent <= 5
    assert engine.worker.process(first).outcome is Outcome.SUCCEEDED
    assert engine.targets.count(job_id) == 1


def _ok() -> Any:
    from sundial.shared.engine.worker import AttemptEnd

    return AttemptEnd(None)


def _iso(epoch_ms: int) -> str:
    from sundial.shared.clock import format_rfc3339

    return format_rfc3339(epoch_ms)


def _throttle(client: Any, operation: str, times: int) -> list[str]:
    hits: list[str] = []

    def hook(request: Any, **_: Any) -> Any:
        if operation.encode() in request.headers.get("X-Amz-Target", b"") and len(hits) < times:
            hits.append(operation)
            return error_response(request, "ThrottlingException")
        return None

    client.meta.events.register("before-send.dynamodb", hook)
    return hits


def _refuse_sends_to(sqs: Any, queue_url: str, times: int) -> list[str]:
    refused: list[str] = []

    def hook(params: dict[str, Any], **_: Any) -> None:
        if params.get("QueueUrl") == queue_url and len(refused) < times:
            refused.append(queue_url)
            raise ClientError({"Error": {"Code": "InternalError", "Message": "refused"}}, "SendMessage")

    sqs.meta.events.register("provide-client-params.sqs.SendMessage", hook)
    return refused


# Trigger while an occurrence is queued or running: the extra run happens, never beside another.
def test_a_trigger_while_queued_runs_now_and_the_queued_occurrence_after_it(engine: Engine) -> None:
    run_at = engine.clock.now_ms() + 30 * SECOND
    job_id = create(engine, run_at=_iso(run_at))  # queued by its create, due in 30 s

    view = engine.service.trigger(job_id)

    assert view.status is JobStatus.QUEUED
    run_due(engine)
    engine.clock.set(run_at)
    run_due(engine)
    scheduled = [call.scheduled_at for call in engine.targets.calls]
    assert len(scheduled) == 2 and scheduled[-1] == _iso(run_at)
    assert engine.store.get(job_id).status is JobStatus.SUCCEEDED


def test_a_trigger_while_running_starts_the_extra_run_when_the_attempt_settles(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    first = engine.store.get(job_id).due_at or 0
    engine.clock.set(first - 10 * SECOND)
    engine.scheduler.tick()
    engine.clock.set(first)
    engine.targets.during[job_id] = lambda: engine.service.trigger(job_id)

    [result] = engine.run_all()
    assert result.outcome is Outcome.SUCCEEDED
    [extra] = engine.run_all()

    assert extra.outcome is Outcome.SUCCEEDED and engine.targets.count(job_id) == 2
    job = engine.store.get(job_id)
    assert (job.status, job.scheduled_at) == (JobStatus.PENDING, first + 3600 * SECOND)


# A pause after a trigger wins: the queued or requested extra run does not start while paused.
def test_a_pause_after_a_trigger_drops_the_queued_extra_run(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    engine.service.pause(job_id)
    engine.service.trigger(job_id)
    [extra] = engine.receive()

    view = engine.service.pause(job_id)

    assert view.paused and view.status is JobStatus.PENDING
    assert engine.worker.process(extra).outcome is Outcome.DROPPED
    assert engine.targets.count(job_id) == 0 and not in_index(engine, job_id)


def test_a_pause_after_a_trigger_during_a_run_cancels_the_extra_run(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(10 seconds)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)

    def trigger_then_pause() -> None:
        engine.service.trigger(job_id)
        engine.service.pause(job_id)

    engine.targets.during[job_id] = trigger_then_pause
    engine.run_all()
    engine.clock.advance(60)

    assert run_due(engine) == 0 and engine.targets.count(job_id) == 1


# Found by the model-based test (tests/model): each the shrunk sequence it printed.
def test_a_lost_attempt_of_a_paused_job_is_reclaimed_and_its_retry_held(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 minute)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)
    [message] = engine.receive()
    engine.store.fence(job_id, message.token, "vanished", engine.clock.now_ms())
    engine.service.pause(job_id)
    engine.clock.advance(LEASE / SECOND + 1)

    report = engine.scheduler.tick()

    job = engine.store.get(job_id)
    assert (report.reclaimed, report.errors, job.status, job.paused) == (1, 0, JobStatus.FAILED, True)
    assert not in_index(engine, job_id)
    assert [r.status for r in engine.store.runs(job_id, 10, None)[0]] == ["lost"]


def test_a_patch_may_not_move_an_occurrence_onto_one_that_ran(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 minute)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)
    engine.run_all()
    ran = engine.store.get(job_id).last_run
    assert ran is not None

    with pytest.raises(Conflict, match="already ran"):
        engine.service.update(job_id, JobUpdate.model_validate({"run_at": _iso(ran.scheduled_at)}))


def test_a_trigger_on_the_instant_an_occurrence_is_due_is_a_separate_occurrence(engine: Engine) -> None:
    run_at = engine.clock.now_ms() + 180 * SECOND
    job_id = create(engine, run_at=_iso(run_at))
    engine.clock.set(run_at)

    engine.service.trigger(job_id)
    run_due(engine)

    keys = [call.idempotency_key for call in engine.targets.calls]
    assert len(keys) == 2 and len(set(keys)) == 2
