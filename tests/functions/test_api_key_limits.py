"""/limits over the api handler: a key's limit is set, read, listed and deleted; bad input is a 400
naming the field and stores nothing; a job names its key on create, batch create and PATCH."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.conftest import Api

NOOP = {"type": "python", "handler": "noop"}


def limit_items(stored: Any) -> list[dict[str, Any]]:
    return [item for item in stored() if str(item["pk"]).startswith(("LIMIT", "LIMITS"))]


def test_a_limit_is_put_read_listed_and_deleted(api: Api, stored: Any) -> None:
    put = api("PUT", "/limits/payments-api", {"max_concurrent": 50, "per_second": 20})
    assert put.status == 200, put.body
    assert put.body["key"] == "payments-api" and put.body["max_concurrent"] == 50
    assert put.body["per_second"] == 20.0 and put.body["burst"] == 20  # ceil(per_second)
    assert (put.body["running"], put.body["waiting"], put.body["shards"]) == (0, 0, 1)

    assert api("GET", "/limits/payments-api").body == put.body
    api("PUT", "/limits/mail:eu/v1", {"per_second": 0.5})
    listed = api("GET", "/limits", query={"limit": "1"})
    assert [limit["key"] for limit in listed.body["limits"]] == ["mail:eu/v1"]
    rest = api("GET", "/limits", query={"limit": "1", "next_token": listed.body["next_token"]})
    assert [limit["key"] for limit in rest.body["limits"]] == ["payments-api"]
    assert api("GET", "/limits/mail:eu/v1").body["burst"] == 1

    assert api("DELETE", "/limits/payments-api").status == 200
    gone = api("GET", "/limits/payments-api")
    assert gone.status == 404 and gone.headers["Content-Type"] == "application/problem+json"
    assert api("DELETE", "/limits/payments-api").status == 404


def test_a_high_limit_is_spread_over_shards(api: Api) -> None:
    put = api("PUT", "/limits/hot", {"per_second": 5000})
    assert put.status == 200, put.body
    assert put.body["shards"] == 50


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/limits/k", {"max_concurrent": 0}, "max_concurrent"),
        ("/limits/k", {"max_concurrent": 10_001}, "max_concurrent"),
        ("/limits/k", {"max_concurrent": "5"}, "max_concurrent"),
        ("/limits/k", {"max_concurrent": True}, "max_concurrent"),
        ("/limits/k", {"per_second": -1}, "per_second"),
        ("/limits/k", {"per_second": 0}, "per_second"),
        ("/limits/k", {"per_second": "4"}, "per_second"),
        ("/limits/k", {"per_second": 4, "burst": 0}, "burst"),
        ("/limits/k", {"per_second": 4, "burst": 1.5}, "burst"),
        ("/limits/k", {"per_second": 4, "ceiling": 3}, "ceiling"),
        ("/limits/k", {}, "body"),
        ("/limits/k", {"burst": 3, "max_concurrent": 2}, "body"),
        ("/limits/has%20space", {"max_concurrent": 1}, "key"),
        (f"/limits/{'k' * 129}", {"max_concurrent": 1}, "key"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(
    api: Api, stored: Any, path: str, body: dict[str, Any], field: str
) -> None:
    answer = api("PUT", path, body)

    assert answer.status == 400, answer.body
    assert answer.body["field"] == field, answer.body
    assert answer.body["message"] and answer.body["detail"]
    assert limit_items(stored) == []


def test_a_job_names_its_key_on_create_batch_and_patch(api: Api, stored: Any) -> None:
    created = api("POST", "/jobs", {"target": NOOP, "schedule": "rate(1 hour)", "limit_key": "payments-api"})
    assert created.status == 201, created.body
    assert created.body["limit_key"] == "payments-api"
    assert created.body["waiting_on_limit_since"] is None
    job_id = created.body["id"]

    patched = api("PATCH", f"/jobs/{job_id}", {"limit_key": "mail"})
    assert patched.body["limit_key"] == "mail"
    cleared = api("PATCH", f"/jobs/{job_id}", {"limit_key": None})
    assert cleared.status == 200 and cleared.body["limit_key"] is None

    batch = api(
        "POST",
        "/jobs/batch",
        {"jobs": [{"target": NOOP, "limit_key": "k1"}, {"target": NOOP, "limit_key": "bad key"}]},
    )
    results = batch.body["results"]
    assert results[0]["status"] == 201 and results[0]["job"]["limit_key"] == "k1"
    assert results[1]["status"] == 400 and results[1]["error"]["field"] == "jobs[1].limit_key"


@pytest.mark.parametrize("key", ["has space", "", "k" * 129, "é", 7])
def test_a_bad_limit_key_on_a_job_is_refused_naming_it(api: Api, stored: Any, key: Any) -> None:
    answer = api("POST", "/jobs", {"target": NOOP, "limit_key": key})
    assert answer.status == 400, answer.body
    assert answer.body["field"] == "limit_key"
    assert stored() == []


# Non-ASCII keys as a fuzzer sends them, a space, a stray percent sign.
BAD_PATH_KEYS = ["\u00a19\u00f0\u00bc\u00b5\u00b8l\u00e7", "a b", "a%2Fb%", "\u043a\u043b\u044e\u0447"]


@pytest.mark.parametrize("key", BAD_PATH_KEYS)
def test_any_key_in_the_path_reaches_the_route_and_a_bad_one_is_a_400(
    api: Api, stored: Any, key: str
) -> None:
    for method in ("PUT", "GET", "DELETE"):
        answer = api(method, f"/limits/{key}", {"max_concurrent": 1} if method == "PUT" else None)
        assert answer.status == 400, (method, answer.body)
        assert answer.body["field"] == "key"
    assert limit_items(stored) == []
