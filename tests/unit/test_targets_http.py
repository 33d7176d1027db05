"""http delivery against a real server on loopback: headers, body, answers, timeouts, TLS, the guard."""

from __future__ import annotations

import datetime as dt
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from sundial.shared.constants import ERROR_TEXT_LIMIT
from sundial.shared.targets import AwsClients, Delivery, HttpTarget, TargetError, TargetTimedOut, deliver
from sundial.shared.targets.http_delivery import deliver_http, request_headers

DELIVERY = Delivery(
    job_id="01JD0000000000000000000000",
    scheduled_at="2026-12-01T09:00:00Z",
    attempt=2,
    idempotency_key="01JD0000000000000000000000#1795942800000",
    payload={"report": "daily", "n": 1},
)

# How long /slow and /trickle take to answer: far beyond every limit the tests set.
SLOW_SECONDS = 8.0


class _Recorder(BaseHTTPRequestHandler):
    """Answers by path; records every request it reads on the server."""

    server: _Server

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append(
            {"method": self.command, "path": self.path, "headers": self.headers, "body": body}
        )
        route = self.path.split("?", 1)[0]
        if route.startswith("/status/"):
            self._answer(int(route.rsplit("/", 1)[1]), b"downstream unavailable " + b"x" * 5000)
        elif route == "/redirect":
            self._answer(302, b"", {"Location": "https://elsewhere.example/landing"})
        elif route == "/slow":
            time.sleep(SLOW_SECONDS)
            self._answer(200, b"late")
        elif route == "/trickle":
            self._trickle(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"z" * int(SLOW_SECONDS / 0.02) + b"\r\n\r\n")
        else:
            self._answer(200, b"fine")

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self, data: bytes) -> None:
        # Each byte comes well within any per-read timeout; only a bound on the whole exchange ends it.
        try:
            for byte in data:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.02)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that give up (timeouts, refused certificates) leave broken pipes behind: expected here.
        pass


def _serve(tls: ssl.SSLContext | None = None) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _Recorder)
    server.requests = []
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    yield from _serve()


def url(server: _Server, path: str, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{server.server_address[1]}{path}"


class NoAws:
    def client(self, service: str, timeout_seconds: float) -> Any:
        raise AssertionError(f"an http delivery asked for an AWS {service} client")


def test_post_carries_payload_user_headers_and_sundial_headers(server: _Server) -> None:
    target = HttpTarget(
        type="http", url=url(server, "/hook?token=abc"), headers={"Authorization": "Bearer t"}
    )
    clients: AwsClients = NoAws()

    deliver(target, DELIVERY, timeout_seconds=5, clients=clients, allow_private=True)

    [request] = server.requests
    assert (request["method"], request["path"]) == ("POST", "/hook?token=abc")
    assert json.loads(request["body"]) == {"report": "daily", "n": 1}
    headers = request["headers"]
    assert headers["Idempotency-Key"] == "01JD0000000000000000000000#1795942800000"
    assert headers["Sundial-Job-Id"] == "01JD0000000000000000000000"
    assert headers["Sundial-Scheduled-At"] == "2026-12-01T09:00:00Z"
    assert headers["Sundial-Attempt"] == "2"
    assert headers["Authorization"] == "Bearer t"
    assert headers["Content-Type"] == "application/json"
    assert headers["Host"] == f"127.0.0.1:{server.server_address[1]}"


def test_sundial_headers_win_over_user_headers_of_the_same_name() -> None:
    target = HttpTarget.model_construct(
        type="http",
        url="https://x.example/",
        method="POST",
        headers={"idempotency-key": "forged", "X-A": "1"},
    )
    headers = request_headers(target, DELIVERY, has_body=True)
    assert [v for k, v in headers.items() if k.lower() == "idempotency-key"] == [DELIVERY.idempotency_key]
    assert headers["X-A"] == "1"
    assert "Content-Type" not in request_headers(target, DELIVERY, has_body=False)


def test_get_sends_no_body(server: _Server) -> None:
    deliver_http(
        HttpTarget(type="http", url=url(server, "/hook"), method="GET"),
        DELIVERY,
        timeout_seconds=5,
        allow_private=True,
    )
    [request] = server.requests
    assert (request["method"], request["body"]) == ("GET", b"")
    assert "Content-Type" not in request["headers"]
    assert request["headers"]["Sundial-Attempt"] == "2"


@pytest.mark.parametrize("status", [400, 404, 500, 503])
def test_a_non_2xx_answer_fails_with_status_url_and_the_start_of_the_body(
    server: _Server, status: int
) -> None:
    target = HttpTarget(type="http", url=url(server, f"/status/{status}?secret=s3"))
    with pytest.raises(TargetError) as caught:
        deliver_http(target, DELIVERY, timeout_seconds=5, allow_private=True)
    reason = str(caught.value)
    assert reason.startswith(f"HTTP {status} from {url(server, f'/status/{status}')}: downstream unavailable")
    assert "secret" not in reason  # the query may hold credentials; the history is shown to users
    assert len(reason) <= ERROR_TEXT_LIMIT


def test_redirects_are_refused_not_followed(server: _Server) -> None:
    with pytest.raises(
        TargetError,
        match=r"HTTP 302 from .* redirects to https://elsewhere.example/landing: redirects are not followed",
    ):
        deliver_http(
            HttpTarget(type="http", url=url(server, "/redirect")),
            DELIVERY,
            timeout_seconds=5,
            allow_private=True,
        )
    assert len(server.requests) == 1


@pytest.mark.parametrize("path", ["/slow", "/trickle"])
def test_the_whole_exchange_is_bounded_by_the_timeout(server: _Server, path: str) -> None:
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"^timed out after 0.4 s$"):
        deliver_http(
            HttpTarget(type="http", url=url(server, path)), DELIVERY, timeout_seconds=0.4, allow_private=True
        )
    # The upper bound tells an exchange cut at its limit from one left to run (SLOW_SECONDS), with
    # room for a loaded machine; the limit itself is the match above.
    assert 0.35 < time.monotonic() - started < SLOW_SECONDS / 2


