"""The `sundial` command's API commands through their entry point: output, exit codes and errors."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sundial.cli import cli
from tests.client.conftest import NOOP
from tests.client.test_signing import JOB, JOB_ID
from tests.support.sigv4_stub import Reply, StubApi

SCRIPT = Path(sys.executable).parent / "sundial"


def sundial(api: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [*args, "--api", api], input=input)


def created(api: str, *args: str) -> dict[str, object]:
    result = sundial(api, "jobs", "create", "--name", f"cli-{uuid.uuid4().hex[:8]}", *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    job: dict[str, object] = json.loads(result.stdout)
    return job


@pytest.mark.e2e
def test_create_from_flags_then_get_as_json_jsonl_and_table(local_api: str) -> None:
    job = created(
        local_api,
        *("--schedule", "cron(0 9 ? * MON-FRI *)", "--tz", "Europe/Berlin", "--target-python", "noop"),
        *(
            "--payload",
            '{"report": "daily"}',
            "--priority",
            "high",
            "--max-retries",
            "2",
            "--backoff",
            "5,30",
        ),
    )
    assert (job["schedule"], job["timezone"], job["priority"]) == (
        "cron(0 9 ? * MON-FRI *)",
        "Europe/Berlin",
        "high",
    )
    assert (job["payload"], job["max_retries"], job["backoff"]) == ({"report": "daily"}, 2, [5, 30])
    assert job["target"] == NOOP

    as_jsonl = sundial(local_api, "jobs", "get", str(job["id"]), "-o", "jsonl")
    assert as_jsonl.exit_code == 0 and len(as_jsonl.stdout.splitlines()) == 1
    assert json.loads(as_jsonl.stdout) == job

    as_table = sundial(local_api, "jobs", "get", str(job["id"]))
    assert as_table.exit_code == 0
    rows = dict(line.split(None, 1) for line in as_table.stdout.splitlines()[1:] if " " in line.strip())
    assert (
        rows["schedule"].strip() == "cron(0 9 ? * MON-FRI *)"
        and rows["payload"].strip() == '{"report":"daily"}'
    )


@pytest.mark.e2e
def test_create_from_a_file_or_stdin_with_flags_over_it(local_api: str, tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(
        json.dumps({"name": "from-file", "schedule": "rate(1 day)", "target": NOOP, "priority": "low"})
    )
    from_file = sundial(local_api, "jobs", "create", "--file", str(path), "--priority", "high", "-o", "json")
    assert from_file.exit_code == 0, from_file.stderr
    job = json.loads(from_file.stdout)
    assert (job["name"], job["schedule"], job["priority"]) == ("from-file", "rate(1 day)", "high")

    spec = {"name": "from-stdin", "run_at": "2030-01-01T00:00:00Z", "target": NOOP}
    from_stdin = sundial(local_api, "jobs", "create", "--file", "-", "-o", "json", input=json.dumps(spec))
    assert from_stdin.exit_code == 0, from_stdin.stderr
    assert json.loads(from_stdin.stdout)["run_at"] == "2030-01-01T00:00:00Z"


@pytest.mark.e2e
def test_update_changes_only_the_flags_given(local_api: str) -> None:
    job = created(
        local_api,
        "--schedule",
        "rate(1 hour)",
        "--target-python",
        "noop",
        "--payload",
        "[1, 2]",
        "--priority",
        "low",
    )
    result = sundial(local_api, "jobs", "update", str(job["id"]), "--priority", "high", "-o", "json")
    assert result.exit_code == 0, result.stderr
    updated = json.loads(result.stdout)
    assert updated["priority"] == "high"
    unchanged = (
        "name",
        "schedule",
        "timezone",
        "payload",
        "max_retries",
        "backoff",
        "target",
        "misfire_policy",
    )
    assert {k: updated[k] for k in unchanged} == {k: job[k] for k in unchanged}


def test_update_sends_only_the_flags_given() -> None:
    with StubApi(default=Reply(200, JOB)) as stub:
        result = sundial(
            stub.url, "jobs", "update", JOB_ID, "--in", "10m", "--max-retries", "0", "--payload", "null"
        )
    assert result.exit_code == 0, result.stderr
    (patch,) = stub.received
    assert patch.method == "PATCH" and patch.path == f"/jobs/{JOB_ID}"
    body = patch.json()
    # A payload of null is a change too: it was given.
    assert set(body) == {"run_at", "max_retries", "payload"} and body["payload"] is None
    nothing = sundial("http://127.0.0.1:9", "jobs", "update", JOB_ID)
    assert nothing.exit_code == 1 and "at least one field" in nothing.stderr


@pytest.mark.e2e
def test_exit_codes_and_errors_on_stderr_naming_the_field(local_api: str) -> None:
    missing = sundial(local_api, "jobs", "get", "01JD000000000000000000000Z")
    assert missing.exit_code == 2 and missing.stdout == ""
    assert "not found" in missing.stderr and "HTTP 404" in missing.stderr

    bad = sundial(local_api, "jobs", "create", "--schedule", "61 * * * *", "--target-python", "noop")
    assert bad.exit_code == 1 and bad.stdout == ""
    assert "field schedule" in bad.stderr and "minute must be 0-59" in bad.stderr

    no_target = sundial(local_api, "jobs", "create", "--name", "x")
    assert no_target.exit_code == 1 and "target" in no_target.stderr

    one_off = created(local_api, "--in", "1d", "--target-python", "noop")
    conflict = sundial(local_api, "jobs", "pause", str(one_off["id"]))
    assert conflict.exit_code == 3 and "not recurring" in conflict.stderr

    usage = sundial(local_api, "jobs", "list", "--status", "sleeping")
    assert usage.exit_code == 1 and "--status" in usage.stderr

    two_targets = sundial(
        local_api, "jobs", "create", "--target-python", "noop", "--target-url", "https://x.org"
    )
    assert (
        two_targets.exit_code == 1
        and "give one target, not --target-url, --target-python" in two_targets.stderr
    )


def test_exit_codes_for_auth_server_and_network_failures() -> None:
    with StubApi(keys={"AKID": "secret"}) as stub:
        refused = sundial(stub.url, "jobs", "list")
    assert refused.exit_code == 4 and "HTTP 403" in refused.stderr
    with StubApi(default=Reply(503, {"message": "Service Unavailable"})) as stub:
        failing = CliRunner().invoke(cli, ["jobs", "cancel", JOB_ID, "--api", stub.url, "--timeout", "2"])
    assert failing.exit_code == 5 and "Service Unavailable" in failing.stderr
    unreachable = sundial("http://127.0.0.1:9", "jobs", "trigger", JOB_ID)
    assert unreachable.exit_code == 5 and "cannot reach" in unreachable.stderr


@pytest.mark.e2e
def test_list_filters_and_limits_in_every_format(local_api: str) -> None:
    tag = f"cli-list-{uuid.uuid4().hex[:8]}"
    ids = [created(local_api, "--name", tag, "--in", "1d", "--target-python", "noop")["id"] for _ in range(3)]
    as_json = sundial(local_api, "jobs", "list", "--name", tag, "-o", "json")
    assert as_json.exit_code == 0
    assert [job["id"] for job in json.loads(as_json.stdout)["jobs"]] == ids[::-1]

    as_jsonl = sundial(local_api, "jobs", "list", "--name", tag, "--limit", "2", "-o", "jsonl")
    assert [json.loads(line)["id"] for line in as_jsonl.stdout.splitlines()] == ids[:0:-1]

    as_table = sundial(local_api, "jobs", "list", "--name", tag)
    header, *rows = as_table.stdout.splitlines()
    assert header.split()[:4] == ["ID", "NAME", "STATUS", "PRIORITY"]
    assert [row.split()[0] for row in rows] == ids[::-1]


@pytest.mark.e2e
def test_list_by_name_prefix_and_health_shows_health(local_api: str) -> None:
    tag = f"pfx{uuid.uuid4().hex[:8]}"
    ids = [
        created(local_api, "--name", f"{tag}-{n}", "--in", "1d", "--target-python", "noop")["id"]
        for n in range(2)
    ]
    created(local_api, "--name", f"other-{tag}", "--in", "1d", "--target-python", "noop")

    prefixed = sundial(local_api, "jobs", "list", "--name-prefix", tag.upper(), "-o", "json")
    assert [job["id"] for job in json.loads(prefixed.stdout)["jobs"]] == ids[::-1]
    healthy = sundial(local_api, "jobs", "list", "--name-prefix", tag, "--health", "dead", "-o", "json")
    assert json.loads(healthy.stdout)["jobs"] == []
    as_table = sundial(local_api, "jobs", "list", "--name-prefix", tag)
    header, *rows = as_table.stdout.splitlines()
    assert header.split()[-1] == "HEALTH" and [row.split()[-1] for row in rows] == ["ok", "ok"]


@pytest.mark.e2e
def test_watch_shows_again_a_bounded_number_of_times(local_api: str) -> None:
    job_id = str(created(local_api, "--in", "1d", "--target-python", "noop")["id"])
    for args in (["get", job_id], ["list", "--limit", "1"], ["runs", job_id]):
        result = sundial(
            local_api, "jobs", *args, "--watch", "--interval", "0.1", "--count", "3", "-o", "json"
        )
        assert result.exit_code == 0, result.stderr
        documents = list(_json_documents(result.stdout))
        assert len(documents) == 3 and documents[0] == documents[1]


def test_watch_shows_each_refresh_from_the_api() -> None:
    pending, running = {**JOB, "status": "pending"}, {**JOB, "status": "running"}
    with StubApi(default=Reply(200, running)) as stub:
        stub.script(Reply(200, pending))
        result = sundial(
            stub.url, "jobs", "get", JOB_ID, "-w", "--interval", "0.1", "--count", "2", "-o", "jsonl"
        )
    assert [json.loads(line)["status"] for line in result.stdout.splitlines()] == ["pending", "running"]
    assert len(stub.received) == 2


@pytest.mark.e2e
def test_runs_and_actions(local_api: str) -> None:
    job_id = str(created(local_api, "--schedule", "rate(1 hour)", "--target-python", "noop")["id"])
    for action, field, value in (("pause", "paused", True), ("resume", "paused", False)):
        result = sundial(local_api, "jobs", action, job_id, "-o", "json")
        assert result.exit_code == 0 and json.loads(result.stdout)[field] is value
    assert sundial(local_api, "jobs", "trigger", job_id).exit_code == 0
    result = sundial(local_api, "jobs", "runs", job_id, "--watch", "--interval", "0.5", "--count", "20")
    assert "succeeded" in result.stdout.split("SCHEDULED")[-1], result.stdout
    cancelled = sundial(local_api, "jobs", "cancel", job_id, "-o", "json")
    assert json.loads(cancelled.stdout)["status"] == "cancelled"
    dead_only = sundial(local_api, "jobs", "retry", job_id)
    assert dead_only.exit_code == 3


@pytest.mark.e2e
def test_preview_in_a_zone(local_api: str) -> None:
    args = ["preview", "cron(0 9 ? * MON-FRI *)", "--tz", "Europe/Berlin", "-n", "10"]
    table = sundial(local_api, *args, "--after", "2026-03-27T00:00:00Z")
    assert table.exit_code == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[:2] == ["UTC", "LOCAL"] and len(rows) == 10
    # Friday 27 March 2026 is still CET; Monday 30 March is CEST, after the clocks went forward.
    assert rows[0].split() == ["2026-03-27T08:00:00Z", "2026-03-27T09:00:00+01:00"]
    assert rows[1].split() == ["2026-03-30T07:00:00Z", "2026-03-30T09:00:00+02:00"]
    as_json = sundial(local_api, *args, "-o", "json")
    assert len(json.loads(as_json.stdout)["next_runs"]) == 10
    bad = sundial(local_api, "preview", "rate(0 minutes)")
    assert bad.exit_code == 1 and "schedule" in bad.stderr


def test_api_and_stack_together_are_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["jobs", "list", "--api", "http://127.0.0.1:9", "--stack", "Sundial"])
    assert result.exit_code == 1 and "not both" in result.stderr


def test_the_api_url_comes_from_the_environment() -> None:
    with StubApi(default=Reply(200, {"jobs": [], "next_token": None})) as stub:
        result = CliRunner(env={"SUNDIAL_API_URL": stub.url}).invoke(cli, ["jobs", "list", "-o", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["jobs"] == []
    assert stub.received[0].path == "/jobs?limit=50"


@pytest.mark.e2e
def test_the_installed_script(local_api: str) -> None:
    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *args], capture_output=True, text=True, timeout=60, env=env, check=False
        )

    job = run("jobs", "create", "--api", local_api, "--in", "1h", "--target-python", "noop", "-o", "json")
    assert job.returncode == 0, job.stderr
    job_id = json.loads(job.stdout)["id"]
    got = run("jobs", "get", job_id, "--api", local_api, "-o", "jsonl")
    assert got.returncode == 0 and json.loads(got.stdout)["id"] == job_id
    missing = run("jobs", "cancel", "01JD000000000000000000000Z", "--api", local_api)
    assert missing.returncode == 2 and missing.stdout == "" and "not found" in missing.stderr
    # The local stack's own commands keep their parsing.
    local_help = run("local", "--help")
    assert local_help.returncode == 0 and "--endpoint-url" in local_help.stdout


def test_shell_completion() -> None:
    script = CliRunner().invoke(cli, ["completion", "bash"])
    assert script.exit_code == 0 and "_SUNDIAL_COMPLETE=bash_complete" in script.stdout
    env = {"_SUNDIAL_COMPLETE": "bash_complete", "COMP_WORDS": "sundial jobs re", "COMP_CWORD": "2"}
    completed = subprocess.run(
        [str(SCRIPT)], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert completed.returncode == 0
    assert {"plain,resume", "plain,retry"} <= set(completed.stdout.splitlines())


def _json_documents(text: str) -> Sequence[object]:
    decoder, documents, index = json.JSONDecoder(), [], 0
    while index < len(text.rstrip()):
        document, index = decoder.raw_decode(text, index)
        documents.append(document)
        while index < len(text) and text[index].isspace():
            index += 1
    return documents


@pytest.mark.e2e
def test_stats_counts_a_new_job(local_api: str) -> None:
    created(local_api, "--schedule", "rate(1 hour)", "--target-python", "noop")
    result = sundial(local_api, "stats", "-o", "json")
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["jobs"]["total"] >= 1
    assert {queue["priority"] for queue in found["queues"]} == {"high", "medium", "low"}
    table = sundial(local_api, "stats")
    assert table.exit_code == 0 and "jobs (" in table.stdout and "oldest due (s)" in table.stdout
