"""`make local` as a newcomer runs it: no emulator given, so it starts one, and stops it on exit."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.api import Api, wait_until
from tests.e2e.processes import emulator_url_in_banner, start_local

pytestmark = pytest.mark.e2e


def test_sundial_local_alone_serves_health_and_docs_and_stops_its_emulator(logs: Path) -> None:
    local, url = start_local(logs, name="alone")
    try:
        emulator_url = emulator_url_in_banner(local.output())
        assert Api(url).call("GET", "/health") == (200, {"status": "ok"})
        with urllib.request.urlopen(f"{url}/docs", timeout=10) as page:
            assert page.status == 200
        assert f"curl -s -X POST {url}/jobs" in local.output()
    finally:
        assert local.stop() == 0

    port = int(emulator_url.rsplit(":", 1)[1])
    wait_until(
        lambda: not _listening(port), timeout=10, message=f"the emulator on {port} outlived its parent"
    )


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False
