"""Retries: throttling and 5xx are retried with backoff where repeating the request is safe, a create
keeps its Idempotency-Key across them, and a change that may have been applied is not sent again."""

from __future__ import annotations

import json

import pytest

from sundial.client import (
    Conflict,
    InvalidInput,
    RetryPolicy,
    ServerError,
    SundialClient,
    Throttled,
    Unreachable,
)
from sundial.client.transport import Answer
from tests.client.conftest import NOOP
from tests.client.test_signing import JOB, JOB_ID
from tests.support.sigv4_stub import LOST_ANSWER, Reply, StubApi


def _client(stub: StubApi, waits: list[float], attempts: int = 4, timeout: float = 5) -> SundialClient:
    policy = RetryPolicy(attempts=attempts, base_seconds=0.5, cap_seconds=4)
    return SundialClient(stub.url, retries=policy, timeout=timeout, sleep=waits.append)


def test_a_create_is_retried_on_503_and_429_with_the_same_key_and_body() -> None:
    waits: list[float] = []
    with StubApi() as stub:
        stub.script(Reply(503, {"message": "busy"}), Reply(429, {"message": "slow down"}), Reply(201, JOB))
        job = _client(stub, waits).create_job({"name": "n", "target": NOOP})
    assert job.id == JOB_ID
    keys = [r.headers["idempotency-key"] for r in stub.received]
    assert len(keys) == 3 and len(set(keys)) == 1 and keys[0]
    assert len({r.body for r in stub.received}) == 1
    assert json.loads(stub.received[0].body) == {"name": "n", "target": NOOP}
    # Full jitter: each wait is within its exponential ceiling (0.5 s, then 1 s).
    assert len(waits) == 2 and 0 <= waits[0] <= 0.5 and 0 <= waits[1] <= 1.0


def test_a_create_whose_answer_was_lost_is_sent_again_with_its_key() -> None:
    waits: list[float] = []
    with StubApi() as stub:
        stub.script(LOST_ANSWER, Reply(200, JOB))
        assert _client(stub, waits).create_job({"target": NOOP}).id == JOB_ID
    first, second = stub.received
    assert first.headers["idempotency-key"] == second.headers["idempotency-key"]
    # Each create has a key of its own.
    with StubApi(default=Reply(201, JOB)) as stub:
        client = _client(stub, waits)
        client.create_job({"target": NOOP})
        client.create_job({"target": NOOP})
    assert stub.received[0].headers["idempotency-key"] != stub.received[1].headers["idempotency-key"]


def test_a_pause_whose_answer_was_lost_is_not_sent_again() -> None:
    waits: list[float] = []
    with StubApi() as stub:
        stub.script(LOST_ANSWER, Reply(200, JOB))
        with pytest.raises(Unreachable) as lost:
            _client(stub, waits).pause_job(JOB_ID)
    assert lost.value.sent is True and lost.value.status is None
    assert len(stub.received) == 1 and waits == []


@pytest.mark.parametrize("call", ["pause_job", "resume_job", "trigger_job", "retry_job"])
def test_changes_that_are_not_safe_to_repeat_are_not_retried_on_5xx(call: str) -> None:
    waits: list[float] = []
    with StubApi() as stub:
        stub.script(Reply(502, {"message": "Internal server error"}), Reply(200, JOB))
        with pytest.raises(ServerError) as failed:
            getattr(_client(stub, waits), call)(JOB_ID)
    assert failed.value.status == 502 and len(stub.received) == 1


def test_a_patch_is_not_retried_on_5xx_but_is_on_429() -> None:
    waits: list[float] = []
    with StubApi() as stub:
        stub.script(Reply(500, {"message": "internal error"}))
        with pytest.raises(ServerError):
            _client(stub, waits).update_job(JOB_ID, {"priority": "high"})
        assert len(stub.received) == 1
        # A throttled request never reached the handler: any request may be sent again.
        stub.script(Reply(429, {"message": "Too Many Requests"}), Reply(200, JOB))
        _client(stub, waits).update_job(JOB_ID, {"priority": "high"})
    assert len(stub.received) == 3
    assert stub.received[2].json() == {"priority": "high"}


def test_reads_are_retried_on_5xx_and_lost_answers_until_the_attempts_run_out() -> None:
    waits: list[float] = []
    with StubApi() as stub:
        stub.script(Reply(504), LOST_ANSWER, Reply(200, JOB))
        assert _client(stub, waits).get_job(JOB_ID).id == JOB_ID
        assert len(stub.received) == 3
    with (
        StubApi(default=Reply(429, {"message": "Too Many Requests"})) as stub,
        pytest.raises(Throttled) as throttled,
    ):
        _client(stub, waits, attempts=3).get_job(JOB_ID)
    assert throttled.value.status == 429 and len(stub.received) == 3


def test_a_retry_after_header_sets_the_wait() -> None:
    waits: list[float] = []
    with StubApi() as stub:
        stub.script(Reply(429, headers={"Retry-After": "3"}), Reply(429, headers={"Retry-After": "60"}))
        stub.script(Reply(200, {"status": "ok"}))
        _client(stub, waits).health()
    assert waits == [3.0, 4.0]  # capped at cap_seconds


def test_a_refused_connection_is_retried_for_any_request() -> None:
    waits: list[float] = []
    calls: list[str] = []

    def refusing_then_answering(method: str, url: str, headers: object, body: object, t: float) -> Answer:
        calls.append(method)
        if len(calls) == 1:
            raise Unreachable("connection refused", sent=False)
        return Answer(200, {}, json.dumps(JOB).encode())

    client = SundialClient("http://127.0.0.1:9", transport=refusing_then_answering, sleep=waits.append)
    assert client.trigger_job(JOB_ID).id == JOB_ID
    assert calls == ["POST", "POST"] and len(waits) == 1


def test_a_slow_answer_times_out() -> None:
    waits: list[float] = []
    with StubApi() as stub:
        stub.script(Reply(200, JOB, delay_seconds=2))
        with pytest.raises(Unreachable, match="timed out") as slow:
            _client(stub, waits, timeout=0.3).trigger_job(JOB_ID)
    assert slow.value.sent is True and len(stub.received) == 1


def test_client_errors_are_not_retried() -> None:
    waits: list[float] = []
    with (
        StubApi(default=Reply(409, {"message": "job is running", "field": None})) as stub,
        pytest.raises(Conflict, match="job is running"),
    ):
        _client(stub, waits).get_job(JOB_ID)
    assert len(stub.received) == 1 and waits == []


def test_a_body_the_models_refuse_is_not_sent() -> None:
    waits: list[float] = []
    with StubApi() as stub:
        client = _client(stub, waits)
        with pytest.raises(InvalidInput) as bad_target:
            client.create_job({"target": {"type": "http", "method": "GET"}})
        with pytest.raises(InvalidInput) as bad_backoff:
            client.update_job(JOB_ID, {"backoff": [5, "soon"]})
    assert (bad_target.value.field, bad_target.value.status) == ("target.url", None)
    assert bad_backoff.value.field == "backoff[1]"
    assert stub.received == []


def test_a_url_that_is_not_http_is_refused_before_any_request() -> None:
    with pytest.raises(InvalidInput, match="not an http") as refused:
        SundialClient("127.0.0.1:8000")
    assert refused.value.field == "base_url"
