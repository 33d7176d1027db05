"""The dead filter among many jobs, in a real headless Chromium against a `sundial local` of its own
(it fills the table, which would move the other console tests' counts)."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest
from ulid import ULID

from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared.models import Job
from sundial.shared.store import items
from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import dead_job, unique

pytestmark = pytest.mark.e2e


def test_dead_jobs_older_than_a_thousand_others_are_on_the_first_screen_of_the_dead_filter(
    browser: Browser, crowded_stack: Stack
) -> None:
    """The dead are the oldest jobs; a thousand newer ones, written as the API writes them, come after.
    A filter that read the newest jobs and kept the dead would show an empty first page."""
    dead = [unique(f"oldest-dead-{n}") for n in range(2)]
    for name in dead:
        dead_job(crowded_stack, name)
    _write_pending_jobs(crowded_stack.endpoint_url, 1_000)

    browser.open(f"{crowded_stack.url}/console/#/jobs?status=dead")

    table = browser.find("table", "Jobs, newest first")
    for name in dead:
        browser.find("link", name)
    shown = {row[1]: row[2] for row in browser.rows(table)}
    assert all(shown.get(name, "").startswith("dead") for name in dead), shown
    assert all(status.startswith("dead") for status in shown.values()), shown


def _write_pending_jobs(endpoint_url: str, count: int) -> None:
    """`count` one-off jobs due tomorrow, put into the table in batches with the items the API's
    create writes: the figure is about reading among them, and a thousand creates would take a while."""
    dynamodb = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
    now_ms = int(time.time() * 1000)
    tomorrow = now_ms + 86_400_000
    target = PythonTarget(type="python", handler="noop")
    jobs = [
        Job(
            id=str(ULID()),
            name=f"pending-{n:04d}",
            status=JobStatus.PENDING,
            target=target,
            run_at=tomorrow,
            scheduled_at=tomorrow,
            due_at=tomorrow,
            created_at=now_ms,
            updated_at=now_ms,
        )
        for n in range(count)
    ]
    for start in range(0, count, 25):
        writes: Any = [
            {"PutRequest": {"Item": items.job_to_item(job, "pending")}} for job in jobs[start : start + 25]
        ]
        while writes:
            answer = dynamodb.batch_write_item(RequestItems={c.TABLE_NAME: writes})
            writes = answer.get("UnprocessedItems", {}).get(c.TABLE_NAME, [])
