"""A job's occurrences on its page in a real headless Chromium against `sundial local`: a page that
stands when its occurrences cannot be read. By role and name."""

from __future__ import annotations

import re

import pytest
from selenium.webdriver.remote.webelement import WebElement

from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import field, open_job, unique

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
