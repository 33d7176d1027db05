"""A job's calendar in the console: New job and Edit take excluded dates and a holiday code, the live
preview lists what the calendar passes over, an error shows at the field the API names, and the job
page shows the calendar and next runs without its dates. By role and name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.console.browser import WAIT_SECONDS, Browser
from tests.console.conftest import Stack
from tests.console.flows import error_at, field, open_job, type_into, unique

pytestmark = pytest.mark.e2e
NOOP = {"type": "python", "handler": "noop"}


def days_ahead(*offsets: int) -> list[str]:
    today = datetime.now(UTC).date()
    return [(today + timedelta(days=n)).isoformat() for n in offsets]


def preview_excluding(browser: Browser, excluded: list[str]) -> list[list[str]] | None:
    """The preview's next runs once its list of what the calendar passes over holds `excluded`."""
    passed_over = browser.find("list", "Excluded by the calendar")
    shown = {item.text.split()[0] for item in browser.find_all("listitem", within=passed_over)}
    return browser.rows(browser.find("table", "Next 10 runs in UTC")) if set(excluded) <= shown else None


def test_new_job_takes_a_calendar_previews_what_it_excludes_and_shows_it(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("with-calendar")
    excluded = days_ahead(3, 2)
    browser.open(f"{console_stack.url}/console/#/new")
    type_into(browser.find("textbox", "Name"), name)
    type_into(browser.find("textbox", "Schedule"), "0 9 * * *")
    calendar = browser.find("group", "Calendar")
    type_into(browser.find("textbox", "Excluded dates", within=calendar), ", ".join(excluded))
    type_into(browser.find("textbox", "Holidays", within=calendar), "DE-BY")

    # The preview re-renders as the inputs change: read it whole once it lists what was typed last.
    runs = browser.wait(
        lambda: preview_excluding(browser, excluded), WAIT_SECONDS, "no preview lists the dates"
    )
    assert not {row[0].split()[0] for row in runs} & set(excluded)

    browser.find("button", "Create job").click()
    browser.find("heading", f"Job {name}")
    job_id = browser.driver.current_url.rsplit("/", 1)[1]
    job = console_stack.api.job(job_id)
    assert job["calendar"] == {"exclude_dates": sorted(excluded), "holidays": "DE-BY"}
    assert field(browser, "calendar") == (
        f"no runs on the public holidays of DE-BY; nor on {', '.join(sorted(excluded))}"
    )
    upcoming = browser.wait(
        lambda: browser.rows(browser.find("table", "Next 10 runs in UTC")), WAIT_SECONDS, "no runs"
    )
    assert not {row[0].split()[0] for row in upcoming} & set(excluded)


def test_a_bad_holiday_code_shows_at_its_input_and_a_one_off_s_calendar_at_the_group(
    browser: Browser, console_stack: Stack
) -> None:
    browser.open(f"{console_stack.url}/console/#/new")
    type_into(browser.find("textbox", "Name"), unique("bad-calendar"))
    type_into(browser.find("textbox", "Schedule"), "0 9 * * *")
    holidays = browser.find("textbox", "Holidays")
    type_into(holidays, "de")
    browser.wait(lambda: holidays.get_attribute("aria-invalid") == "true", 10, "no error at Holidays")
    assert "did you mean 'DE'?" in error_at(browser, holidays)
    type_into(holidays, "DE")
    browser.wait(lambda: holidays.get_attribute("aria-invalid") is None, 10, "the fixed code kept its error")

    type_into(browser.find("textbox", "Schedule"), "")
    type_into(browser.find("textbox", "Run at"), "2099-01-01T00:00:00Z")
    browser.find("button", "Create job").click()
    group = browser.find("group", "Calendar")
    browser.wait(lambda: group.get_attribute("aria-invalid") == "true", 10, "no error at the calendar")
    assert "one-off" in error_at(browser, group)


def test_edit_changes_and_clears_the_calendar(browser: Browser, console_stack: Stack) -> None:
    name = unique("edit-calendar")
    job = console_stack.api.create(
        name=name, schedule="0 9 * * *", calendar={"exclude_dates": days_ahead(40)}, target=NOOP
    )
    open_job(browser, console_stack, job["id"], name)
    browser.find("button", "Edit").click()
    form = browser.find("form", "Edit job")
    dates = browser.find("textbox", "Excluded dates", within=form)
    assert dates.get_attribute("value") == days_ahead(40)[0]

    type_into(browser.find("textbox", "Holidays", within=form), "FR")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: browser.absent("form", "Edit job"), 10, "the editor stayed open")
    changed = console_stack.api.job(job["id"])

    browser.find("button", "Edit").click()
    form = browser.find("form", "Edit job")
    type_into(browser.find("textbox", "Excluded dates", within=form), "")
    type_into(browser.find("textbox", "Holidays", within=form), "")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: browser.absent("form", "Edit job"), 10, "the editor stayed open")

    assert changed["calendar"] == {"exclude_dates": days_ahead(40), "holidays": "FR"}
    assert console_stack.api.job(job["id"])["calendar"] is None
    browser.wait(lambda: field(browser, "calendar") == "\u2013", 10, "the calendar was not removed")
