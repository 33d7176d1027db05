"""The console's alert route: set on New job, shown on the job page, refused at its input when
wrong, and changed or removed by Edit without losing what the reader did not touch."""

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
