"""The API handler driven with the events an HTTP API sends under `sundial:api=http`: payload format
1.0, whose shape AWS documents ("Working with AWS Lambda proxy integrations for HTTP APIs"). It is
the REST proxy event's, but the header names come lower-cased, `resource` is the route's path, and
the `$default` stage puts no stage name in any path."""

from __future__ import annotations

import json
from typing import Any

from sundial.local_stack.resources import Resources
from tests.functions.conftest import Answer, invoke_api

API_ID = "a1b2c3d4e5"
HOST = f"{API_ID}.execute-api.eu-west-1.amazonaws.com"
NOOP = {"type": "python", "handler": "noop"}
# What an IAM-authorised request's identity carries (a role's session, as the CLI signs with).
CALLER = "AROAEXAMPLEID:ops"
USER_ARN = "arn:aws:sts::123456789012:assumed-role/ops/ops"


def http_api_event(
    method: str,
    route: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    path_parameters: dict[str, str] | None = None,
    raw_body: str | None = None,
) -> dict[str, Any]:
    """One request as the `$default` stage of an HTTP API hands it to a 1.0 integration: `route` is
    the matched route's path ("/jobs/{id}"), `path` the request's."""
    text = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
    sent = {
        "accept": "application/json",
        "content-type": "application/json",
        "host": HOST,
        "user-agent": "python-requests/2.32.3",
        "x-amz-date": "20261201T085959Z",
        "x-amzn-trace-id": "Root=1-674c1f3f-3c6e2b1d5a9f0e7b4c8d2a10",
        "x-forwarded-for": "198.51.100.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    } | {name.lower(): value for name, value in (headers or {}).items()}
    if text is not None:
        sent["content-length"] = str(len(text.encode()))
    return {
        "version": "1.0",
        "resource": route,
        "path": path,
        "httpMethod": method,
        "headers": sent,
        "multiValueHeaders": {name: [value] for name, value in sent.items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": API_ID,
            "authorizer": {"claims": None, "scopes": None},
            "domainName": HOST,
            "domainPrefix": API_ID,
            "extendedRequestId": "CNd1aF3XDoEFaBw=",
            "httpMethod": method,
            "identity": {
                "accessKey": "ASIAEXAMPLEKEY",
                "accountId": "123456789012",
                "caller": CALLER,
                "cognitoAuthenticationProvider": None,
                "cognitoAuthenticationType": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "principalOrgId": None,
                "sourceIp": "198.51.100.7",
                "user": CALLER,
                "userAgent": "python-requests/2.32.3",
                "userArn": USER_ARN,
            },
            "path": path,
            "protocol": "HTTP/1.1",
            "requestId": "CNd1aF3XDoEFaBw=",
            "requestTime": "01/Dec/2026:08:59:59 +0000",
            "requestTimeEpoch": 1796115599000,
            "resourceId": None,
            "resourcePath": route,
            "stage": "$default",
        },
        "pathParameters": path_parameters,
        "stageVariables": None,
        "body": text,
        "isBase64Encoded": False,
    }


def _problem(answer: Answer, status: int, field: str | None) -> None:
    assert answer.status == status, answer.body
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert (answer.body["status"], answer.body["field"]) == (status, field)
    assert answer.body["detail"] == answer.body["message"]


def test_health_answers(env: Resources) -> None:
    answer = invoke_api(http_api_event("GET", "/health", "/health"))

    assert (answer.status, answer.body) == (200, {"status": "ok"})


def test_a_bad_body_is_refused_by_the_function_as_problem_details(env: Resources, stored: Any) -> None:
    # The HTTP API checks no body: each of these reaches the function, which answers for it.
    def create(**kwargs: Any) -> Answer:
        return invoke_api(http_api_event("POST", "/jobs", "/jobs", **kwargs))

    _problem(create(raw_body='{"target": '), 400, "body")
    _problem(create(body=[{"target": NOOP}]), 400, "body")
    _problem(create(body={"target": NOOP, "priority": "urgent"}), 400, "priority")
    _problem(create(raw_body="target=noop", headers={"Content-Type": "text/plain"}), 415, "Content-Type")
    assert stored() == []


def test_a_create_answers_its_location_without_a_stage_and_its_key_replays_it(env: Resources) -> None:
    key = {"Idempotency-Key": "http-api-1"}
    first = invoke_api(http_api_event("POST", "/jobs", "/jobs", {"target": NOOP, "name": "a"}, headers=key))
    again = invoke_api(http_api_event("POST", "/jobs", "/jobs", {"target": NOOP, "name": "a"}, headers=key))
    other = invoke_api(http_api_event("POST", "/jobs", "/jobs", {"target": NOOP, "name": "b"}, headers=key))

    assert first.status == 201, first.body
    # The client joins the $default stage's URL and this path: no stage name between them.
    assert first.headers["Location"] == f"/jobs/{first.body['id']}"
    assert (again.status, again.body["id"]) == (200, first.body["id"])
    _problem(other, 409, "Idempotency-Key")


def test_path_parameters_queries_and_conditions_reach_their_routes(env: Resources) -> None:
    created = invoke_api(http_api_event("POST", "/jobs", "/jobs", {"target": NOOP, "name": "c"}))
    job_id = created.body["id"]
    one = {"id": job_id}

    read = invoke_api(http_api_event("GET", "/jobs/{id}", f"/jobs/{job_id}", path_parameters=one))
    listed = invoke_api(http_api_event("GET", "/jobs", "/jobs", query={"limit": "1"}))
    stale = invoke_api(
        http_api_event(
            "PATCH",
            "/jobs/{id}",
            f"/jobs/{job_id}",
            {"max_retries": 2},
            headers={"If-Match": '"7"'},
            path_parameters=one,
        )
    )
    changed = invoke_api(
        http_api_event(
            "PATCH",
            "/jobs/{id}",
            f"/jobs/{job_id}",
            {"max_retries": 2},
            headers={"If-Match": read.headers["ETag"]},
            path_parameters=one,
        )
    )

    assert (read.status, read.body["id"]) == (200, job_id)
    assert listed.status == 200 and [job["id"] for job in listed.body["jobs"]] == [job_id]
    _problem(stale, 412, "If-Match")
    assert (changed.status, changed.body["max_retries"]) == (200, 2)


def test_a_limit_key_with_slashes_reaches_the_greedy_route(env: Resources) -> None:
    key = {"key": "team/reports"}
    put = invoke_api(
        http_api_event(
            "PUT", "/limits/{key+}", "/limits/team/reports", {"max_concurrent": 2}, path_parameters=key
        )
    )
    read = invoke_api(http_api_event("GET", "/limits/{key+}", "/limits/team/reports", path_parameters=key))

    assert put.status == 200, put.body
    assert (read.status, read.body["key"], read.body["max_concurrent"]) == (200, "team/reports", 2)


def test_a_bulk_action_is_located_without_a_stage_and_names_its_iam_caller(env: Resources) -> None:
    body = {"action": "cancel", "ids": ["01JD0000000000000000000000"]}
    started = invoke_api(http_api_event("POST", "/jobs/actions", "/jobs/actions", body))

    assert started.status == 202, started.body
    assert started.headers["Location"] == f"/jobs/actions/{started.body['id']}"
    assert started.body["who"] == USER_ARN
