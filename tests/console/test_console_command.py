"""`sundial console --api`: the console on loopback, its API calls signed with SigV4 and forwarded.

The API here is the local stack behind a stub that checks every request's signature as API Gateway
does (tests/support/sigv4_stub.py) and forwards the ones that hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.credentials import Credentials

from sundial.client.signing import Signer
from sundial.console.server import CONSOLE_HEADER, Target, build_server
from sundial.local_stack.child import free_port, wait_for_port
from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.support.sigv4_stub import Received, Reply, StubApi

pytestmark = pytest.mark.e2e
KEY, SECRET = "AKIDCONSOLETEST", "console-test-secret"
TRACE_URL = "https://traces.example/#/{xray_trace_id}?w3c={trace_id}"


def _forwarder(api_url: str) -> object:
    def forward(received: Received) -> Reply:
        request = urllib.request.Request(
            api_url + received.path,
            data=received.body or None,
            method=received.method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return Reply(answer.status, json.loads(answer.read() or b"null"))
        except urllib.error.HTTPError as error:
            return Reply(error.code, json.loads(error.read() or b"null"))

    return forward


@pytest.fixture(scope="module")
def signed_api(console_stack: Stack) -> Iterator[StubApi]:
    with StubApi(keys={KEY: SECRET}, default=_forwarder(console_stack.url)) as stub:  # type: ignore[arg-type]
        yield stub


@pytest.fixture(scope="module")
def console_url(signed_api: StubApi, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`sundial console` as a user runs it, with credentials in the environment."""
    port = free_port()
    log = tmp_path_factory.mktemp("console-command") / "console.log"
    environment = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "PYTHONUNBUFFERED": "1",
    }
    environment.pop("AWS_SESSION_TOKEN", None)
    script = Path(sys.executable).parent / "sundial"
    command = [
        str(script),
        "console",
        "--api",
        signed_api.url,
        "--sign",
        "--region",
        "us-east-1",
        "--port",
        str(port),
        "--trace-url",
        TRACE_URL,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=environment)
    try:
        wait_for_port("127.0.0.1", port, 30, alive=process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)
    assert "signed for us-east-1" in log.read_text(), log.read_text()


def _get(url: str, headers: dict[str, str]) -> tuple[int, object]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_console_works_through_a_signed_forwarder(
    browser: Browser, console_stack: Stack, signed_api: StubApi, console_url: str
) -> None:
    name = "behind-sigv4"
    job = console_stack.api.create(
        name=name, schedule="rate(1 day)", target={"type": "python", "handler": "noop"}
    )
    before = len(signed_api.received)
    browser.open(f"{console_url}/#/jobs")
    browser.find("link", name).click()
    browser.find("heading", f"Job {name}")
    browser.find("button", "Pause").click()
    browser.find("button", "Resume")  # the page shows the answer, so the pause is done
    assert any(r.path.endswith("/pause") for r in signed_api.received), "no pause reached the API"
    assert console_stack.api.job(job["id"])["paused"] is True
    browser.open(f"{console_url}/#/")
    browser.find("table", "Jobs per status and priority")
    browser.screenshot("console-command-overview")
    calls = signed_api.received[before:]
    assert {c.path.split("?")[0] for c in calls} >= {"/jobs", "/stats", "/schedules/preview"}
    assert not signed_api.refused, signed_api.refused
    assert all(c.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY}/") for c in calls)


def test_a_run_links_its_trace_to_the_trace_url_given(
    browser: Browser, console_stack: Stack, console_url: str
) -> None:
    name = "traced-run"
    job = console_stack.api.create(name=name, target={"type": "python", "handler": "noop"})
    console_stack.api.wait_for_status(job["id"], {"succeeded"}, 60)
    [run] = console_stack.api.runs(job["id"])
    trace_id = run["trace_id"]
    browser.open(f"{console_url}/#/jobs/{job['id']}")
    browser.find("heading", f"Job {name}")

    link = browser.find("link", trace_id)

    xray = f"1-{trace_id[:8]}-{trace_id[8:]}"
    assert link.get_attribute("href") == f"https://traces.example/#/{xray}?w3c={trace_id}"


def test_a_trace_url_that_names_no_trace_is_refused() -> None:
    script = Path(sys.executable).parent / "sundial"
    command = [str(script), "console", "--api", "http://127.0.0.1:9", "--trace-url", "https://x.example/"]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "--trace-url must be an http(s) URL" in done.stderr


def test_only_the_consoles_own_calls_are_forwarded(signed_api: StubApi, console_url: str) -> None:
    before = len(signed_api.received)
    status, body = _get(f"{console_url}/api/jobs", {})
    assert status == 403 and CONSOLE_HEADER in str(body)
    # A page on another name for this address (DNS rebinding) is refused too.
    status, _ = _get(f"{console_url}/api/jobs", {CONSOLE_HEADER: "1", "Host": "attacker.example:80"})
    assert status == 421
    assert len(signed_api.received) == before
    status, body = _get(f"{console_url}/api/health", {CONSOLE_HEADER: "1"})
    assert (status, body) == (200, {"status": "ok"})


def test_a_wrong_signature_is_refused_and_the_refusal_reaches_the_page(signed_api: StubApi) -> None:
    wrong = Signer("us-east-1", credentials=Credentials(KEY, "not-the-secret"))
    server = build_server(Target(signed_api.url, wrong), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        status, body = _get(f"{url}/api/jobs", {CONSOLE_HEADER: "1"})
        assert status == 403 and "signature mismatch" in str(body)
        assert signed_api.refused[-1] == "signature mismatch"
    finally:
        server.shutdown()
        server.server_close()


def test_execute_api_urls_are_signed_in_their_region_and_others_only_when_asked() -> None:
    deployed = Target.of("https://abc123.execute-api.eu-west-1.amazonaws.com/v1/")
    assert deployed.signer is not None and deployed.signer.region == "eu-west-1"
    assert deployed.api_url == "https://abc123.execute-api.eu-west-1.amazonaws.com/v1"
    assert Target.of("http://127.0.0.1:8000").signer is None
    with pytest.raises(ValueError, match="region"):
        Target.of("http://127.0.0.1:8000", sign=True)
