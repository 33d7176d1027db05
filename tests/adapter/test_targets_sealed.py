"""Inline header values sealed with a key of the emulator's KMS, as the API stores them, and opened
only at delivery: the target still gets the plain value, a copy into another job opens nothing, and
an older item's plain value still goes out."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest

from shared.api.sealing import HeaderSealer
from shared.targets import (
    Delivery,
    DeliveryKeys,
    HeaderOpener,
    HttpTarget,
    Sealed,
    TargetError,
    deliver,
)
from shared.targets.models import masked

JOB = "01JD0000000000000000000000"
OTHER_JOB = "01JD0000000000000000000001"
TOKEN = "Bearer sealed-token-6e1f"


def _delivery(job_id: str = JOB) -> Delivery:
    return Delivery(
        job_id=job_id,
        scheduled_at="2026-12-01T09:00:00Z",
        attempt=1,
        idempotency_key=f"{job_id}:2026-12-01T09:00:00Z",
        payload={"n": 1},
    )


class _Echo(BaseHTTPRequestHandler):
    """Records each request's headers; /echo answers 500 with them, as a careless target might."""

    server: _Server

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.headers.append(dict(self.headers.items()))
        text = json.dumps(dict(self.headers.items())).encode() if self.path.startswith("/echo") else b""
        self.send_response(500 if text else 204)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    headers: list[dict[str, str]]


@pytest.fixture
def server() -> Iterator[_Server]:
    made = _Server(("127.0.0.1", 0), _Echo)
    made.headers = []
    thread = threading.Thread(target=made.serve_forever, daemon=True)
    thread.start()
    yield made
    made.shutdown()
    made.server_close()


@pytest.fixture
def opener(aws: dict[str, Any]) -> HeaderOpener:
    kms = boto3.client("kms", **aws)
    return HeaderOpener(lambda service: kms)


def _target(server: _Server, path: str = "/hook", **headers: Any) -> HttpTarget:
    url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    return HttpTarget(type="http", url=url, headers=headers)


def _sealed(sealer: HeaderSealer, target: HttpTarget, job_id: str) -> HttpTarget:
    sealed = sealer.sealed(target, job_id)
    assert isinstance(sealed, HttpTarget)
    return sealed


def _deliver(target: HttpTarget, opener: HeaderOpener | None, job_id: str = JOB) -> None:
    keys = DeliveryKeys(opener=opener)
    deliver(target, _delivery(job_id), timeout_seconds=5, clients=None, allow_private=True, keys=keys)


def test_a_sealed_value_is_ciphertext_in_the_item_and_plain_at_the_target(
    header_sealer: HeaderSealer, opener: HeaderOpener, server: _Server
) -> None:
    plain = _target(server, Authorization=TOKEN, **{"Content-Type": "application/json"})

    sealed = _sealed(header_sealer, plain, JOB)

    stored = sealed.model_dump_json()
    assert TOKEN not in stored and "sealed-token" not in stored
    assert isinstance(sealed.headers["Authorization"], Sealed)
    assert sealed.headers["Content-Type"] == "application/json"  # allow-listed: shown, so not sealed
    assert HttpTarget.model_validate_json(stored) == sealed  # the item reads back as sealed
    shown = masked(sealed)
    assert isinstance(shown, HttpTarget) and shown.headers["Authorization"] == "***"

    _deliver(sealed, opener)
    _deliver(sealed, opener)

    assert [h["Authorization"] for h in server.headers] == [TOKEN, TOKEN]
    assert opener.reads == 1  # the retry's value came from the minute's cache


def test_a_sealed_value_copied_into_another_job_does_not_open(
    header_sealer: HeaderSealer, opener: HeaderOpener, server: _Server
) -> None:
    sealed = _sealed(header_sealer, _target(server, Authorization=TOKEN), JOB)

    with pytest.raises(TargetError) as failure:
        _deliver(sealed, opener, job_id=OTHER_JOB)

    assert "header Authorization" in failure.value.reason and "could not be opened" in failure.value.reason
    assert server.headers == []


def test_an_opened_value_that_the_target_echoes_is_scrubbed_from_the_error(
    header_sealer: HeaderSealer, opener: HeaderOpener, server: _Server
) -> None:
    sealed = _sealed(header_sealer, _target(server, "/echo", Authorization=TOKEN), JOB)

    with pytest.raises(TargetError) as failure:
        _deliver(sealed, opener)

    assert "HTTP 500" in failure.value.reason and "Authorization" in failure.value.reason
    assert "sealed-token" not in failure.value.reason


def test_a_plain_value_stored_before_sealing_still_goes_out(server: _Server) -> None:
    older = HttpTarget.model_validate_json(json.dumps(_target(server, Authorization=TOKEN).model_dump()))

    _deliver(older, None)

    assert server.headers[0]["Authorization"] == TOKEN


def test_a_sealed_value_without_an_opener_fails_naming_the_header(
    header_sealer: HeaderSealer, server: _Server
) -> None:
    sealed = _sealed(header_sealer, _target(server, Authorization=TOKEN), JOB)

    with pytest.raises(TargetError, match="header Authorization is sealed"):
        _deliver(sealed, None)
