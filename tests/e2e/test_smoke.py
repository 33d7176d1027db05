"""`make smoke` against the local stack, as `make test` runs it, and what it does for a deployed API."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from sundial.local_stack.cli import main
from sundial.local_stack.smoke_client import Api, Deployment, execute_api_region
from tests.e2e.conftest import Stack
from tests.e2e.processes import sundial_command

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DEPLOYED = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1"


def test_the_smoke_check_passes_against_sundial_local(stack: Stack) -> None:
    result = subprocess.run(
        [*sundial_command(), "smoke", "--api", stack.api.base_url, "--endpoint-url", stack.endpoint_url],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("smoke: passed")
    for check in ("the failing job is dead", "dead-letter queue", "cancel the recurring job"):
        assert check in result.stdout
    # It cleaned up: its dead-letter message is gone.
    assert not [body for body in stack.dead_letters() if "smoke-" in body]


def test_the_smoke_check_finds_its_message_among_many_others_and_gives_theirs_back(stack: Stack) -> None:
    sqs = boto3.client("sqs", endpoint_url=stack.endpoint_url, region_name="us-east-1")
    url = sqs.get_queue_url(QueueName="sundial-dead")["QueueUrl"]
    others = {f"other-{uuid.uuid4().hex[:8]}" for _ in range(15)}
    for batch in (sorted(others)[:10], sorted(others)[10:]):
        entries = [{"Id": str(n), "MessageBody": json.dumps({"job_id": j})} for n, j in enumerate(batch)]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    try:
        missing = Deployment.of_emulator(stack.endpoint_url).take_dead_letter(
            "01JD000000000000000000000Z", time.monotonic() + 30
        )
        assert missing.found is None and missing.exhausted
        said = missing.looked_for()
        assert "job_id is 01JD000000000000000000000Z" in said and "then the queue held no more" in said
        assert int(re.search(r"read (\d+) others", said).group(1)) >= 15  # type: ignore[union-attr]

        result = subprocess.run(
            [*sundial_command(), "smoke", "--endpoint-url", stack.endpoint_url],
            env={**os.environ, "SUNDIAL_API_URL": stack.api.base_url},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "ok   the dead job's message is on the dead-letter queue" in result.stdout
    finally:
        # Every one of the others is visible again, at once: received here, and removed.
        assert _take(sqs, url, others) == others


def _take(sqs: Any, url: str, job_ids: set[str]) -> set[str]:
    taken: set[str] = set()
    while messages := sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, WaitTimeSeconds=1
    ).get("Messages", []):
        for message in messages:
            job_id = json.loads(message["Body"]).get("job_id")
            if job_id in job_ids:
                taken.add(job_id)
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return taken


def test_make_smoke_runs_the_command() -> None:
    shown = subprocess.run(
        ["make", "-n", "smoke", "API=http://127.0.0.1:8000", "ENDPOINT=http://127.0.0.1:4566"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    command = "sundial smoke --api http://127.0.0.1:8000 --endpoint-url http://127.0.0.1:4566"
    assert command in " ".join(shown.split())


def test_requests_to_api_gateway_are_signed_and_local_ones_are_not() -> None:
    assert execute_api_region(DEPLOYED) == "eu-west-1"
    assert execute_api_region("http://127.0.0.1:8000") is None
    session = boto3.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret")
    signed = Api(DEPLOYED, session).headers("GET", f"{DEPLOYED}/health", None)
    assert "Credential=AKIDEXAMPLE/" in signed["Authorization"]
    assert "/eu-west-1/execute-api/aws4_request" in signed["Authorization"]
    assert "Authorization" not in Api("http://127.0.0.1:8000").headers("GET", "/health", None)


def test_a_local_api_needs_its_emulator(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="--endpoint-url"):
        main(["smoke", "--api", "http://127.0.0.1:9"])
