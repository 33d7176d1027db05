"""The client and the CLI against `sundial local` over HTTP, as in tests/e2e, and against stubs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sundial.client import RetryPolicy, SundialClient
from tests.e2e.processes import start_emulator, start_local

NOOP = {"type": "python", "handler": "noop"}
FAIL = {"type": "python", "handler": "fail"}


@pytest.fixture(scope="session")
def local_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of one local stack (its own emulator) shared by the client and CLI tests."""
    logs: Path = tmp_path_factory.mktemp("client-logs")
    with pytest.MonkeyPatch.context() as environment:
        # Its tables live in memory, so it never meets a developer's local stack over a state directory.
        environment.setenv("SUNDIAL_EPHEMERAL", "1")
        emulator, endpoint_url = start_emulator(logs)
    try:
        local, url = start_local(logs, "--endpoint-url", endpoint_url)
        try:
            yield url
        finally:
            local.stop()
    finally:
        emulator.stop()


@pytest.fixture
def client(local_api: str) -> SundialClient:
    return SundialClient(local_api, timeout=10, retries=RetryPolicy(attempts=3, base_seconds=0.1))
