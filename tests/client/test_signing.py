"""SigV4: the client signs what it sends exactly as botocore's own signer does, and a stub that checks
signatures as API Gateway does accepts its requests and refuses others."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from sundial.client import SundialClient, Unauthorized, execute_api_region
from sundial.client.transport import Answer, urllib_transport
from tests.client.conftest import NOOP
from tests.support.sigv4_stub import Reply, StubApi

KEY, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
DEPLOYED = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1/"
FIXED = dt.datetime(2026, 12, 1, 9, 30, 15)
JOB_ID = "01JD0000000000000000000000"
JOB: dict[str, object] = {"id": JOB_ID, "name": None, "status": "pending", "schedule": None,
       "timezone": "UTC", "run_at": "2030-01-01T00:00:00Z", "next_run_at": "2030-01-01T00:00:00Z",
       "priority": "medium", "target": NOOP, "payload": None, "max_retries": 5, "backoff": [5],
       "timeout_seconds": 300, "attempt": 0, "paused": False, "misfire_policy": "run_once",
       "overlap_policy": "skip", "start_at": None, "end_at": None, "last_run": None,
       "created_at": "2026-12-01T09:30:15Z", "updated_at": "2026-12-01T09:30:15Z"}  # fmt: skip
JOB_BYTES = json.dumps(JOB).encode()


class Captured:
    """A transport that records each request and answers from a fixed reply."""

    def __init__(self, status: int = 200, body: bytes = b"{}") -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes | None]] = []
        self.reply = Answer(status, {}, body)

    def __call__(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
    ) -> Answer:
        self.requests.append((method, url, dict(headers), body))
        return self.reply


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[dt.datetime]:
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda *_, **__: FIXED)
    yield FIXED


def _botocore_authorization(method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> str:
    """What botocore's signer alone makes of the request the client sent, minus its own signature."""
    unsigned = {
        k: v for k, v in headers.items() if k.lower() not in ("authorization", "x-amz-date", "user-agent")
    }
    request = AWSRequest(method=method, url=url, data=body, headers=unsigned)
    SigV4Auth(Credentials(KEY, SECRET), "execute-api", "eu-west-1").add_auth(request)
    return str(request.headers["Authorization"])


@pytest.mark.usefixtures("frozen")
def test_captured_requests_carry_botocores_own_signature() -> None:
    captured = Captured(201, JOB_BYTES)
    client = SundialClient(DEPLOYED, credentials=Credentials(KEY, SECRET), transport=captured)
    client.create_job({"name": "signed", "target": NOOP}, idempotency_key="k-1")
    captured.reply = Answer(200, {}, b'{"jobs": [], "next_token": null}')
    client.list_jobs(status="pending", name="a b/c+d", next_token="x=y/z")
    for method, url, headers, body in captured.requests:
        assert headers["X-Amz-Date"] == "20261201T093015Z"
        assert headers["Authorization"] == _botocore_authorization(method, url, headers, body)
        assert f"Credential={KEY}/20261201/eu-west-1/execute-api/aws4_request" in headers["Authorization"]
    create_headers = captured.requests[0][2]
    # The Idempotency-Key is signed: a proxy cannot swap it.
    assert "idempotency-key" in create_headers["Authorization"].split("SignedHeaders=")[1]
    assert captured.requests[1][1].endswith("?status=pending&name=a%20b%2Fc%2Bd&next_token=x%3Dy%2Fz")


def test_execute_api_hosts_are_signed_and_others_are_not() -> None:
    assert execute_api_region(DEPLOYED) == "eu-west-1"
    assert execute_api_region("https://x1.execute-api.cn-north-1.amazonaws.com.cn/v1") == "cn-north-1"
    assert execute_api_region("http://127.0.0.1:8000") is None
    captured = Captured(body=b'{"status": "ok"}')
    SundialClient("http://127.0.0.1:8000", transport=captured).health()
    assert "Authorization" not in captured.requests[0][2]
    signed = SundialClient(DEPLOYED, credentials=Credentials(KEY, SECRET), region="us-west-2")
    assert signed.signer is not None and signed.signer.region == "us-west-2"


def test_temporary_credentials_send_their_token() -> None:
    captured = Captured(body=b'{"status": "ok"}')
    client = SundialClient(DEPLOYED, credentials=Credentials(KEY, SECRET, "the-token"), transport=captured)
    client.health()
    headers = captured.requests[0][2]
    assert headers["X-Amz-Security-Token"] == "the-token"
    assert "x-amz-security-token" in headers["Authorization"]


def test_no_credentials_is_an_authorisation_error(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    client = SundialClient(DEPLOYED, transport=Captured())
    with pytest.raises(Unauthorized, match="no AWS credentials"):
        client.health()


def test_a_stub_that_checks_signatures_accepts_the_clients_requests() -> None:
    with StubApi(keys={KEY: SECRET}, region="eu-west-1") as stub:
        stub.script(Reply(201, JOB), Reply(200, {"jobs": [JOB], "next_token": None}))
        client = SundialClient(
            stub.url + "/v1", sign=True, region="eu-west-1", credentials=Credentials(KEY, SECRET)
        )
        client.create_job({"name": "signed", "payload": {"ü": "✓"}, "target": NOOP})
        client.list_jobs(status="pending", next_token="a+b/c=")
        assert client.health().status == "ok"
    assert stub.refused == []
    assert [(r.method, r.path.split("?")[0]) for r in stub.received] == [
        ("POST", "/v1/jobs"),
        ("GET", "/v1/jobs"),
        ("GET", "/v1/health"),
    ]


def test_the_stub_refuses_a_wrong_key_a_tampered_body_and_no_signature() -> None:
    with StubApi(keys={KEY: SECRET}, region="eu-west-1") as stub:
        wrong = SundialClient(stub.url, sign=True, region="eu-west-1", credentials=Credentials(KEY, "nope"))
        with pytest.raises(Unauthorized) as refused:
            wrong.health()
        assert refused.value.status == 403 and "signature mismatch" in refused.value.message

        with pytest.raises(Unauthorized, match="missing or malformed"):
            SundialClient(stub.url).health()

        def tamper(method: str, url: str, headers: Mapping[str, str], body: bytes | None, t: float) -> Answer:
            return urllib_transport(method, url, headers, (body or b"") + b" ", t)

        right = SundialClient(
            stub.url, sign=True, region="eu-west-1", credentials=Credentials(KEY, SECRET), transport=tamper
        )
        with pytest.raises(Unauthorized, match="signature mismatch"):
            right.create_job({"target": NOOP})
    assert len(stub.refused) == 3
