"""The README's quick starts and tour, run as written against a local stack: from the checkout's root,
and from a fresh clone of what is committed.

- The local quick start: its clone line clones this checkout, the stack stands in for `make local`
  (which must be a target of the clone's Makefile), and its first job runs and succeeds.
- The tour: the README's `sundial` block, and the same with `curl` from docs/guide.md.
- The https quick start: the local stack cannot reach a public host, so its create runs as written
  (an https URL to a public name is accepted at create; only the worker resolves it, at delivery),
  the job is checked as stored (its schedule, its header kept as the reference) and cancelled before
  it is due. Its receiver snippet verifies a body signed with the local stack's signing secret, as
  the worker signs, and refuses it tampered.
- "Why did my job die": its block makes a job die, looks at it and revives it.

The deploy quick start cannot run here: tests/unit/test_readme.py checks its make targets and context
keys."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import boto3
import pytest

from tests.e2e.api import wait_until
from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LOCAL_URL = "http://127.0.0.1:8000"


ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")


def _blocks(path: Path, heading: str, language: str = "sh") -> list[str]:
    section = path.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def _block(path: Path, heading: str, language: str = "sh") -> str:
    (block,) = _blocks(path, heading, language)
    return block


def _tour_blocks(root: Path) -> list[str]:
    curl_block = _block(root / "docs" / "guide.md", "The tour with curl")
    command_block = _block(root / "README.md", "A 60-second tour")
    return [curl_block, command_block]


def _run(
    script: str, stack: Stack, root: Path, python_path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    # The one change: this test's stack listens on a port of its own, which $U and
    # SUNDIAL_API_URL name instead of the default 8000.
    script = script.replace(LOCAL_URL, stack.api.base_url)
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in {"SUNDIAL_API_URL", "PYTHONPATH", "VIRTUAL_ENV"}
    }
    # A shell as a new user has it: no virtual environment's bin on the PATH.
    environment["PATH"] = ":".join(
        part for part in environment.get("PATH", "").split(":") if not part.startswith(str(ROOT))
    )
    environment["SUNDIAL_API_URL"] = stack.api.base_url
    if python_path is not None:
        environment["PYTHONPATH"] = str(python_path)
    return subprocess.run(
        ["bash", "-c", script],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _tour_runs_as_written(stack: Stack, root: Path, python_path: Path | None = None) -> None:
    curl_block, command_block = _tour_blocks(root)

    with_curl = _run(curl_block, stack, root, python_path)
    assert with_curl.returncode == 0 and not with_curl.stderr, with_curl.stderr
    assert '"status":"dead"' in with_curl.stdout.replace(" ", "")
    assert '"field":"schedule"' in with_curl.stdout.replace(" ", "")

    with_sundial = _run(command_block, stack, root, python_path)
    assert "command not found" not in with_sundial.stderr, with_sundial.stderr
    assert with_sundial.stdout.rstrip().endswith("1"), with_sundial.stdout
    assert "error: schedule: cron expression '61 * * * *': minute must be 0-59" in with_sundial.stderr
    # Every other command succeeded: the one error is the refused schedule.
    assert with_sundial.stderr.count("error:") == 1, with_sundial.stderr


def test_the_tours_commands_run_as_written(stack: Stack) -> None:
    _tour_runs_as_written(stack, ROOT)


def test_the_tour_runs_as_written_from_a_fresh_clone(stack: Stack, tmp_path: Path) -> None:
    clone = tmp_path / "sundial"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    # The checkout's environment stands in for `make install`: its packages, and its editable
    # install's entry points, with the clone's own code first on the import path.
    clone.joinpath(".venv").symlink_to(ROOT / ".venv", target_is_directory=True)
    where = _run(
        'export PATH="$PWD/.venv/bin:$PATH"\ncommand -v sundial\n'
        # -P: the import path the `sundial` script gets, without the working directory in front.
        'python -P -c "import sundial.cli, sundial.shared as shared; '
        'print(sundial.cli.__file__, shared.__file__)"',
        stack,
        clone,
        clone,
    )
    assert where.returncode == 0, where.stderr
    command, cli, shared = where.stdout.split()
    assert command == f"{clone}/.venv/bin/sundial"
    assert Path(cli).is_relative_to(clone) and Path(shared).is_relative_to(clone), where.stdout

    _tour_runs_as_written(stack, clone, clone)


def test_the_local_quick_start_runs_as_written(stack: Stack, tmp_path: Path) -> None:
    clone_line, make_line, *rest = _block(
        ROOT / "README.md", "Quick start: local, in three lines"
    ).splitlines()
    assert clone_line.startswith("git clone <repository URL> sundial && cd sundial"), clone_line
    assert make_line.startswith("make local"), make_line
    cloned = _run(clone_line.replace("<repository URL>", str(ROOT)), stack, tmp_path)
    assert cloned.returncode == 0, cloned.stderr
    clone = tmp_path / "sundial"
    # The checkout's environment stands in for what `make local` installs; the stack, for what it runs.
    clone.joinpath(".venv").symlink_to(ROOT / ".venv", target_is_directory=True)
    assert _run("make -n local", stack, clone).returncode == 0

    first_job = _run("\n".join(rest), stack, clone, clone)
    assert first_job.returncode == 0 and "error:" not in first_job.stderr, first_job.stderr
    job_id = ULID.search(first_job.stdout)
    assert job_id is not None, first_job.stdout
    job = stack.api.wait_for_status(job_id[0], {"succeeded"}, timeout=60)
    assert job["name"] == "hello"


def test_the_https_quick_start_creates_its_job_as_written(stack: Stack) -> None:
    readme = ROOT / "README.md"
    heading = "A cron job that calls my HTTPS endpoint, signed, with a secret header"
    created = _run(_block(readme, heading), stack, ROOT)
    assert created.returncode == 0 and "error:" not in created.stderr, created.stderr
    job_id = ULID.search(created.stdout)
    assert job_id is not None, created.stdout
    try:
        job = stack.api.job(job_id[0])
        assert job["status"] == "pending" and job["schedule"] == "cron(0 2 * * ? *)"
        assert job["timezone"] == "Europe/Berlin" and job["max_retries"] == 3
        assert job["target"]["url"] == "https://hooks.example.com/sundial/nightly-sync"
        reference = job["target"]["headers"]["Authorization"]
        assert reference["secret"].startswith("arn:aws:secretsmanager:"), reference
        # The job's next run is the schedule's next instant, as a preview says.
        status, preview = stack.api.call(
            "POST",
            "/schedules/preview",
            {"schedule": job["schedule"], "timezone": job["timezone"], "count": 1},
        )
        assert status == 200 and preview["next_runs"] == [job["next_run_at"]], preview
    finally:
        # Cancelled long before 02:00 in Berlin: no delivery ever leaves for the public name.
        status, cancelled = stack.api.call("DELETE", f"/jobs/{job_id[0]}")
        assert status == 200 and cancelled["status"] == "cancelled", cancelled


def test_the_https_quick_starts_receiver_verifies_a_signed_delivery(stack: Stack) -> None:
    from sundial.shared.targets.signing import key_of, signature

    secretsmanager = boto3.client("secretsmanager", endpoint_url=stack.endpoint_url, region_name="us-east-1")
    signing_secret = secretsmanager.get_secret_value(SecretId="sundial-signing")["SecretString"].split()[0]
    heading = "A cron job that calls my HTTPS endpoint, signed, with a secret header"
    receiver = _block(ROOT / "README.md", heading, "python")

    body = b'{"full": false}'
    message_id, timestamp = "01JD8ZQ3V6X4M7N2P5R8T1W9YB:2026-12-05T01:00:00Z:1", int(time.time())
    headers = {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(key_of(signing_secret), message_id, timestamp, body),
    }
    scope: dict[str, object] = {
        "signing_secret": signing_secret,
        "request_body": body,
        "request_headers": headers,
    }
    exec(receiver, scope)  # the README's own snippet
    assert scope["payload"] == {"full": False}

    scope["request_body"] = b'{"full": true}'
    with pytest.raises(Exception, match=r"(?i)signature"):
        exec(receiver, scope)


def test_why_did_my_job_die_runs_as_written(stack: Stack) -> None:
    looked = _run(_block(ROOT / "README.md", "Why did my job die?"), stack, ROOT)
    assert looked.returncode == 0 and "error:" not in looked.stderr, looked.stderr
    job_id = ULID.search(looked.stdout)
    assert job_id is not None, looked.stdout
    # The block's `sundial jobs runs --status dead` showed the dead attempt, and its retry revived it.
    runs = stack.api.runs(job_id[0])
    assert any(run["status"] == "dead" for run in runs), runs
    wait_until(
        lambda: len(stack.api.runs(job_id[0])) > len(runs) or stack.api.job(job_id[0])["attempt"] > 2,
        timeout=30,
        message="the revived job never ran again",
    )
