"""The local API guards itself as the console's forwarder does: only its own Host, no change sent from
another site, preflights for its own origins; and the forwarder sends only normalised paths."""

from __future__ import annotations

import socket
import threading
import urllib.parse
from typing import Any

import pytest
from werkzeug.serving import make_server
from werkzeug.test import Client

from sundial.console import server as console_server
from sundial.console.guard import CONSOLE_HEADER
from sundial.console.server import ConsoleProxy, Target, forwarded_path
from sundial.functions.api import handler as api_handler
from sundial.local_stack.gateway import ALLOWED_HOSTS_ENV, Gateway
from sundial.local_stack.resources import Resources

BASE = "http://127.0.0.1:8000"
NOOP = {"type": "python", "handler": "noop"}
LATER = {"target": NOOP, "schedule": "rate(1 hour)", "start_at": "2099-01-01T00:00:00Z"}


@pytest.fixture
def local_api(env: Resources) -> Client:
    """The local stack's gateway in front of the api handler, as if listening on 127.0.0.1:8000."""
    return Client(Gateway(api_handler))


def create(client: Client) -> str:
    answer = client.post("/jobs", json=LATER, base_url=BASE)
    assert answer.status_code == 201, answer.get_json()
    return str(answer.get_json()["id"])


@pytest.mark.parametrize("host", ["attacker.example:8000", "attacker.example", "127.0.0.1:9999", "localhost"])
def test_a_host_not_its_own_is_refused(local_api: Client, stored: Any, host: str) -> None:
    created = local_api.post("/jobs", json=LATER, base_url=BASE, headers={"Host": host})
    read = local_api.get("/jobs", base_url=BASE, headers={"Host": host})
    page = local_api.get("/console/", base_url=BASE, headers={"Host": host})

    assert (created.status_code, read.status_code, page.status_code) == (421, 421, 421)
    assert created.get_json()["field"] == "Host"
    assert stored() == []


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST:8000"])
def test_its_own_hosts_are_served(local_api: Client, host: str) -> None:
    assert local_api.get("/jobs", base_url=BASE, headers={"Host": host}).status_code == 200


def test_a_configured_host_is_served(env: Resources, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOWED_HOSTS_ENV, "sundial.internal:8443, other:1")
    client = Client(Gateway(api_handler))

    assert client.get("/jobs", base_url=BASE, headers={"Host": "sundial.internal:8443"}).status_code == 200
    assert client.get("/jobs", base_url=BASE, headers={"Host": "sundial.internal:8000"}).status_code == 421


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Origin": "https://evil.example"}, id="foreign-origin"),
        pytest.param({"Origin": "null"}, id="opaque-origin"),
        pytest.param({"Origin": "http://127.0.0.1:9999"}, id="another-port"),
        pytest.param(
            {"Origin": "https://evil.example", CONSOLE_HEADER: "1"}, id="foreign-origin-with-header"
        ),
        pytest.param({"Sec-Fetch-Site": "cross-site"}, id="cross-site-without-origin"),
    ],
)
def test_a_change_sent_from_another_site_is_refused(
    local_api: Client, stored: Any, headers: dict[str, str]
) -> None:
    job_id = create(local_api)
    before = stored()

    triggered = local_api.post(f"/jobs/{job_id}/trigger", base_url=BASE, headers=headers)
    cancelled = local_api.delete(f"/jobs/{job_id}", base_url=BASE, headers=headers)

    assert (triggered.status_code, cancelled.status_code) == (403, 403)
    assert triggered.get_json()["field"] == "Origin"
    assert "Access-Control-Allow-Origin" not in triggered.headers
    assert stored() == before
    assert local_api.get(f"/jobs/{job_id}", base_url=BASE).get_json()["status"] == "pending"


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="a-program"),
        pytest.param({"Origin": BASE}, id="its-own-origin"),
        pytest.param({"Origin": "http://localhost:8000", "Sec-Fetch-Site": "same-origin"}, id="own-by-name"),
        pytest.param({CONSOLE_HEADER: "1", "Sec-Fetch-Site": "same-site"}, id="the-console-page"),
    ],
)
def test_a_change_from_its_own_pages_or_a_program_is_served(
    local_api: Client, headers: dict[str, str]
) -> None:
    job_id = create(local_api)

    answer = local_api.post(f"/jobs/{job_id}/trigger", base_url=BASE, headers=headers)

    assert answer.status_code == 200, answer.get_json()
    assert answer.headers.get("Access-Control-Allow-Origin") == headers.get("Origin")


