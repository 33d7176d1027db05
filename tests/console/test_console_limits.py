"""The console's Limits page and a job's limit key in a real headless Chromium against `sundial local`:
a limit added through the form and listed, a refused value shown at its input with nothing stored,
an edit and a delete; a job's key on its page, and a due occurrence its key holds back. By role and name."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest
from selenium.webdriver.remote.webelement import WebElement

from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import confirm, error_at, field, open_job, type_into, unique
from tests.e2e.api import wait_until

pytestmark = pytest.mark.e2e
NOOP = {"type": "python", "handler": "noop"}
# Once a year: the job stays pending, so that Edit is offered for it throughout the test.
YEARLY = "0 0 1 1 *"
# A start each 10 s, one at once: of two starts due together, the second waits about 10 s.
SLOW = {"per_second": 0.1, "burst": 1}


def limit_path(key: str) -> str:
    return f"/limits/{urllib.parse.quote(key, safe='')}"


def limit_cells(browser: Browser, key: str) -> list[str] | None:
    """The cells of the key's row in the Limits table (Max concurrent to Updated), or None."""
    table = browser.find("table", "Limits per key")
    headers = browser.find_all("rowheader", key, within=table)
    if not headers:
        return None
    row: WebElement = headers[0].find_element("xpath", "..")
    return [str(cell.text) for cell in row.find_elements("css selector", "td")][:7]


def shown_limit(browser: Browser, key: str, expected: list[str]) -> list[str]:
    """Waits until the key's row shows `expected` as Max concurrent, Per second, Burst, Running, Waiting."""
    return browser.wait(
        lambda: (cells := limit_cells(browser, key)) and cells[:5] == expected and cells,
        10,
        lambda: f"the row of {key} shows {limit_cells(browser, key)}, not {expected}",
    )


def announced(browser: Browser, message: str) -> None:
    """Waits for the page's announcement (its first, unnamed status region) to say `message`."""
    status = browser.find("status", "")
    browser.wait(lambda: status.text == message, 10, lambda: f"announced {status.text!r}, not {message!r}")


def waiting_notice(browser: Browser) -> WebElement | None:
    """The job page's status saying that its key holds it back, if it is there."""
    notices = [s for s in browser.find_all("status") if s.text.startswith("Waiting on its limit key")]
    return notices[0] if notices else None


def test_a_limit_is_added_refused_at_its_field_edited_and_deleted(
    browser: Browser, console_stack: Stack
) -> None:
    api = console_stack.api
    key = unique("team/payments:api")  # a key may hold "/" and ":"
    browser.open(f"{console_stack.url}/console/#/")
    browser.find("link", "Limits").click()
    browser.find("heading", "Limits")
    form = browser.find("form", "Add a limit")
    type_into(browser.find("textbox", "Key", within=form), key)
    max_concurrent = browser.find("spinbutton", "Max concurrent", within=form)
    type_into(max_concurrent, "0")
    type_into(browser.find("spinbutton", "Per second", within=form), "2.5")
    browser.find("button", "Save limit", within=form).click()

    browser.wait(
        lambda: max_concurrent.get_attribute("aria-invalid") == "true", 10, "no error at Max concurrent"
    )
    status, refused = api.call("PUT", limit_path(key), {"max_concurrent": 0, "per_second": 2.5})
    assert (status, refused["field"]) == (400, "max_concurrent"), refused
    assert error_at(browser, max_concurrent) == refused["message"]
    assert api.call("GET", limit_path(key))[0] == 404  # nothing stored
    assert limit_cells(browser, key) is None

    type_into(max_concurrent, "5")
    assert max_concurrent.get_attribute("aria-invalid") is None  # the error was about the old value
    browser.find("button", "Save limit", within=form).click()
    announced(browser, f"Saved the limit of {key}.")
    cells = shown_limit(browser, key, ["5", "2.5", "3", "0", "0"])  # burst: 2.5 a second rounded up
    assert cells[5] == "\u2013"  # nothing waits
    stored = api.call("GET", limit_path(key))[1]
    assert (stored["max_concurrent"], stored["per_second"], stored["burst"]) == (5, 2.5, 3)
    browser.screenshot("limits")

    browser.find("button", f"Edit {key}").click()
    form = browser.find("form", f"Edit the limit of {key}")
    assert browser.find("textbox", "Key", within=form).get_attribute("readonly") is not None
    type_into(browser.find("spinbutton", "Max concurrent", within=form), "7")
    type_into(browser.find("spinbutton", "Per second", within=form), "")
    assert not browser.find("spinbutton", "Burst", within=form).is_enabled()  # a burst needs a rate
    browser.find("button", "Save limit", within=form).click()
    shown_limit(browser, key, ["7", "\u2013", "\u2013", "0", "0"])
    stored = api.call("GET", limit_path(key))[1]
    assert (stored["max_concurrent"], stored["per_second"]) == (7, None)
    browser.find("form", "Add a limit")  # saved: the form is back to adding

    browser.find("button", f"Delete {key}").click()
    detail = confirm(browser, f"Delete the limit of {key}?", "No, keep it")
    assert "start as soon as they are due" in detail
    # Kept: still listed as it was (read until a read does not meet the table's refresh) and stored.
    shown_limit(browser, key, ["7", "\u2013", "\u2013", "0", "0"])
    assert api.call("GET", limit_path(key))[0] == 200
    browser.find("button", f"Delete {key}").click()
    confirm(browser, f"Delete the limit of {key}?", "Yes, delete it")
    announced(browser, f"Deleted the limit of {key}.")
    browser.wait(lambda: limit_cells(browser, key) is None, 10, "the deleted limit is still listed")
    assert api.call("GET", limit_path(key))[0] == 404


