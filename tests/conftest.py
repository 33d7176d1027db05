"""Fixtures shared by every test layer: one emulator per test session, served over HTTP on loopback."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
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

# Directories whose files each run for minutes (the model test, the chaos fleet, the scale model's
# runs). pytest-xdist hands out files in collection order: started last, one of them would keep its
# worker busy long after the other had run out of files.
_LONGEST_FIRST = ("model", "chaos", "bench")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _name_each_item_apart(items)
    if hasattr(config, "workerinput"):
        tests = Path(__file__).parent

        def rank(item: pytest.Item) -> int:
            parts = item.path.relative_to(tests).parts if item.path.is_relative_to(tests) else ()
            first = parts[0] if parts else ""
            return _LONGEST_FIRST.index(first) if first in _LONGEST_FIRST else len(_LONGEST_FIRST)

        items.sort(key=rank)  # stable: each file's tests keep their order


def _name_each_item_apart(items: list[pytest.Item]) -> None:
    """Schemathesis names a test of each operation `test[GET /jobs]`, but under pytest 9 all of them
    share the id `test`. pytest-xdist's file-wise scheduling keys tests by id and would run one of them
    in place of all; each gets back the id its name gives."""
    counts = Counter(item.nodeid for item in items)
    for item in items:
        if counts[item.nodeid] > 1 and item.parent is not None:
            nodeid = f"{item.parent.nodeid}::{item.name}"
            # pytest 9 keeps the id parsed (pytest 8 as the string); neither has a public setter.
            if hasattr(item, "_id"):
                item._id = type(item._id).parse(nodeid)
            else:
                item._nodeid = nodeid


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
