"""next_token on the emulator: the tokens the store issues page through everything, and any other
well-formed token (another query's, another job's, edited by hand) is refused before it is used."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from sundial.contract.vocabulary import RunStatus
from sundial.shared.errors import InvalidInput
from sundial.shared.models import Run, RunSummary
from sundial.shared.store import ListFilter
from tests.adapter.conftest import Engine
from tests.adapter.test_engine import create


def encode(key: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def decode(token: str) -> dict[str, Any]:
    key: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return key


def with_runs(engine: Engine, count: int) -> str:
    job_id = create(engine, schedule="rate(1 hour)")
    for n in range(count):
        summary = RunSummary(scheduled_at=1_800_000_000_000 + n, attempt=1, status=RunStatus.SUCCEEDED)
        assert engine.store.put_run(Run.of(job_id, summary))
    return job_id


def refused(call: Any, *args: Any) -> None:
    with pytest.raises(InvalidInput, match=r"^next_token is not one this API issued$") as caught:
        call(*args)
    assert caught.value.field == "next_token"


def test_issued_tokens_page_through_jobs_and_runs(engine: Engine) -> None:
    jobs = [create(engine, schedule="rate(1 hour)") for _ in range(3)]
    seen: list[str] = []
    token: str | None = None
    while True:
        page = engine.store.list_jobs(ListFilter(), 1, token)
        seen += [job.id for job in page.jobs]
        token = page.next_token
        if token is None:
            break
    assert sorted(seen) == sorted(jobs)

    job_id = with_runs(engine, 3)
    attempts: list[int] = []
    token = None
    while True:
        runs, token = engine.store.runs(job_id, 1, token)
        attempts += [run.scheduled_at for run in runs]
        if token is None:
            break
    assert len(attempts) == 3


def list_token(engine: Engine) -> dict[str, Any]:
    create(engine, schedule="rate(1 hour)")
    create(engine, schedule="rate(1 hour)")
    token = engine.store.list_jobs(ListFilter(), 1, None).next_token
    assert token is not None
    return decode(token)


def runs_token(engine: Engine, job_id: str) -> dict[str, Any]:
    token = engine.store.runs(job_id, 1, None)[1]
    assert token is not None
    return decode(token)


def test_list_tokens_of_another_shape_are_refused(engine: Engine) -> None:
    issued = list_token(engine)
    assert set(issued) == {"i", "at", "done", "n", "e"}
    some_shard, some_id = "JOBS#0", "01JD0000000000000000000000"
    assert encode(issued | {"at": {some_shard: some_id}})  # well formed: the edits below are what is wrong
    job_id = with_runs(engine, 2)
    forged = [
        runs_token(engine, job_id),
        {k: v for k, v in issued.items() if k != "at"},
        issued | {"extra": 1},
        issued | {"i": "by_status"},
        issued | {"at": {"OTHER#1": some_id}},
        issued | {"at": {some_shard: "x" * 2000}},
        issued | {"at": {some_shard: "\ud800"}},
        issued | {"at": {some_shard: 1}},
        issued | {"at": []},
        issued | {"done": ["JOBS#99"]},
        issued | {"done": "JOBS#1"},
        issued | {"n": -1},
        issued | {"n": True},
        issued | {"e": "no"},
        {},
    ]
    for key in forged:
        refused(engine.store.list_jobs, ListFilter(), 10, encode(key))
    # A token is the listing's own: another filter's listing refuses it.
    refused(engine.store.list_jobs, ListFilter(status="dead"), 10, encode(issued))


def test_runs_tokens_of_another_job_or_shape_are_refused(engine: Engine) -> None:
    mine = with_runs(engine, 2)
    theirs = with_runs(engine, 2)
    issued = runs_token(engine, mine)
    assert engine.store.runs(mine, 10, encode(issued))[0]  # the issued token still pages
    forged = [
        runs_token(engine, theirs),
        list_token(engine),
        issued | {"sk": {"S": "JOB"}},
        issued | {"extra": {"S": "x"}},
        issued | {"sk": {"N": "1"}},
        issued | {"sk": {"S": "RUN#" + "9" * 2000}},
        {"pk": issued["pk"]},
    ]
    for key in forged:
        refused(engine.store.runs, mine, 10, encode(key))


@pytest.mark.parametrize(
    "token",
    [
        "not-a-token",
        "é",
        encode([1, 2]),
        encode("a string"),
        encode({"pk": "JOB#x"}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        base64.urlsafe_b64encode(b"[" * 5000 + b"]" * 5000).decode(),
    ],
    ids=["text", "non-ascii", "list", "string", "flat", "not-utf8", "deeply-nested"],
)
def test_tokens_that_are_not_keys_are_refused(engine: Engine, token: str) -> None:
    refused(engine.store.list_jobs, ListFilter(), 10, token)
    refused(engine.store.runs, "01JD0000000000000000000000", 10, token)


def refuse_start_keys(dynamodb: Any, every_query: bool = False) -> None:
    """Makes DynamoDB answer each Query with a start key (or every Query) as it answers a start key
    it will not take."""
    refusal = {"Error": {"Code": "ValidationException", "Message": "The provided starting key is invalid"}}

    def answer(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if not every_query and b"ExclusiveStartKey" not in params["body"]:  # the request as sent
            return None
        return AWSResponse("https://dynamodb.example", 400, {}, None), refusal

    dynamodb.meta.events.register("before-call.dynamodb.Query", answer)


def test_a_start_key_dynamodb_refuses_is_a_bad_token_and_nothing_else_is(
    engine: Engine, dynamodb: Any
) -> None:
    job_id = with_runs(engine, 2)
    issued_runs = engine.store.runs(job_id, 1, None)[1]
    issued_list = list_token(engine)
    refuse_start_keys(dynamodb)

    refused(engine.store.runs, job_id, 10, issued_runs)
    # Well formed, with a position: the listing offers DynamoDB a start key.
    positioned = issued_list | {"at": {"JOBS#0": "01JD0000000000000000000000"}, "done": []}
    refused(engine.store.list_jobs, ListFilter(), 10, encode(positioned))
    # Without a token the refusal is not the caller's: it stays the error it is.
    refuse_start_keys(dynamodb, every_query=True)
    with pytest.raises(ClientError):
        engine.store.runs(job_id, 10, None)
    with pytest.raises(ClientError):
        engine.store.list_jobs(ListFilter(), 10, None)