def _waiting_job(stack: Stack, key: str, name: str) -> dict[str, Any]:
    """One of two jobs due now under a key with SLOW: the one its key holds back."""
    ids = [stack.api.create(name=f"{name}-{n}", limit_key=key, target=NOOP)["id"] for n in (1, 2)]
    held: list[dict[str, Any]] = []

    def one_waits() -> bool:
        held[:] = [job for job in map(stack.api.job, ids) if job["waiting_on_limit_since"]]
        return bool(held)

    wait_until(one_waits, 15, "neither job was held back by its key")
    return held[0]


def test_a_jobs_limit_key_is_on_its_page_and_a_held_back_occurrence_says_so(
    browser: Browser, console_stack: Stack
) -> None:
    api = console_stack.api
    key = unique("reports-db")
    name = unique("keyed")
    browser.open(f"{console_stack.url}/console/#/new")
    form = browser.find("form", "New job")
    type_into(browser.find("textbox", "Name", within=form), name)
    type_into(browser.find("textbox", "Schedule", within=form), YEARLY)
    type_into(browser.find("textbox", "Limit key", within=form), key)
    browser.find("button", "Create job").click()
    browser.find("heading", f"Job {name}")
    assert field(browser, "limit_key") == key
    [job] = [j for j in api.all_jobs() if j["name"] == name]
    assert job["limit_key"] == key

    # The key has no limit yet: its link offers to set one for it.
    browser.find("link", key).click()
    browser.find("heading", "Limits")
    form = browser.find("form", "Add a limit")
    assert browser.find("textbox", "Key", within=form).get_attribute("value") == key
    assert f"{key} has no limit" in form.text

    open_job(browser, console_stack, job["id"], name)
    browser.find("button", "Edit").click()
    form = browser.find("form", "Edit job")
    type_into(browser.find("textbox", "Limit key", within=form), "")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: field(browser, "limit_key") == "\u2013", 10, "the key was not removed")
    assert api.job(job["id"])["limit_key"] is None

    status, _ = api.call("PUT", limit_path(key), SLOW)
    assert status == 200
    held = _waiting_job(console_stack, key, name)
    open_job(browser, console_stack, held["id"], held["name"])
    since = held["waiting_on_limit_since"].replace("T", " ")
    notice = browser.wait(lambda: waiting_notice(browser), 10, "no notice that the job waits on its key")
    assert notice.text.startswith(f"Waiting on its limit key {key} since {since}"), notice.text
    browser.find("link", key, within=notice)
    assert field(browser, "waiting_on_limit_since").startswith(since)
    browser.screenshot("job-waiting-on-limit")

    api.wait_for_status(held["id"], {"succeeded"}, 40)
    [run] = api.runs(held["id"])
    assert run["limit_wait_ms"] and run["limit_wait_ms"] > 0, run

    def limit_wait() -> str | None:
        rows = browser.rows(browser.find("table", "Attempts, newest first"))
        return rows[0][8] if rows and rows[0][8] != "\u2013" else None

    assert browser.wait(limit_wait, 15, "no limit wait in the run history").endswith(" s")
    browser.wait(lambda: waiting_notice(browser) is None, 10, "the page still says the job waits")
