"""The `sundial` script's conventions, run as a user runs it (a process): where its options go,
paging, --watch, completion, ids in any case, and --in under an idempotency key."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sundial.local_stack.child import free_port
from tests.client.test_signing import JOB, JOB_ID
from tests.support.sigv4_stub import Reply, StubApi

SCRIPT = Path(sys.executable).parent / "sundial"
TIMEOUT = 60


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # A developer's own SUNDIAL_API_URL must not reach the commands that test their default.
    environment = {name: value for name, value in os.environ.items() if name != "SUNDIAL_API_URL"}
    environment.update(env or {})
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=TIMEOUT, env=environment, check=False
    )


def json_of(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def create(api: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    name = f"conv-{uuid.uuid4().hex[:8]}"
    job: dict[str, Any] = json_of(
        run("jobs", "create", "--api", api, "--name", name, *args, "-o", "json", env=env)
    )
    return job


def test_connection_options_go_before_the_command_and_after_it_wins() -> None:
    with StubApi(default=Reply(200, {"jobs": [], "next_token": None})) as stub:
        before = run("--api", stub.url, "--timeout", "5", "jobs", "list", "-o", "json")
        after_wins = run("--api", "http://127.0.0.1:9", "jobs", "list", "--api", stub.url, "-o", "json")
        from_env = run("jobs", "list", "-o", "json", env={"SUNDIAL_API_URL": "http://127.0.0.1:9"})
    assert json_of(before)["jobs"] == [] and json_of(after_wins)["jobs"] == []
    assert len(stub.received) == 2
    # The environment is read too, below an option given before the command.
    assert from_env.returncode == 5 and "127.0.0.1:9" in from_env.stderr
    with StubApi(default=Reply(200, JOB)) as stub:
        over_env = run(
            "--api", stub.url, "jobs", "get", JOB_ID, env={"SUNDIAL_API_URL": "http://127.0.0.1:9"}
        )
    assert over_env.returncode == 0 and JOB_ID in over_env.stdout


@pytest.mark.e2e
def test_list_pages_with_max_items_and_starting_token(local_api: str) -> None:
    tag = f"page-{uuid.uuid4().hex[:8]}"
    ids = [create(local_api, "--name", tag, "--in", "1d", "--target-python", "noop")["id"] for _ in range(3)]
    listing = ("jobs", "list", "--api", local_api, "--name", tag)

    first = json_of(run(*listing, "--max-items", "2", "-o", "json"))
    assert [job["id"] for job in first["jobs"]] == ids[:0:-1] and first["next_token"]
    rest = json_of(run(*listing, "--starting-token", first["next_token"], "--max-items", "2", "-o", "json"))
    assert [job["id"] for job in rest["jobs"]] == ids[:1] and rest["next_token"] is None
    assert json_of(run(*listing, "--all", "-o", "json"))["total"] == 3

    table = run(*listing, "--max-items", "2")
    header, *rows = table.stdout.splitlines()
    assert header.split()[:2] == ["ID", "NAME"] and [row.split()[0] for row in rows] == ids[:0:-1]
    assert f"--starting-token {first['next_token']}" in table.stderr
    both = run(*listing, "--all", "--max-items", "2")
    assert both.returncode == 1 and "not both" in both.stderr


@pytest.mark.e2e
def test_watch_stops_at_a_final_state_and_runs_page_and_filter(local_api: str) -> None:
    job_id = create(local_api, "--target-python", "fail", "--max-retries", "1", "--backoff", "1")["id"]
    # No --count: it ends by itself once the job is dead, and exits as `jobs wait` does (6: dead).
    watched = run("jobs", "get", job_id, "--api", local_api, "--watch", "--interval", "0.3", "-o", "jsonl")
    assert watched.returncode == 6, watched.stderr
    assert json.loads(watched.stdout.splitlines()[-1])["status"] == "dead"
    runs = run("jobs", "runs", job_id, "--api", local_api, "-w", "--interval", "0.3", "-o", "json")
    assert runs.returncode == 6 and runs.stdout.count('"runs"') == 1  # final at once: one refresh

    history = ("jobs", "runs", job_id, "--api", local_api, "-o", "json")
    assert [r["status"] for r in json_of(run(*history, "--all"))["runs"]] == ["dead", "failed"]
    dead_only = json_of(run(*history, "--status", "dead"))
    assert [(r["status"], r["attempt"]) for r in dead_only["runs"]] == [("dead", 2)]
    newest = json_of(run(*history, "--max-items", "1"))
    assert [r["attempt"] for r in newest["runs"]] == [2] and newest["next_token"]
    older = json_of(run(*history, "--starting-token", newest["next_token"]))
    assert [r["attempt"] for r in older["runs"]] == [1] and older["next_token"] is None


@pytest.fixture
def interruptible() -> Iterator[None]:
    """Ctrl-C reaches the commands started here as at a terminal. `make test` runs these suites as
    a background job, which starts with SIGINT ignored, as a shell's background jobs do, and a child
    inherits an ignored signal (Python then never raises KeyboardInterrupt, whatever the command
    does); a handled one is reset to the default at exec."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("interruptible")
