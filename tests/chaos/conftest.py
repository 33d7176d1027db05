"""The ledger's emulator runs in a process of its own: the simulation's threads and the emulator's
request handling then use both cores instead of sharing one interpreter lock."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from sundial.local_stack.resources import Resources, ensure_resources
from tests.e2e.processes import start_emulator


@pytest.fixture
def emulator_url(tmp_path: Path) -> Iterator[str]:
    process, url = start_emulator(tmp_path)
    try:
        yield url
    finally:
        # Its tables are thrown away: no need to wait for a graceful exit, which a loaded machine
        # can hold up past the e2e suite's limit (those tests check the graceful stop).
        process.kill()


@pytest.fixture
def own_resources(emulator_url: str) -> Resources:
    aws = {"endpoint_url": emulator_url, "region_name": "us-east-1"}
    return ensure_resources(
        boto3.client("dynamodb", **aws), boto3.client("sqs", **aws), visibility_timeout=30
    )


@pytest.fixture(autouse=True)
def quiet_engine_warnings() -> Iterator[None]:
    """The engine logs each fault it rides out (a throttled heartbeat, a job left for the next tick)
    with its traceback; under thousands of injected faults that drowns the ledger's own report."""
    engine = logging.getLogger("sundial.shared")
    level = engine.level
    engine.setLevel(logging.ERROR)
    try:
        yield
    finally:
        engine.setLevel(level)
