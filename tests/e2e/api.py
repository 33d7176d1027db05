"""A small client for the local stack's HTTP API (API.md), on the standard library alone."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

Json = dict[str, Any]
POLL_SECONDS = 0.1


def rfc3339(epoch_seconds: float) -> str:
    return (
        datetime.fromtimestamp(epoch_seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def parse_rfc3339(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Api:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def call(self, method: str, path: str, body: Any = None, timeout: float = 10) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.base_url}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def create(self, **fields: Any) -> Json:
        status, job = self.call("POST", "/jobs", fields)
        assert status == 201, job
        return dict(job)

    def job(self, job_id: str) -> Json:
        status, job = self.call("GET", f"/jobs/{job_id}")
        assert status == 200, job
        return dict(job)

    def runs(self, job_id: str) -> list[Json]:
        status, answer = self.call("GET", f"/jobs/{job_id}/runs?limit=100")
        assert status == 200, answer
        return list(answer["runs"])

    def wait_for_status(self, job_id: str, statuses: set[str], timeout: float) -> Json:
        """Polls the job until its status is one of `statuses`; fails the test after `timeout`."""
        last: Json = {}

        def reached() -> bool:
            nonlocal last
            last = self.job(job_id)
            return last["status"] in statuses

        wait_until(reached, timeout, lambda: f"job {job_id} never reached {sorted(statuses)}: {last}")
        return last


def wait_until(condition: Callable[[], bool], timeout: float, message: str | Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(message() if callable(message) else message)
        time.sleep(POLL_SECONDS)
