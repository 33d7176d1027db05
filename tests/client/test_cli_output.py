"""`-o yaml` beside table, json and jsonl, and `--debug`: each exchange on stderr, no secret in it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml
from click.testing import CliRunner

from sundial.cli import cli
from sundial.client import SundialClient
from sundial.client.errors import Unreachable
from sundial.client.transport import Answer
from sundial.commands.debug import debug_transport
from tests.client.test_signing import JOB, JOB_ID, KEY, SECRET
from tests.support.sigv4_stub import Reply, StubApi


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubApi]:
    monkeypatch.setenv("SUNDIAL_CONFIG", "/nonexistent/config.toml")
    with StubApi(default=Reply(200, JOB)) as api:
        yield api


def test_yaml_is_the_json_document_as_yaml(stub: StubApi) -> None:
    one = CliRunner().invoke(cli, ["jobs", "get", JOB_ID, "--api", stub.url, "-o", "yaml"])
    assert one.exit_code == 0, one.output
    as_json = CliRunner().invoke(cli, ["jobs", "get", JOB_ID, "--api", stub.url, "-o", "json"])
    assert yaml.safe_load(one.output) == json.loads(as_json.output)
    assert one.output.startswith(f"---\nid: {JOB_ID}\nname: null\n")  # the API's key order
    stub.default = Reply(200, {"jobs": [JOB], "next_token": "abc", "total": 1, "total_is_estimate": False})
    page = CliRunner().invoke(cli, ["jobs", "list", "--api", stub.url, "--max-items", "1", "-o", "yaml"])
    document = yaml.safe_load(page.output)
    assert [job["id"] for job in document["jobs"]] == [JOB_ID]
    assert (document["next_token"], document["total"]) == ("abc", 1)


def test_debug_logs_each_exchange_to_stderr(stub: StubApi) -> None:
    result = CliRunner().invoke(
        cli, ["--debug", "jobs", "get", JOB_ID.lower(), "--api", stub.url, "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    request, answer = result.stderr.splitlines()
    assert request.startswith(f"debug: > GET {stub.url}/jobs/{JOB_ID} [Accept: application/json")
    assert answer.startswith("debug: < 200 OK in ") and " ms, " in answer
    assert result.stdout.startswith("{")  # stdout stays the document alone


def test_debug_masks_every_header_that_could_hold_a_secret() -> None:
    lines: list[str] = []
    sent: list[dict[str, str]] = []

    def inner(method: str, url: str, headers: object, body: bytes | None, timeout: float) -> Answer:
        sent.append(dict(headers))  # type: ignore[call-overload]
        return Answer(201, {"x-amzn-requestid": "r-1"}, b"{}", "Created")

    transport = debug_transport(inner, lines.append, iter([1.0, 1.25]).__next__)
    client = SundialClient(
        "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1",
        transport=transport,
        credentials=__import__("botocore.credentials").credentials.Credentials(KEY, SECRET, "TOKEN"),
    )
    client.send("POST", "/jobs", {"name": "x"}, headers={"Idempotency-Key": "k-1"})
    assert "authorization" in {name.lower() for name in sent[0]}
    logged = "\n".join(lines)
    for secret in (SECRET, "TOKEN", "Signature=", KEY, "k-1"):
        assert secret not in logged
    assert "Authorization: ***" in logged and "X-Amz-Security-Token: ***" in logged
    assert lines[-1] == "debug: < 201 Created in 250 ms, 2 bytes, request id r-1"


def test_debug_logs_a_request_that_got_no_answer() -> None:
    lines: list[str] = []

    def inner(method: str, url: str, headers: object, body: bytes | None, timeout: float) -> Answer:
        raise Unreachable("cannot reach it", sent=False)

    with pytest.raises(Unreachable):
        debug_transport(inner, lines.append)("GET", "http://h/jobs", {}, None, 1.0)
    assert lines[0] == "debug: > GET http://h/jobs []" and "no answer after" in lines[1]