def test_a_preflight_is_answered_for_its_own_origin_only(local_api: Client) -> None:
    asked = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": CONSOLE_HEADER}

    own = local_api.options("/jobs", base_url=BASE, headers={"Origin": "http://localhost:8000", **asked})
    foreign = local_api.options("/jobs", base_url=BASE, headers={"Origin": "https://evil.example", **asked})

    assert own.status_code == 204
    assert own.headers["Access-Control-Allow-Origin"] == "http://localhost:8000"
    assert "POST" in own.headers["Access-Control-Allow-Methods"]
    assert CONSOLE_HEADER in own.headers["Access-Control-Allow-Headers"]
    assert own.headers["Vary"] == "Origin"
    assert foreign.status_code == 403
    assert "Access-Control-Allow-Origin" not in foreign.headers


def test_over_http_a_foreign_host_and_a_cross_site_change_are_refused(env: Resources, stored: Any) -> None:
    server = make_server("127.0.0.1", 0, Gateway(api_handler), threaded=True)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    body = b'{"target": {"type": "python", "handler": "noop"}}'
    try:
        rebound = _raw(port, f"POST /jobs HTTP/1.1\r\nHost: attacker.example:{port}\r\n", body)
        cross_site = _raw(
            port, f"POST /jobs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: https://evil.example\r\n", body
        )
        listed = _raw(port, f"GET /jobs HTTP/1.1\r\nHost: localhost:{port}\r\n", b"")
    finally:
        server.shutdown()
        server.server_close()

    assert rebound.startswith(b"HTTP/1.1 421")
    assert cross_site.startswith(b"HTTP/1.1 403")
    assert listed.startswith(b"HTTP/1.1 200")
    assert stored() == []


# --- the console's forwarder -------------------------------------------------------------------


@pytest.fixture
def forwarded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs the forwarder sends to, each answered 200 without a network."""
    sent: list[str] = []

    def send(method: str, url: str, headers: dict[str, str], body: bytes | None) -> Any:
        sent.append(url)
        return 200, [("Content-Type", "application/json")], b"{}"

    monkeypatch.setattr(console_server, "_send", send)
    return sent


def proxy() -> Client:
    return Client(ConsoleProxy(Target("https://api.example/v1", None), ["127.0.0.1:8001"]))


@pytest.mark.parametrize(
    "path",
    [
        "/api/..%2F..%2Fhealth",
        "/api/../../health",
        "/api/jobs/%2E%2E/%2e%2e/health",
        "/api/jobs/./x",
        "/api/jobs/%00",
        "/api/jobs/%0d%0aX-Injected:%201",
        "/api/jobs/%7f",
    ],
)
def test_the_forwarder_refuses_dot_segments_and_control_characters(forwarded: list[str], path: str) -> None:
    answer = proxy().get(path, base_url="http://127.0.0.1:8001", headers={CONSOLE_HEADER: "1"})

    assert answer.status_code == 400
    assert forwarded == []


@pytest.mark.parametrize(
    ("path", "sent"),
    [
        ("/api/jobs", "/jobs"),
        ("/api//jobs//x", "/jobs/x"),
        ("/api/jobs/a%20b", "/jobs/a%20b"),
        ("/api/jobs/a%3Fb", "/jobs/a%3Fb"),
        ("/api/jobs/..x", "/jobs/..x"),
        ("/api", "/"),
    ],
)
def test_the_forwarder_sends_the_normalised_path(forwarded: list[str], path: str, sent: str) -> None:
    answer = proxy().get(path, base_url="http://127.0.0.1:8001", headers={CONSOLE_HEADER: "1"})

    assert answer.status_code == 200
    assert forwarded == [f"https://api.example/v1{sent}"]
    assert forwarded_path(urllib.parse.unquote(sent)) == sent  # normalised once for all


def test_over_http_the_forwarder_refuses_an_encoded_dot_segment_and_a_control_character(
    forwarded: list[str],
) -> None:
    server = console_server.build_server(Target("https://api.example/v1", None), port=0)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    headers = f"Host: 127.0.0.1:{port}\r\n{CONSOLE_HEADER}: 1\r\n"
    try:
        dotted = _raw(port, f"GET /api/..%2F..%2Fhealth HTTP/1.1\r\n{headers}", b"")
        control = _raw(port, f"GET /api/jobs/\x01 HTTP/1.1\r\n{headers}", b"")
    finally:
        server.shutdown()
        server.server_close()

    assert dotted.split(b"\r\n")[0].split(b" ")[1] == b"400"
    assert control.split(b"\r\n")[0].split(b" ")[1] == b"400"
    assert forwarded == []


def _raw(port: int, head: str, body: bytes) -> bytes:
    """One request sent byte for byte as written (a client library would refuse or mend some)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        request = head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        connection.sendall(request.encode("latin-1") + body)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)
