"""A headless Chromium driven by Selenium, finding elements as a user or an outside checker does: by
their computed ARIA role and accessible name (what Chromium's accessibility tree says), not by ids."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webelement import WebElement

T = TypeVar("T")
WAIT_SECONDS = 15.0
POLL_SECONDS = 0.1
# The elements that can have each role: a first cut before asking Chromium for the computed role.
_CANDIDATES = {
    "button": "button, [role=button], input[type=submit]",
    "link": "a[href]",
    "textbox": "input:not([type]), input[type=text], textarea",
    "searchbox": "input[type=search]",
    "combobox": "select, input[list]",
    "spinbutton": "input[type=number]",
    "checkbox": "input[type=checkbox]",
    "table": "table",
    "heading": "h1, h2, h3",
    "img": "[role=img], img, svg",
    "status": "[role=status]",
    "alert": "[role=alert]",
    "row": "tr",
    "columnheader": "th",
    "rowheader": "th",
    "cell": "td",
    "group": "[role=group], fieldset",
    "dialog": "dialog, [role=dialog]",
    "form": "form",
    "search": "[role=search], search",
    "navigation": "nav",
    "list": "ul, ol",
    "listitem": "li, [role=listitem]",
}
Name = str | re.Pattern[str]
# Chromium names some roles by ARIA 1.3's spelling.
_ROLE_ALIASES = {"image": "img"}


class Browser:
    def __init__(self, driver: webdriver.Chrome, artefacts: Path) -> None:
        self.driver = driver
        self.artefacts = artefacts

    @classmethod
    def start(cls, binary: str, driver_path: str, artefacts: Path) -> Browser:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for argument in (
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--window-size=1280,1000",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
        ):
            options.add_argument(argument)
        return cls(webdriver.Chrome(service=Service(driver_path), options=options), artefacts)

    def quit(self) -> None:
        self.driver.quit()

    def open(self, url: str) -> None:
        self.driver.get(url)

    def script(self, source: str, *args: object) -> object:
        return self.driver.execute_script(source, *args)

    def cdp(self, command: str, **params: object) -> object:
        """A DevTools command: the emulations a user's device or settings stand for."""
        return self.driver.execute_cdp_cmd(command, dict(params))

    def screenshot(self, name: str) -> Path:
        """The whole page, not only the window: the window grows to the page's height for the shot."""
        path = self.artefacts / f"{name}.png"
        width, height = self.driver.get_window_size().values()
        page = int(self.driver.execute_script("return document.documentElement.scrollHeight"))
        self.driver.set_window_size(width, max(height, page + 140))  # plus the browser's own frame
        try:
            self.driver.save_screenshot(str(path))
        finally:
            self.driver.set_window_size(width, height)
        return path

    def find(
        self, role: str, name: Name, within: WebElement | None = None, timeout: float = WAIT_SECONDS
    ) -> WebElement:
        """The first element with this computed role whose accessible name is `name` (or matches it)."""
        return self.wait(
            lambda: next(iter(self._matching(role, name, within)), None), timeout, f"no {role} named {name!r}"
        )

    def find_all(
        self, role: str, name: Name | None = None, within: WebElement | None = None
    ) -> list[WebElement]:
        return self._matching(role, name, within)

    def absent(self, role: str, name: Name, within: WebElement | None = None) -> bool:
        return not self._matching(role, name, within)

    def _matching(self, role: str, name: Name | None, within: WebElement | None) -> list[WebElement]:
        root = within or self.driver
        found = []
        try:
            for element in root.find_elements("css selector", _CANDIDATES[role]):
                if (
                    _ROLE_ALIASES.get(element.aria_role, element.aria_role) != role
                    or not element.is_displayed()
                ):
                    continue
                if name is None or _fits(element.accessible_name, name):
                    found.append(element)
        except StaleElementReferenceException:  # the page refreshed under us: ask again
            return []
        return found

    def wait(self, probe: Callable[[], T | None], timeout: float, message: str | Callable[[], str]) -> T:
        """`probe()`'s first truthy answer; fails the test after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                answer = probe()
            except (StaleElementReferenceException, WebDriverException):
                answer = None
            if answer:
                return answer
            if time.monotonic() > deadline:
                raise AssertionError(message() if callable(message) else message)
            time.sleep(POLL_SECONDS)

    def text_of(self, role: str, name: Name) -> str:
        return str(self.find(role, name).text)

    def rows(self, table: WebElement) -> list[list[str]]:
        """The body rows' cell texts."""
        return [
            [cell.text for cell in row.find_elements("css selector", "td")]
            for row in table.find_elements("css selector", "tbody tr")
        ]


def _fits(actual: str, name: Name) -> bool:
    return bool(name.search(actual)) if isinstance(name, re.Pattern) else actual == name
