"""A small client for the local stack's HTTP API (docs/api.md), on the standard library alone."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
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

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        timeout: float = 10,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.base_url}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def create(self, **fields: Any) -> Json:
        status, job = self.call("POST", "/jobs", fields)
        assert status == 201, job
        return dict(job)

    def create_idempotently(self, key: str, fields: Json, attempts: int = 6) -> tuple[int, Any, int]:
        """POST /jobs with an Idempotency-Key, sent again with the same key after a 5xx, as a careful
        client does. Returns the last (status, body) and how many 5xx answers came before it."""
        for n in range(attempts):
            status, body = self.call("POST", "/jobs", fields, headers={"Idempotency-Key": key})
            if status < 500 or n == attempts - 1:
                return status, body, n
            time.sleep(0.2 * (n + 1))
        raise AssertionError("unreachable")

    def all_jobs(self) -> list[Json]:
        """Every job, newest first, page by page; a page answered 5xx is asked for again."""
        jobs: list[Json] = []
        token: str | None = None
        while True:
            query = "/jobs?limit=100" + (f"&next_token={urllib.parse.quote(token)}" if token else "")
            status, page = self.call_patiently("GET", query)
            assert status == 200, page
            jobs.extend(page["jobs"])
            token = page.get("next_token")
            if not token:
                return jobs

    def call_patiently(
        self, method: str, path: str, body: Any = None, attempts: int = 5, timeout: float = 30
    ) -> tuple[int, Any]:
        """A call sent again after a 5xx, and given longer to answer: for reads and calls that may
        safely repeat, on a faulty or busy stack."""
        for n in range(attempts):
            status, answer = self.call(method, path, body, timeout)
            if status < 500 or n == attempts - 1:
                return status, answer
            time.sleep(0.2 * (n + 1))
        raise AssertionError("unreachable")

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
