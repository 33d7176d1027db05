"""Acting on every job the list's filters match, across pages: "Select all N matching jobs" once the
page's rows are all selected, a confirmation with the count, then the server-side operation's
progress and its refusals with why. Found by role and accessible name; checked through the API."""

from __future__ import annotations

import re
import time

import pytest

from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import confirm, unique
from tests.e2e.api import rfc3339

pytestmark = pytest.mark.e2e
LATER = 3600.0
NOOP = {"type": "python", "handler": "noop"}
MATCHING = 105  # more than two pages of 50, and more than the operation's first slice of 100


def _create(stack: Stack, names: list[str], **timing: str) -> list[str]:
    ids: list[str] = []
    for start in range(0, len(names), 100):
        items = [{"name": name, "target": NOOP, **timing} for name in names[start : start + 100]]
        status, answer = stack.api.call("POST", "/jobs/batch", {"jobs": items}, timeout=60)
        assert status == 200 and answer["created"] == len(items), answer
        ids += [result["job"]["id"] for result in answer["results"]]
    return ids


def _select_every_match(browser: Browser, stack: Stack, prefix: str) -> str:
    """Selects the first page's rows, then every match: answers the count the page offered."""
    browser.open(f"{stack.url}/console/#/jobs?name_prefix={prefix}")
    paging = browser.find("status", "Paging")
    browser.wait(lambda: paging.text.startswith("Page 1 of "), 15, lambda: f"paging says {paging.text!r}")
    total = re.search(r"50 of (about )?([\d,]+) jobs$", paging.text)
    assert total, paging.text
    count = f"{total[1] or ''}{total[2]}"
    assert browser.absent("button", re.compile("^Select all .* matching jobs$"))
    browser.find("checkbox", "Select all jobs on this page").click()
    browser.find("button", f"Select all {count} matching jobs").click()
    browser.find("button", "Clear selection")
    return count


def test_bulk_cancel_reaches_every_matching_job_across_pages_and_no_other(
    browser: Browser, console_stack: Stack
) -> None:
    prefix = unique("every-match")
    later = rfc3339(time.time() + LATER)
    pending = _create(console_stack, [f"{prefix}-{n:03}" for n in range(MATCHING)], run_at=later)
    # Names that contain the prefix or share its start without starting with all of it.
    others = _create(console_stack, [f"x-{prefix}", prefix[:-1], unique("every-other")], run_at=later)

    # A name the jobs contain is no filter an operation takes: the page says what to use instead.
    browser.open(f"{console_stack.url}/console/#/jobs?name={prefix}")
    browser.find("link", f"x-{prefix}")
    browser.find("checkbox", "Select all jobs on this page").click()
    page = browser.driver.find_element("tag name", "body")
    browser.wait(lambda: 'filter by "Name starts with"' in page.text, 10, "no word on what to filter by")
    assert browser.absent("button", re.compile("^Select all .* matching jobs$"))

    count = _select_every_match(browser, console_stack, prefix)
    browser.find("button", "Cancel selected").click()
    detail = confirm(browser, f"Cancel all {count} matching jobs?", f"Yes, cancel all {count} matching jobs")
    assert detail.startswith("This cannot be undone.")

    progress = browser.find("status", "Progress on every matching job")
    # The slices after the API's first are the tick's, once a minute: two ticks' worth of waiting.
    browser.wait(lambda: "finished" in progress.text, 150, lambda: f"progress says {progress.text!r}")
    assert progress.text == f"Cancel all matching jobs, finished: {MATCHING} done, 0 refused."
    assert browser.absent("list", "Refused jobs, with why")

    assert {console_stack.api.job(job_id)["status"] for job_id in pending} == {"cancelled"}
    assert {console_stack.api.job(job_id)["status"] for job_id in others} == {"pending"}
    # The list is read again: the page shows what the operation left.
    table = browser.find("table", "Jobs, newest first")
    browser.wait(
        lambda: {row[2].split()[0] for row in browser.rows(table)} == {"cancelled"},
        15,
        lambda: f"the list shows {browser.rows(table)[:3]}",
    )


def test_bulk_pause_of_every_match_lists_each_refusal_with_why(
    browser: Browser, console_stack: Stack
) -> None:
    prefix = unique("every-pause")
    recurring = _create(console_stack, [f"{prefix}-{n:02}" for n in range(50)], schedule="rate(1 hour)")
    once = console_stack.api.create(name=f"{prefix}-once", run_at=rfc3339(time.time() + LATER), target=NOOP)
    count = _select_every_match(browser, console_stack, prefix)
    browser.find("button", "Pause selected").click()
    detail = confirm(browser, f"Pause all {count} matching jobs?", f"Yes, pause all {count} matching jobs")
    assert detail == (
        "Each is paused now. A job whose state does not allow it is refused, and listed with why."
    )

    progress = browser.find("status", "Progress on every matching job")
    browser.wait(lambda: "finished" in progress.text, 60, lambda: f"progress says {progress.text!r}")
    assert progress.text == "Pause all matching jobs, finished: 50 done, 1 refused."
    refusals = browser.find("list", "Refused jobs, with why")
    assert refusals.text == f"{once['id']}: it is not recurring; only recurring jobs pause and resume"
    assert all(console_stack.api.job(job_id)["paused"] for job_id in recurring)
    assert not console_stack.api.job(once["id"])["paused"]
