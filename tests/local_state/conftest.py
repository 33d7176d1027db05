"""An http target that records every call, for the tests that kill the local stack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.listener import Listener


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener().start()
    yield server
    server.stop()
