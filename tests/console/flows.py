"""What the console's browser tests share: jobs made through the API, and reading the page back."""

from __future__ import annotations

import uuid

from selenium.webdriver.remote.webelement import WebElement

from tests.console.browser import Browser
from tests.console.conftest import Stack

DEAD_SECONDS = 20.0


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def type_into(element: WebElement, text: str) -> None:
    element.clear()
    element.send_keys(text)


def error_at(browser: Browser, field: WebElement) -> str:
    """The message shown at an input: the text of what aria-describedby points to."""
    described = field.get_attribute("aria-describedby") or ""
    return str(browser.driver.find_element("id", described).text)


def dead_job(stack: Stack, name: str) -> str:
    job = stack.api.create(name=name, max_retries=0, target={"type": "python", "handler": "fail"})
    stack.api.wait_for_status(job["id"], {"dead"}, DEAD_SECONDS)
    return str(job["id"])


def field(browser: Browser, name: str) -> str:
    """A field's value as the job page shows it, read again if the page refreshed meanwhile."""

    def probe() -> str | None:
        fields = browser.find("table", "Every field of the job")
        headers = browser.find_all("rowheader", name, within=fields)
        return str(headers[0].find_element("xpath", "following-sibling::td").text) if headers else None

    return browser.wait(probe, 15, f"no field {name}")


def open_job(browser: Browser, stack: Stack, job_id: str, name: str) -> None:
    browser.open(f"{stack.url}/console/#/jobs/{job_id}")
    browser.find("heading", f"Job {name}")


def choose(select: WebElement, value: str) -> None:
    select.find_element("css selector", f"option[value='{value}']").click()


def confirm(browser: Browser, question: str, answer: str) -> str:
    """Answers the confirmation dialog asking `question`; returns what it said would follow."""
    dialog = browser.find("dialog", question)
    described = dialog.get_attribute("aria-describedby") or ""
    detail = str(browser.driver.find_element("id", described).text)
    browser.find("button", answer, within=dialog).click()
    browser.wait(lambda: browser.absent("dialog", question), 5, "the dialog stayed open")
    return detail
