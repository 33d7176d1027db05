"""A user action that lands right after an attempt's settle, before the worker has sent what follows,
written its history row and sent the alert: the attempt keeps its history, and a cancelled job
raises no alert."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from sundial.contract.jobs import JobCreate
from sundial.contract.vocabulary import JobStatus
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.worker import Outcome
from tests.adapter.conftest import Engine, python_target
from tests.adapter.lost_answers import LostAnswers

SECOND = 1000


def create(engine: Engine, **fields: Any) -> str:
    view, created = engine.service.create(JobCreate.model_validate({"target": python_target(), **fields}))
    assert created
    return view.id


def once_after(engine: Engine, event: str, action: Callable[[], Any]) -> list[str]:
    """Runs `action` once, right after the next DynamoDB call named by `event` (a botocore event)."""
    done: list[str] = []

    def hook(**_: Any) -> None:
        if not done:
            done.append(event)
            action()

    engine.store._client.meta.events.register(event, hook)
    return done


def before_repeat(engine: Engine, operation: str, action: Callable[[], Any]) -> list[str]:
    """Runs `action` once, before the second send of `operation` (the SDK's retry of the first).
    Registered for every DynamoDB send, after LostAnswers, so that it sees only what that lets by."""
    sends: list[str] = []

    def hook(request: Any, **_: Any) -> None:
        if operation.encode() in request.headers.get("X-Amz-Target", b""):
            sends.append(operation)
            if len(sends) == 2:
                action()

    engine.store._client.meta.events.register("before-send.dynamodb", hook)
    return sends


def fail_until_last_attempt(engine: Engine, job_id: str) -> JobMessage:
    """Runs the attempts before the last one (each fails) and returns the last one's message."""
    engine.targets.failures[job_id] = 99
    for _ in range(2):
        [message] = engine.receive()
        engine.clock.set(max(engine.clock.now_ms(), message.due_at))
        assert engine.worker.process(message).outcome is Outcome.FAILED
    [message] = engine.receive()
    engine.clock.set(max(engine.clock.now_ms(), message.due_at))
    return message


def buffer_job(engine: Engine) -> str:
    return create(engine, schedule="rate(5 seconds)", overlap_policy="buffer", max_retries=2, backoff=[5])


def assert_cancelled_with_every_attempt_and_no_alert(engine: Engine, job_id: str) -> None:
    job = engine.store.get(job_id)
    assert job.status is JobStatus.CANCELLED
    runs, _ = engine.store.runs(job_id, 10, None)
    assert [(r.attempt, r.status) for r in runs] == [(3, "dead"), (2, "failed"), (1, "failed")]
    assert engine.dead_letters() == []
    engine.clock.advance(61)
    report = engine.scheduler.tick()
    assert (report.dead, report.alerts_sent, report.reclaimed) == (0, 0, 0)
    assert engine.dead_letters() == []
    assert not any(row.job_id == job_id for row in engine.index_rows())


def test_running_buffer_job_cancelled_right_after_its_last_retry_settled_keeps_history_and_raises_no_alert(
    engine: Engine,
) -> None:
    """The settle that ends the occurrence DEAD (its alert owed, the next buffered occurrence queued)
    is applied, then the cancel lands before the worker reads on: nothing that follows may depend
    on the job still being as the settle left it."""
    job_id = buffer_job(engine)
    message = fail_until_last_attempt(engine, job_id)
    settled = "after-call.dynamodb.TransactWriteItems"
    cancelled = once_after(engine, settled, lambda: engine.service.cancel(job_id))

    result = engine.worker.process(message)

    assert cancelled and result.outcome is Outcome.DEAD
    assert engine.targets.count(job_id) == 3
    assert_cancelled_with_every_attempt_and_no_alert(engine, job_id)


def test_running_buffer_job_cancelled_between_its_settle_and_the_lost_answers_retry_keeps_its_attempt(
    engine: Engine,
) -> None:
    """The settle is applied but its answer is lost; the cancel lands before the SDK's retry, which
    fails its condition and finds the cancel's write, not the settle's: the settle must still know
    it was applied (its attempt's last run is on the job), or the attempt loses its history row."""
    job_id = buffer_job(engine)
    message = fail_until_last_attempt(engine, job_id)
    lost = LostAnswers(engine.store._client)
    lost.lose("TransactWriteItems")
    sends = before_repeat(engine, "TransactWriteItems", lambda: engine.service.cancel(job_id))

    result = engine.worker.process(message)

    assert lost.lost == ["TransactWriteItems"] and len(sends) >= 2
    assert result.outcome is Outcome.DEAD
    assert_cancelled_with_every_attempt_and_no_alert(engine, job_id)


def test_dead_job_cancelled_while_its_alert_is_owed_raises_no_alert(engine: Engine) -> None:
    """The worker's dead-letter send fails, so the alert stays owed for the tick; the job is then
    cancelled (its retry, say, no longer wanted): the tick clears the debt without sending it."""
    job_id = create(engine, max_retries=0)
    engine.targets.failures[job_id] = 1
    refused: list[str] = []

    def refuse(**_: Any) -> None:
        refused.append("SendMessage")
        raise ClientError({"Error": {"Code": "InternalError", "Message": "refused"}}, "SendMessage")

    engine.sqs.meta.events.register("before-call.sqs.SendMessage", refuse)
    [result] = engine.run_all()
    engine.sqs.meta.events.unregister("before-call.sqs.SendMessage", refuse)
    assert result.outcome is Outcome.DEAD and refused

    engine.service.cancel(job_id)
    engine.clock.advance(61)
    report = engine.scheduler.tick()

    assert (report.dead, report.alerts_sent) == (0, 0)
    assert engine.dead_letters() == []
    assert not any(row.job_id == job_id for row in engine.index_rows())  # the debt is cleared
