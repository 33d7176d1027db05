"""A job's occurrences on its page in a real headless Chromium against `sundial local`: the timeline
of a rate job that ran and its range moved, the instants of a pause, the instants an overlap skipped
and the missed count (on its page and in the jobs list), and a page that stands when its occurrences
cannot be read. By role and name."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from selenium.webdriver.remote.webelement import WebElement

from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import confirm, field, open_job, unique
from tests.e2e.api import wait_until
from tests.e2e.listener import Listener

pytestmark = pytest.mark.e2e
NOOP = {"type": "python", "handler": "noop"}
RATE = "rate(2 seconds)"
# Generous: the console and process suites share two cores with the in-process ones in `make test`.
WAIT_SECONDS = 60.0
TABLE = "Occurrences, oldest first"
TIMELINE = "Timeline of occurrences"
NONE = "\u2013"  # what a cell without a value shows


def _rows(browser: Browser) -> list[dict[str, str]]:
    """The occurrences table's rows by column, read again if the page refreshed meanwhile."""

    def probe() -> list[dict[str, str]] | None:
        table = browser.find("table", TABLE)
        headers = [str(cell.text) for cell in table.find_elements("css selector", "thead th")]
        return [dict(zip(headers, row, strict=True)) for row in browser.rows(table)]

    return browser.wait(probe, 15, "no occurrences table")


def _marks(browser: Browser, name: str | re.Pattern[str]) -> list[WebElement]:
    timeline = browser.find("list", TIMELINE)
    return browser.find_all("listitem", name, within=timeline)


def _earlier(browser: Browser) -> list[dict[str, str]]:
    """The rows of a range the job did not exist in: none, or instants it never owed."""
    return [] if browser.absent("table", TABLE) else _rows(browser)


def _until_rows(browser: Browser, enough: int, state: str, reason: str = NONE) -> list[dict[str, str]]:
    def probe() -> list[dict[str, str]] | None:
        rows = [row for row in _rows(browser) if row["State"] == state and row["Reason"] == reason]
        return rows if len(rows) >= enough else None

    return browser.wait(probe, WAIT_SECONDS, lambda: f"not {enough} {state} rows: {_rows(browser)}")


