"""Fixtures shared by every test layer: one emulator per test session, served over HTTP on loopback."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from sundial.local_stack.emulator import Emulator
from sundial.local_stack.resources import Resources, ensure_resources

# The http target that the tests of secrets and signatures share (its `receiver` fixture).
pytest_plugins = ["tests.support.receivers"]

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Sundial")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

_prefixes = itertools.count()


@pytest.fixture(scope="module", autouse=True)
def _telemetry_left_as_found(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test module that leaves Powertools' settings changed (the local stack's own turn metrics
    off) makes every later test of metrics in this process fail far from the cause: name the cause.
    Module-wide, taken before the module's other fixtures, so that theirs are held to it too."""
    before = _telemetry_settings()
    yield
    assert _telemetry_settings() == before, f"{request.module.__name__} left Powertools' settings changed"


def _telemetry_settings() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name.startswith("POWERTOOLS_")}


@pytest.fixture(scope="session")
def emulator() -> Iterator[Emulator]:
    server = Emulator().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def aws(emulator: Emulator) -> dict[str, Any]:
    """Keyword arguments for boto3.client(...) that point at the emulator."""
    return {"endpoint_url": emulator.endpoint_url, "region_name": "us-east-1"}


@pytest.fixture
def dynamodb(aws: dict[str, Any]) -> Any:
    return boto3.client("dynamodb", **aws)


@pytest.fixture
def sqs(aws: dict[str, Any]) -> Any:
    return boto3.client("sqs", **aws)


@pytest.fixture
def resources(dynamodb: Any, sqs: Any) -> Resources:
    """A fresh table and fresh queues for each test, on the shared emulator."""
    return ensure_resources(dynamodb, sqs, prefix=f"t{next(_prefixes)}-", visibility_timeout=30)
