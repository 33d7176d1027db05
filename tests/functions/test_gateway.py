"""The local API Gateway: HTTP in, REST proxy event to the handler, proxy response back to HTTP."""

from __future__ import annotations

import base64
import time
from typing import Any

from werkzeug.test import Client

from sundial.local_stack.gateway import Gateway

Seen = list[dict[str, Any]]


def gateway(answer: dict[str, Any]) -> tuple[Client, Seen]:
    seen: Seen = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        assert context.get_remaining_time_in_millis() > 0
        return answer

    return Client(Gateway(handler)), seen


def test_a_request_becomes_a_rest_proxy_event() -> None:
    client, seen = gateway({"statusCode": 200, "body": "{}"})

    client.post(
        "/jobs/abc/runs?limit=5&tag=a&tag=b",
        data='{"x": 1}',
        headers={"Content-Type": "application/json", "Idempotency-Key": "k"},
    )

    [event] = seen
    assert event["resource"] == "/{proxy+}"
    assert (event["httpMethod"], event["path"]) == ("POST", "/jobs/abc/runs")
    assert event["pathParameters"] == {"proxy": "jobs/abc/runs"}
    assert event["queryStringParameters"] == {"limit": "5", "tag": "b"}
    assert event["multiValueQueryStringParameters"] == {"limit": ["5"], "tag": ["a", "b"]}
    assert event["headers"]["Idempotency-Key"] == "k"
    assert event["multiValueHeaders"]["Content-Type"] == ["application/json"]
    assert (event["body"], event["isBase64Encoded"]) == ('{"x": 1}', False)
    context = event["requestContext"]
    assert (context["resourcePath"], context["httpMethod"], context["stage"]) == (
        "/{proxy+}",
        "POST",
        "local",
    )
    assert context["path"] == "/jobs/abc/runs"
    assert context["identity"]["sourceIp"]


def test_a_binary_body_is_base64_and_an_empty_one_null() -> None:
    client, seen = gateway({"statusCode": 204})

    client.post("/upload", data=b"\x89PNG\x00\xff", headers={"Content-Type": "image/png"})
    client.get("/health")

    assert (seen[0]["body"], seen[0]["isBase64Encoded"]) == (
        base64.b64encode(b"\x89PNG\x00\xff").decode(),
        True,
    )
    assert (seen[1]["body"], seen[1]["queryStringParameters"], seen[1]["httpMethod"]) == (None, None, "GET")


def test_the_proxy_response_becomes_http() -> None:
    client, _ = gateway(
        {
            "statusCode": 201,
            "headers": {"Content-Type": "application/json"},
            "multiValueHeaders": {"Location": ["/jobs/1"], "Set-Cookie": ["a=1", "b=2"]},
            "body": base64.b64encode(b'{"id": "1"}').decode(),
            "isBase64Encoded": True,
        }
    )

    response = client.post("/jobs", json={})

    assert response.status == "201 Created"
    assert response.headers["Location"] == "/jobs/1"
    assert response.headers.getlist("Set-Cookie") == ["a=1", "b=2"]
    assert response.get_data() == b'{"id": "1"}'


def test_a_handler_that_raises_is_a_502_like_api_gateway() -> None:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("boom")

    response = Client(Gateway(handler)).get("/health")

    assert response.status_code == 502
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.get_json()["message"] == "Internal server error"


def test_concurrent_requests_each_see_their_own_event() -> None:
    """The API router keeps the current event on a module-level object, so the gateway serves one
    request at a time, as one Lambda instance does."""
    from concurrent.futures import ThreadPoolExecutor

    current: dict[str, str] = {}  # like the router's module-level current event

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        current["path"] = event["path"]
        time.sleep(0.01)  # a concurrent request would overwrite it here
        return {"statusCode": 200, "body": current["path"]}

    client = Client(Gateway(handler))
    paths = [f"/jobs/{i}" for i in range(20)]
    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda p: client.get(p).get_data(as_text=True), paths))
    assert bodies == paths
