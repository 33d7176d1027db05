"""GET /jobs and GET /jobs/{id}/runs given a next_token this API did not issue: 400 naming next_token,
never a 500 from DynamoDB refusing the key."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.functions.conftest import Answer, Api

NOOP = {"type": "python", "handler": "noop"}
DAILY = {"schedule": "cron(0 9 * * ? *)", "timezone": "Europe/Berlin"}
OTHER_JOB = "01JD0000000000000000000000"


def token(key: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def s(value: Any) -> dict[str, Any]:
    return {"S": value}


def list_key(job_id: str) -> dict[str, Any]:
    return {"pk": s(f"JOB#{job_id}"), "sk": s("JOB"), "list_pk": s("JOBS"), "list_sk": s(job_id)}


def runs_key(job_id: str) -> dict[str, Any]:
    return {"pk": s(f"JOB#{job_id}"), "sk": s("RUN#1800000000000#001")}


def create(api: Api) -> str:
    answer = api("POST", "/jobs", {"target": NOOP, **DAILY})
    assert answer.status == 201, answer.body
    job_id: str = answer.body["id"]
    return job_id


# The API caps a token at 4096 characters: the forged ones here stay under it, to reach the store.


def assert_refused(answer: Answer) -> None:
    assert answer.status == 400, answer.body
    assert (
        answer.body.items()
        >= {"message": "next_token is not one this API issued", "field": "next_token"}.items()
    )


FORGED_LIST_KEYS = {
    "a-runs-key": runs_key(OTHER_JOB),
    "another-table": {"id": s(OTHER_JOB)},
    "another-list": list_key(OTHER_JOB) | {"list_pk": s("USERS")},
    "pk-of-another-job": list_key(OTHER_JOB) | {"pk": s("JOB#01JDZZZZZZZZZZZZZZZZZZZZZZ")},
    "extra-attribute": list_key(OTHER_JOB) | {"tenant": s("acme")},
    "number-value": list_key(OTHER_JOB) | {"list_sk": {"N": "1"}},
    "oversized-key": {
        "pk": s("JOB#" + "x" * 1100),
        "sk": s("JOB"),
        "list_pk": s("JOBS"),
        "list_sk": s("x" * 1100),
    },
    "empty": {},
    "an-old-release-s": list_key(OTHER_JOB),
}


@pytest.mark.parametrize("key", FORGED_LIST_KEYS.values(), ids=FORGED_LIST_KEYS.keys())
def test_a_foreign_list_token_is_a_400(api: Api, key: dict[str, Any]) -> None:
    create(api)
    assert_refused(api("GET", "/jobs", query={"next_token": token(key)}))


def test_a_list_token_of_the_issued_shape_is_accepted(api: Api) -> None:
    job_id = create(api)
    # Where each shard of the listing's index stands, and the total of its first page.
    issued = {"i": "by_created", "at": {"JOBS#0": job_id}, "done": ["JOBS#1"], "n": 1, "e": False}
    answer = api("GET", "/jobs", query={"next_token": token(issued)})
    assert answer.status == 200, answer.body
    assert answer.body["total"] == 1


FORGED_RUNS_KEYS = {
    "another-jobs-runs": runs_key(OTHER_JOB),
    "a-list-key": list_key(OTHER_JOB),
    "the-job-item": {"pk": s("JOB#{job}"), "sk": s("JOB")},
    "extra-attribute": {"pk": s("JOB#{job}"), "sk": s("RUN#1800000000000#001"), "x": s("y")},
    "oversized-sort-key": {"pk": s("JOB#{job}"), "sk": s("RUN#" + "9" * 1100)},
}


@pytest.mark.parametrize("key", FORGED_RUNS_KEYS.values(), ids=FORGED_RUNS_KEYS.keys())
def test_a_foreign_runs_token_is_a_400(api: Api, key: dict[str, Any]) -> None:
    job_id = create(api)
    filled = json.loads(json.dumps(key).replace("{job}", job_id))
    assert_refused(api("GET", f"/jobs/{job_id}/runs", query={"next_token": token(filled)}))


def test_a_runs_token_of_the_issued_shape_is_accepted(api: Api) -> None:
    job_id = create(api)
    answer = api("GET", f"/jobs/{job_id}/runs", query={"next_token": token(runs_key(job_id))})
    assert (answer.status, answer.body) == (200, {"runs": [], "next_token": None})


@pytest.mark.parametrize(
    "raw",
    [token([1]), token("JOBS"), base64.urlsafe_b64encode(b"[" * 1500 + b"]" * 1500).decode()],
    ids=["list", "string", "deeply-nested"],
)
def test_a_token_that_is_not_a_key_is_a_400(api: Api, raw: str) -> None:
    job_id = create(api)
    assert_refused(api("GET", "/jobs", query={"next_token": raw}))
    assert_refused(api("GET", f"/jobs/{job_id}/runs", query={"next_token": raw}))