def test_loopback_is_refused_outside_the_local_stack(server: _Server) -> None:
    with pytest.raises(TargetError, match=r"connection to 127\.0\.0\.1 refused: loopback address"):
        deliver_http(
            HttpTarget(type="http", url=url(server, "/hook")),
            DELIVERY,
            timeout_seconds=5,
            allow_private=False,
        )
    assert server.requests == []


def counting_resolver(answers: dict[str, Sequence[str]]) -> tuple[list[str], Any]:
    asked: list[str] = []

    def resolve(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        return answers[host]

    return asked, resolve


def test_the_checked_address_is_the_one_dialled(server: _Server) -> None:
    # One lookup, then a connection to its answer: the name is never resolved a second time.
    asked, resolve = counting_resolver({"hooks.test": ["127.0.0.1"]})
    target = HttpTarget(type="http", url=url(server, "/hook", host="hooks.test"))
    deliver_http(target, DELIVERY, timeout_seconds=5, allow_private=True, resolver=resolve)
    assert asked == ["hooks.test"]
    assert server.requests[0]["headers"]["Host"] == f"hooks.test:{server.server_address[1]}"


def test_a_name_with_any_link_local_answer_is_refused_even_in_the_local_stack(server: _Server) -> None:
    _, resolve = counting_resolver({"hooks.test": ["127.0.0.1", "169.254.169.254"]})
    target = HttpTarget(type="http", url=url(server, "/hook", host="hooks.test"))
    with pytest.raises(TargetError, match=r"hooks\.test \(169\.254\.169\.254\) refused: link-local address"):
        deliver_http(target, DELIVERY, timeout_seconds=5, allow_private=True, resolver=resolve)
    assert server.requests == []


def test_a_refused_connection_says_so() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    target = HttpTarget(type="http", url=f"http://127.0.0.1:{port}/hook")
    with pytest.raises(TargetError, match=rf"^connection to 127\.0\.0\.1:{port} refused$"):
        deliver_http(target, DELIVERY, timeout_seconds=5, allow_private=True)


# --- TLS ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hooks.test")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("hooks.test")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return folder / "cert.pem", folder / "key.pem"


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[tuple[_Server, list[str | None]]]:
    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    context.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment,func-returns-value]
    for server in _serve(context):
        yield server, names


def test_https_checks_the_certificate_against_the_name_in_the_url(
    tls_server: tuple[_Server, list[str | None]], certificate: tuple[Path, Path]
) -> None:
    server, names = tls_server
    trusting = ssl.create_default_context(cafile=str(certificate[0]))
    _, resolve = counting_resolver({"hooks.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    port = server.server_address[1]

    deliver_http(
        HttpTarget(type="http", url=f"https://hooks.test:{port}/hook"),
        DELIVERY,
        timeout_seconds=5,
        allow_private=True,
        resolver=resolve,
        tls_context=trusting,
    )
    assert names == ["hooks.test"]  # SNI carries the original name, not the dialled address
    assert server.requests[0]["headers"]["Idempotency-Key"] == DELIVERY.idempotency_key

    with pytest.raises(TargetError, match=r"TLS certificate of other\.test not accepted: Hostname mismatch"):
        deliver_http(
            HttpTarget(type="http", url=f"https://other.test:{port}/hook"),
            DELIVERY,
            timeout_seconds=5,
            allow_private=True,
            resolver=resolve,
            tls_context=trusting,
        )
    assert len(server.requests) == 1


@pytest.mark.parametrize("path", ["/slow", "/trickle"])
def test_an_exchange_over_its_limit_is_told_apart_as_timed_out(server: _Server, path: str) -> None:
    with pytest.raises(TargetTimedOut, match=r"^timed out after 0.3 s$"):
        deliver(
            HttpTarget(type="http", url=url(server, path)),
            DELIVERY,
            timeout_seconds=0.3,
            clients=NoAws(),
            allow_private=True,
        )


def test_a_refused_answer_is_not_a_timeout(server: _Server) -> None:
    with pytest.raises(TargetError) as caught:
        deliver_http(
            HttpTarget(type="http", url=url(server, "/status/503")),
            DELIVERY,
            timeout_seconds=5,
            allow_private=True,
        )
    assert not isinstance(caught.value, TargetTimedOut)
