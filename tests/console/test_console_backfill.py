"""The console's spread windows and backfill in a real headless Chromium against `sundial local`:
the next runs are the job's own starts, and a backfill shows what will run before it is confirmed."""

from __future__ import annotations

import re
import time

import pytest

from sundial.shared.clock import format_rfc3339
from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import confirm, field, open_job, type_into, unique
from tests.e2e.api import wait_until

pytestmark = pytest.mark.e2e
HOUR = 3600


def test_the_next_runs_of_a_job_with_a_window_are_its_own_starts(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("spread")
    job = console_stack.api.create(
        name=name, schedule="0 * * * *", window_seconds=1800, target={"type": "python", "handler": "noop"}
    )
    _, preview = console_stack.api.call(
        "POST",
        "/schedules/preview",
        {
            "schedule": "0 * * * *",
            "count": 2,
            "after": job["next_run_at"],
            "window_seconds": 1800,
            "job_id": job["id"],
        },
    )

    open_job(browser, console_stack, job["id"], name)
    runs = browser.rows(browser.find("table", re.compile(r"^Next 10 runs in UTC$")))

    assert field(browser, "window_seconds") == "1800"
    shown = [row[0].replace(" ", "T") for row in runs[:3]]
    assert shown == [job["next_run_at"], *preview["starts"]]
    assert preview["starts"] != preview["next_runs"]  # the starts, not the whole hours


def test_a_backfill_is_previewed_then_confirmed_and_runs_each_instant_once(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("backfilled")
    job = console_stack.api.create(
        name=name, schedule="0 * * * *", overlap_policy="buffer", target={"type": "python", "handler": "noop"}
    )
    last_hour = int(time.time()) // HOUR * HOUR
    hours = [format_rfc3339((last_hour - n * HOUR) * 1000) for n in (1, 0)]
    open_job(browser, console_stack, job["id"], name)

    type_into(browser.find("textbox", "From"), hours[0])
    browser.find("button", "Preview").click()
    planned = browser.find("table", re.compile(r"^Occurrences from "))
    rows = browser.rows(planned)
    assert [(row[0], row[2]) for row in rows] == [(hour, "would run") for hour in hours]
    _, dry = console_stack.api.call(
        "POST", f"/jobs/{job['id']}/backfill", {"from": hours[0], "to": job["created_at"], "dry_run": True}
    )
    assert dry["instants"] == hours  # the preview recorded nothing

    browser.find("button", "Run 2 backfilled occurrence(s)").click()
    detail = confirm(browser, f"Run 2 backfilled occurrence(s) of {name}?", "Yes, run them")
    assert "each once" in detail
    wait_until(lambda: len(console_stack.api.runs(job["id"])) == 2, 20, "the backfilled runs never ran")
    history = browser.wait(
        lambda: (
            (rows := browser.rows(browser.find("table", "Attempts, newest first")))
            and len(rows) == 2
            and rows
        ),
        20,
        "the runs never appeared on the page",
    )
    shown = sorted(row[0] for row in history)
    assert all(row.startswith(hour.replace("T", " ")) for row, hour in zip(shown, hours, strict=True)), shown
    _, again = console_stack.api.call(
        "POST", f"/jobs/{job['id']}/backfill", {"from": hours[0], "to": job["created_at"]}
    )
    assert (again["instants"], again["already"]) == ([], hours)
    browser.screenshot("job-backfilled")
