"""The local stack as a developer runs it: an emulator and `sundial local` in their own processes,
jobs created over HTTP, and an http target in this process that records when each call arrived."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.e2e.api import Api
from tests.e2e.listener import Listener
from tests.e2e.processes import Process, start_emulator, start_local

# Start lateness of every on-time check, and where the processes wrote, reported at the end of the run.
LATENESS: list[float] = []
LOG_DIRS: list[Path] = []


@dataclass
class Stack:
    api: Api
    endpoint_url: str
    local: Process

    def dead_letters(self) -> list[str]:
        """Bodies on the dead-letter queue, left there (read without hiding them from the next read)."""
        sqs = boto3.client("sqs", endpoint_url=self.endpoint_url, region_name="us-east-1")
        url = sqs.get_queue_url(QueueName="sundial-dead")["QueueUrl"]
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
        return [message["Body"] for message in answer.get("Messages", [])]


@pytest.fixture(scope="session")
def listener() -> Iterator[Listener]:
    server = Listener().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("e2e-logs")
    LOG_DIRS.append(path)
    return path


@pytest.fixture(scope="session")
def stack(logs: Path) -> Iterator[Stack]:
    """One emulator and one local stack with the deployed 60 s tick, shared by the on-time tests."""
    emulator, endpoint_url = start_emulator(logs)
    try:
        local, url = start_local(logs, "--endpoint-url", endpoint_url)
        try:
            yield Stack(Api(url), endpoint_url, local)
        finally:
            local.stop()
    finally:
        emulator.stop()


def record_lateness(values: list[float]) -> None:
    LATENESS.extend(values)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for path in LOG_DIRS:
        terminalreporter.write_line(f"e2e process logs: {path}")
    if not LATENESS:
        return
    ordered = sorted(LATENESS)
    terminalreporter.write_line(
        f"e2e start lateness over {len(ordered)} starts: min {ordered[0] * 1000:.0f} ms, "
        f"median {statistics.median(ordered) * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"
    )
