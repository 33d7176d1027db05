"""A bulk cancel of many jobs survives a SIGKILL of `sundial local` mid-way: started again on the same
emulator, the next tick takes the operation on once the dead runner's lease has run out, and every
matching job ends cancelled by exactly one write, while the jobs that do not match are untouched.

`make bench PART=bulk-cancel` runs this test with 10,000 matching jobs (SUNDIAL_BULK_JOBS) and keeps
the figures it writes to SUNDIAL_BULK_REPORT: the counts it checked and how long each stage took."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from sundial.shared import constants as c
from sundial.shared.service.operations import LEASE_MS
from tests.e2e.api import Api, wait_until
from tests.e2e.processes import start_emulator, start_local

pytestmark = pytest.mark.e2e

# Four slices and a bit: the kill comes after the API's slice and before the last. 10,000 jobs take
# about ten minutes on two loaded cores (creating them, then about 40 cancels a second), too long for
# `make test`; SUNDIAL_BULK_JOBS sets the size, and the behaviour checked is the same at any size
# above two slices.
MATCHING = int(os.environ.get("SUNDIAL_BULK_JOBS", "450"))
REPORT = os.environ.get("SUNDIAL_BULK_REPORT")
OTHERS = 100
TICK = ("--tick-seconds", "1")
NOOP = {"type": "python", "handler": "noop"}
LATER = {"schedule": "rate(1 day)", "start_at": "2099-01-01T00:00:00Z"}
# Generous: the emulator acts on a few hundred jobs a second at best on a shared machine.
FINISH_SECONDS = LEASE_MS / 1000 + MATCHING / 20 + 120


def test_a_bulk_cancel_survives_a_kill_of_the_local_stack(logs: Path) -> None:
    emulator, endpoint_url = start_emulator(logs)
    try:
        _cancel_kill_and_resume(logs, endpoint_url)
    finally:
        emulator.stop()


def _cancel_kill_and_resume(logs: Path, endpoint_url: str) -> None:
    seconds: dict[str, float] = {}
    started = time.monotonic()
    first, url = start_local(logs, "--endpoint-url", endpoint_url, *TICK, name="bulk-first")
    tag = f"bulk-{uuid.uuid4().hex[:6]}"
    api = Api(url)
    matching = _create(api, f"{tag}-go", MATCHING)
    others = _create(api, f"{tag}", OTHERS)  # shares the name index's partition, not the prefix
    seconds["create"] = time.monotonic() - started
    # Its answer waits for the first slice, which a loaded machine takes seconds over.
    body = {"action": "cancel", "filter": {"name_prefix": f"{tag}-go"}}
    status, operation = api.call("POST", "/jobs/actions", body, timeout=120)
    assert status == 202, operation

    def progress() -> dict[str, Any]:
        status, body = api.call("GET", f"/jobs/actions/{operation['id']}")
        assert status == 200, body
        return dict(body)

    wait_until(lambda: progress()["done"] >= MATCHING // 4, timeout=FINISH_SECONDS, message=first.tail)
    killed_at = progress()
    assert killed_at["state"] == "running"
    first.kill()
    seconds["until_kill"] = time.monotonic() - started - seconds["create"]

    second, url = start_local(logs, "--endpoint-url", endpoint_url, *TICK, name="bulk-second")
    try:
        api = Api(url)
        wait_until(lambda: progress()["state"] == "done", timeout=FINISH_SECONDS, message=second.tail)
        seconds["after_restart"] = time.monotonic() - started - seconds["create"] - seconds["until_kill"]
        final = progress()
        assert (final["done"], final["refused"], final["left"]) == (MATCHING, 0, 0)
        items = _job_items(endpoint_url)
        for job_id in matching:
            item = items[job_id]
            assert item["status"] == "cancelled", item
            assert int(item["revision"]) == 1, item  # one user action's write, however often repeated
            assert item["operation"] == operation["id"]
        for job_id in others:
            assert (items[job_id]["status"], int(items[job_id].get("revision", 0))) == ("pending", 0)
    finally:
        second.stop()
    if REPORT:
        figures = {"matching": MATCHING, "others": OTHERS, "done_at_kill": killed_at["done"]}
        figures |= {f"{stage}_seconds": round(value, 1) for stage, value in seconds.items()}
        Path(REPORT).write_text(json.dumps(figures))


def _create(api: Api, name: str, count: int) -> list[str]:
    made: list[str] = []
    for start in range(0, count, 100):
        jobs = [
            {"name": f"{name}-{n}", "target": NOOP, **LATER} for n in range(start, min(count, start + 100))
        ]
        status, answer = api.call("POST", "/jobs/batch", {"jobs": jobs}, timeout=120)
        assert status == 200 and answer["created"] == len(jobs), answer
        made += [result["job"]["id"] for result in answer["results"]]
    return made


def _job_items(endpoint_url: str) -> dict[str, dict[str, str]]:
    """Every job item's status, revision and operation, read from the emulator's table."""
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
    found: dict[str, dict[str, str]] = {}
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=c.TABLE_NAME,
        FilterExpression="sk = :job",
        ExpressionAttributeValues={":job": {"S": "JOB"}},
        ProjectionExpression="id, #status, revision, #operation",
        ExpressionAttributeNames={"#status": "status", "#operation": "operation"},
    ):
        for item in page["Items"]:
            found[item["id"]["S"]] = {name: next(iter(value.values())) for name, value in item.items()}
    return found
