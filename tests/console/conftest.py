"""One local stack and one headless Chromium (Debian's chromium and chromium-driver, through
Selenium) for every console test; each page's screenshot goes to build/test-artefacts/console/."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.console.browser import Browser
from tests.e2e.api import Api
from tests.e2e.processes import Process, start_emulator, start_local

# Under build/, which git ignores.
ARTEFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artefacts" / "console"
# Where Debian's packages put them (`make test` installs them when missing).
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = "chromedriver"
STATE_DIR_ENV = "SUNDIAL_STATE_DIR"


class Stack:
    def __init__(self, url: str, endpoint_url: str, local: Process) -> None:
        self.url = url
        self.api = Api(url)
        self.endpoint_url = endpoint_url
        self.local = local


@contextlib.contextmanager
def _new_stack(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp(f"{name}-logs")
    # The emulator's own state directory, so that it never meets another emulator's (`sundial local`
    # keeps its tables in the working directory by default).
    os.environ[STATE_DIR_ENV] = str(tmp_path_factory.mktemp(f"{name}-state"))
    emulator, endpoint_url = start_emulator(logs)
    try:
        local, url = start_local(logs, "--endpoint-url", endpoint_url, name=f"{name}-local")
        try:
            yield Stack(url, endpoint_url, local)
        finally:
            local.stop()
    finally:
        emulator.stop()


@pytest.fixture(scope="session")
def console_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with _new_stack(tmp_path_factory, "console") as stack:
        yield stack


@pytest.fixture(scope="session")
def crowded_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack of its own for tests that fill the table, so that the others' counts stay exact."""
    with _new_stack(tmp_path_factory, "crowded") as stack:
        yield stack


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    binary = next((found for name in CHROMIUM if (found := shutil.which(name))), None)
    driver = shutil.which(DRIVER)
    if binary is None or driver is None:
        pytest.skip(
            "no headless Chromium here: install Debian's chromium and chromium-driver "
            "(`make test` does, as root, when apt-get is available)"
        )
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    session = Browser.start(binary, driver, ARTEFACTS)
    yield session
    session.quit()