def test_watch_on_a_terminal_says_when_it_refreshed_and_ctrl_c_exits_130() -> None:
    with StubApi(default=Reply(200, {**JOB, "status": "pending"})) as stub:
        leader, follower = pty.openpty()
        process = subprocess.Popen(
            [str(SCRIPT), "jobs", "get", JOB_ID, "--api", stub.url, "--watch", "--interval", "0.2"],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
        )
        os.close(follower)
        shown = _read_until(leader, b"refreshed", TIMEOUT)
        process.send_signal(signal.SIGINT)
        status = process.wait(TIMEOUT)
        os.close(leader)
    assert b"refreshed 20" in shown and b"every 0.2 s" in shown and JOB_ID.encode() in shown
    assert status == 130


def _read_until(fd: int, wanted: bytes, timeout: float) -> bytes:
    seen, deadline = b"", time.monotonic() + timeout
    while wanted not in seen or JOB_ID.encode() not in seen:
        assert time.monotonic() < deadline, seen
        if select.select([fd], [], [], 0.5)[0]:
            seen += os.read(fd, 4096)
    return seen


def test_a_flag_the_api_refuses_is_not_offered() -> None:
    offered = run("jobs", "create", "--help").stdout
    assert "skip|buffer" in offered and "allow" not in offered.split("--overlap-policy")[1].split("\n")[0]
    refused = run("jobs", "create", "--overlap-policy", "allow", "--api", "http://127.0.0.1:9")
    assert refused.returncode == 1 and "'allow' is not one of" in refused.stderr


@pytest.mark.e2e
def test_ids_are_taken_in_any_case(local_api: str) -> None:
    job_id = create(local_api, "--in", "1d", "--target-python", "noop")["id"]
    got = json_of(run("jobs", "get", job_id.lower(), "--api", local_api, "-o", "json"))
    assert got["id"] == job_id


@pytest.mark.usefixtures("interruptible")
def test_smoke_and_console_read_the_api_url_from_the_environment() -> None:
    env = {"SUNDIAL_API_URL": "http://127.0.0.1:9"}
    smoke = run("smoke", env=env)
    # Past the --api check: the URL came from the environment, and a local API needs its emulator.
    assert smoke.returncode == 1 and "--endpoint-url" in smoke.stderr and "required" not in smoke.stderr
    before = run("--api", "http://127.0.0.1:9", "smoke")
    assert before.returncode == 1 and "--endpoint-url" in before.stderr and "required" not in before.stderr
    port = str(free_port())
    console = subprocess.Popen(
        [str(SCRIPT), "console", "--port", port],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert console.stdout is not None
        assert f"for {env['SUNDIAL_API_URL']}" in console.stdout.readline()
    finally:
        console.send_signal(signal.SIGINT)
        console.wait(TIMEOUT)


@pytest.mark.e2e
def test_job_ids_and_zones_complete(local_api: str) -> None:
    job_id = create(local_api, "--in", "1d", "--target-python", "noop")["id"]

    def completions(words: str) -> list[str]:
        env = {
            "_SUNDIAL_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
            "SUNDIAL_API_URL": local_api,
        }
        # A completion asks the API once, for 2 s at most, and offers nothing rather than hang the
        # shell: on a machine the other suites load, that can pass, so an empty offer is asked again.
        for _ in range(3):
            offered = run(env=env).stdout.splitlines()
            if offered != [""]:
                break
        return offered

    assert f"plain,{job_id}" in completions(f"sundial jobs get {job_id[:4].lower()}")
    assert f"plain,{job_id}" in completions(f"sundial --api {local_api} jobs runs {job_id[:6]}")
    assert completions("sundial preview x --tz Europe/Berl") == ["plain,Europe/Berlin"]
    assert "plain,America/New_York" in completions("sundial jobs create --tz america/new")


@pytest.mark.e2e
def test_in_is_reckoned_once_per_idempotency_key(local_api: str, tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    key = f"conv-{uuid.uuid4().hex}"
    args = ("jobs", "create", "--api", local_api, "--in", "1h", "--target-python", "noop")
    first = json_of(run(*args, "--idempotency-key", key, "-o", "json", env=env))
    # The next second: a fresh reckoning of --in would give another run_at, and a 409.
    time.sleep(1.1)
    again = json_of(run(*args, "--idempotency-key", key, "-o", "json", env=env))
    assert again["id"] == first["id"] and again["run_at"] == first["run_at"]
    assert (tmp_path / "sundial" / "idempotency.json").is_file()
    other = json_of(run(*args, "--idempotency-key", f"{key}-2", "-o", "json", env=env))
    assert other["id"] != first["id"]
