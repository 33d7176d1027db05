"""The console's alert route: set on New job, shown on the job page, refused at its input when
wrong, and changed or removed by Edit without losing what the reader did not touch; its notices of
missed instants turned on and off the same way, and refused at their box on a one-off."""

from __future__ import annotations

import pytest

from tests.console.browser import Browser
from tests.console.conftest import Stack
from tests.console.flows import choose, error_at, field, open_job, type_into, unique

pytestmark = pytest.mark.e2e
TOPIC = "arn:aws:sns:us-east-1:123456789012:alerts"


def test_a_route_set_on_new_job_is_shown_refused_at_its_input_and_edited(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("routed")
    browser.open(f"{console_stack.url}/console/#/new")
    browser.find("heading", "New job")
    type_into(browser.find("textbox", "Name"), name)
    type_into(browser.find("textbox", "Schedule"), "rate(1 hour)")
    type_into(browser.find("textbox", "Handler"), "noop")
    choose(browser.find("combobox", "Alert route"), "sns")
    address = browser.find("textbox", "Alert route address")
    type_into(address, "not-an-arn")
    type_into(browser.find("spinbutton", "Alert after dead occurrences in a row"), "3")
    browser.find("button", "Create job").click()
    browser.wait(lambda: address.get_attribute("aria-invalid") == "true", 10, "no error at the route")
    assert "SNS topic ARN" in error_at(browser, address)

    type_into(address, TOPIC)
    browser.find("button", "Create job").click()
    browser.find("heading", f"Job {name}")
    assert field(browser, "on_failure_streak") == "3"
    assert TOPIC in field(browser, "on_dead")
    [job] = [j for j in console_stack.api.all_jobs() if j["name"] == name]
    assert (job["on_dead"], job["on_failure_streak"]) == ({"type": "sns", "topic_arn": TOPIC}, 3)

    open_job(browser, console_stack, job["id"], name)
    browser.find("button", "Edit").click()
    form = browser.find("form", "Edit job")
    type_into(browser.find("textbox", "Name", within=form), f"{name}-renamed")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: field(browser, "name") == f"{name}-renamed", 10, "the edit was not shown")
    assert console_stack.api.job(job["id"])["on_dead"] == {"type": "sns", "topic_arn": TOPIC}

    browser.find("button", "Edit").click()
    form = browser.find("form", "Edit job")
    choose(browser.find("combobox", "Alert route", within=form), "none")
    type_into(browser.find("spinbutton", "Alert after dead occurrences in a row", within=form), "")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: field(browser, "on_dead") == "\u2013", 10, "the route was not removed")
    assert console_stack.api.job(job["id"])["on_failure_streak"] is None


def test_missed_instants_alerts_are_set_on_new_job_shown_and_turned_off_by_edit(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("missed-alerts")
    browser.open(f"{console_stack.url}/console/#/new")
    browser.find("heading", "New job")
    type_into(browser.find("textbox", "Name"), name)
    type_into(browser.find("textbox", "Schedule"), "rate(1 hour)")
    type_into(browser.find("textbox", "Handler"), "noop")
    missed = browser.find("checkbox", "Also alert on missed instants")
    assert not missed.is_enabled()  # no route: nowhere to send a notice
    choose(browser.find("combobox", "Alert route"), "sns")
    type_into(browser.find("textbox", "Alert route address"), TOPIC)
    browser.wait(missed.is_enabled, 5, "the box stayed off with a route")
    missed.click()
    browser.find("button", "Create job").click()
    browser.find("heading", f"Job {name}")
    assert field(browser, "alert_on_missed") == "true"
    [job] = [j for j in console_stack.api.all_jobs() if j["name"] == name]
    assert (job["on_dead"], job["alert_on_missed"]) == ({"type": "sns", "topic_arn": TOPIC}, True)

    browser.find("button", "Edit").click()
    form = browser.find("form", "Edit job")
    box = browser.find("checkbox", "Also alert on missed instants", within=form)
    assert box.is_selected()
    box.click()
    browser.find("button", "Save changes").click()
    browser.wait(lambda: field(browser, "alert_on_missed") == "false", 10, "it was not turned off")
    assert console_stack.api.job(job["id"])["on_dead"] == {"type": "sns", "topic_arn": TOPIC}

    # On again, then the route removed: its option goes with it, in the same change.
    browser.find("button", "Edit").click()
    browser.find("checkbox", "Also alert on missed instants", within=browser.find("form", "Edit job")).click()
    browser.find("button", "Save changes").click()
    browser.wait(lambda: field(browser, "alert_on_missed") == "true", 10, "it was not turned on")
    browser.find("button", "Edit").click()
    choose(browser.find("combobox", "Alert route", within=browser.find("form", "Edit job")), "none")
    browser.find("button", "Save changes").click()
    browser.wait(lambda: field(browser, "on_dead") == "\u2013", 10, "the route was not removed")
    assert field(browser, "alert_on_missed") == "false"
    assert console_stack.api.job(job["id"])["alert_on_missed"] is False


def test_missed_instants_alerts_on_a_one_off_are_refused_at_their_box(
    browser: Browser, console_stack: Stack
) -> None:
    name = unique("missed-once")
    browser.open(f"{console_stack.url}/console/#/new")
    browser.find("heading", "New job")
    type_into(browser.find("textbox", "Name"), name)
    type_into(browser.find("textbox", "Run at"), "2099-01-01T00:00:00Z")
    type_into(browser.find("textbox", "Handler"), "noop")
    choose(browser.find("combobox", "Alert route"), "sns")
    type_into(browser.find("textbox", "Alert route address"), TOPIC)
    missed = browser.find("checkbox", "Also alert on missed instants")
    missed.click()
    browser.find("button", "Create job").click()
    browser.wait(lambda: missed.get_attribute("aria-invalid") == "true", 10, "no error at the box")
    assert "recurring" in error_at(browser, missed)
    browser.screenshot("new-job-missed-alerts-refused")
    assert browser.find("heading", "New job")
    assert [j for j in console_stack.api.all_jobs() if j["name"] == name] == []

    missed.click()  # off: the error was about the value it had, and the job is made
    assert missed.get_attribute("aria-invalid") is None and error_at(browser, missed) == ""
    browser.find("button", "Create job").click()
    browser.find("heading", f"Job {name}")
    assert field(browser, "alert_on_missed") == "false"