def test_a_rate_job_that_ran_shows_its_instants_as_ran_on_a_timeline(
    browser: Browser, console_stack: Stack
) -> None:
    api = console_stack.api
    name = unique("every-2s")
    job = api.create(name=name, schedule=RATE, target=NOOP)
    try:
        wait_until(lambda: len(api.runs(job["id"])) >= 3, WAIT_SECONDS, f"{name} did not run 3 times")
        open_job(browser, console_stack, job["id"], name)
        browser.find("heading", "Occurrences")
        ran = _until_rows(browser, 3, "ran")
        shown = [(row["Attempts"], row["Last status"], row["Flags"]) for row in ran]
        assert set(shown) == {("1", "succeeded", NONE)}, shown
        scheduled = [row["Scheduled"] for row in _rows(browser)]
        assert scheduled == sorted(scheduled), scheduled  # oldest first
        # Each instant a mark named by its instant and state; the glyph is no part of its name.
        marks = _marks(browser, re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?Z: ran$"))
        assert len(marks) >= 3
        counts = browser.find("status", "Occurrence counts")
        assert re.search(r"\b\d+ ran\b", counts.text), counts.text
        assert browser.absent("status", "Missed instants")  # nothing missed
        browser.screenshot("job-occurrences")

        # Earlier: the 24 hours before, when the job did not exist; Now goes back.
        moves = browser.find("group", "Occurrence range")
        assert not browser.find("button", "Later", within=moves).is_enabled()
        browser.find("button", "Earlier", within=moves).click()
        browser.wait(
            lambda: not any(row["State"] == "ran" for row in _earlier(browser)),
            10,
            "the earlier range still shows the runs",
        )
        assert browser.find("button", "Now", within=moves).is_enabled()
        browser.find("button", "Now", within=moves).click()
        _until_rows(browser, 3, "ran")
        range_length = browser.find("combobox", "Range")
        range_length.find_element("css selector", "option:nth-child(1)").click()  # 1 hour
        _until_rows(browser, 3, "ran")
    finally:
        api.call("DELETE", f"/jobs/{job['id']}")


def test_a_paused_job_shows_its_paused_instants(browser: Browser, console_stack: Stack) -> None:
    api = console_stack.api
    name = unique("paused-2s")
    job = api.create(name=name, schedule=RATE, target=NOOP)
    wait_until(lambda: len(api.runs(job["id"])) >= 1, WAIT_SECONDS, f"{name} never ran")
    open_job(browser, console_stack, job["id"], name)
    browser.find("button", "Pause").click()
    browser.wait(lambda: field(browser, "paused") == "true", 10, "never shown paused")
    # A resume would pass over what fell due while paused, but for the latest (run_once runs it):
    # those show skipped for the pause already, the latest waits for the resume...
    passed = _until_rows(browser, 2, "skipped", "paused")
    assert all(row["Attempts"] == "0" for row in passed), passed
    assert len([row for row in _rows(browser) if row["State"] == "waiting"]) <= 1
    # ...and once nothing will run any of them (a cancel while paused), all are skipped for it.
    browser.find("button", "Cancel").click()
    confirm(browser, f"Cancel {name}?", "Yes, cancel it")
    skipped = _until_rows(browser, 2, "skipped", "paused")
    assert all(row["Attempts"] == "0" for row in skipped), skipped
    # The timeline marks each of them (read again when a read meets the page's refresh, which finds none).
    browser.wait(
        lambda: len(_marks(browser, re.compile(r": skipped: paused$"))) == len(skipped),
        10,
        lambda: f"{len(_marks(browser, re.compile(r': skipped: paused$')))} marks for {len(skipped)} skipped",
    )
    counts = browser.find("status", "Occurrence counts")
    assert re.search(r"\b\d+ skipped \([^)]*\b\d+ paused\b", counts.text), counts.text
    assert not [row for row in _rows(browser) if row["State"] == "waiting"]  # nothing waits any more
    browser.screenshot("job-occurrences-paused")


@pytest.fixture
def slow_target() -> Iterator[Listener]:
    listener = Listener().start()
    try:
        yield listener
    finally:
        listener.stop()


def test_instants_skipped_for_overlap_show_as_missed(
    browser: Browser, console_stack: Stack, slow_target: Listener
) -> None:
    api = console_stack.api
    name = unique("overlapping")
    # Each call takes 5 s, on a schedule of one every 2 s: the instants due meanwhile are skipped.
    target = {"type": "http", "method": "POST", "url": slow_target.url("/sleep/5/overlap")}
    job = api.create(name=name, schedule=RATE, target=target, overlap_policy="skip", timeout_seconds=30)
    try:
        wait_until(lambda: api.job(job["id"])["missed"] >= 2, WAIT_SECONDS, f"{name} missed nothing")
        open_job(browser, console_stack, job["id"], name)
        notice = browser.find("status", "Missed instants")
        assert re.match(r"Missed: \d+ instants of its schedule did not run", notice.text), notice.text
        _until_rows(browser, 1, "skipped", "overlap")
        assert _marks(browser, re.compile(r": skipped: overlap$"))
        browser.screenshot("job-occurrences-missed")

        # The jobs list says so in the job's status, its columns as they were.
        browser.open(f"{console_stack.url}/console/#/jobs?name={name}")
        table = browser.find("table", "Jobs, newest first")
        browser.find("link", name)
        (row,) = browser.rows(table)
        assert len(row) == 7 and row[1] == name, row
        missed = re.search(r" \((\d+) missed\)", row[2])
        assert missed and int(missed[1]) >= 2, row
    finally:
        api.call("DELETE", f"/jobs/{job['id']}")


def test_the_job_page_stands_when_its_occurrences_cannot_be_read(
    browser: Browser, console_stack: Stack
) -> None:
    api = console_stack.api
    name = unique("unreadable")
    job = api.create(name=name, schedule="rate(1 hour)", target=NOOP)
    browser.cdp("Network.enable")
    browser.cdp("Network.setBlockedURLs", urls=["*/jobs/*/occurrences?*"])
    try:
        open_job(browser, console_stack, job["id"], name)
        alert = browser.find("alert", "")
        browser.wait(
            lambda: alert.text.startswith("The occurrences could not be read: "), 10, lambda: alert.text
        )
        # The rest of the page is drawn and works.
        assert field(browser, "schedule") == "rate(1 hour)"
        browser.find("table", re.compile(r"^Next 10 runs in UTC$"))
        browser.find("button", "Pause").click()
        browser.wait(lambda: field(browser, "paused") == "true", 10, "never shown paused")
        browser.screenshot("job-occurrences-unreadable")
    finally:
        browser.cdp("Network.setBlockedURLs", urls=[])
        browser.cdp("Network.disable")
        api.call("DELETE", f"/jobs/{job['id']}")
