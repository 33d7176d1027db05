"""Property-based fuzzing of the API from its own OpenAPI document: no request gets a 5xx answer.

Schemathesis generates requests (valid and invalid) for every operation in /openapi.json and sends
them through the local API Gateway (a WSGI app) to the api handler, which runs against the emulator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from sundial.local_stack.gateway import api_app
from sundial.local_stack.resources import Resources
from tests.functions.conftest import api_event, invoke_api

# Small enough that the whole run takes well under a minute on the emulator.
EXAMPLES_PER_OPERATION = 30

schema = schemathesis.openapi.from_wsgi("/openapi.json", api_app())
answers: Counter[int] = Counter()


@pytest.fixture(scope="module", autouse=True)
def tally() -> Iterator[None]:
    yield
    server_errors = sum(n for status, n in answers.items() if status >= 500)
    print(f"\nfuzz: {answers.total()} requests, {server_errors} answered 5xx, by status {dict(answers)}")


@pytest.fixture
def existing_job(env: Resources) -> str:
    """A recurring job, so that generated ids are joined by one that exists."""
    body = {"target": {"type": "python", "handler": "noop"}, "schedule": "rate(1 hour)"}
    answer = invoke_api(api_event("POST", "/jobs", body))
    assert answer.status == 201
    return str(answer.body["id"])


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_no_request_gets_a_server_error(case: Any, existing_job: str) -> None:
    _send(case)
    if "job_id" in (case.path_parameters or {}):
        # The generated id almost never exists: send the same request to a real job as well.
        case.path_parameters["job_id"] = existing_job
        _send(case)


def _send(case: Any) -> None:
    response = case.call()
    answers[response.status_code] += 1
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text}"
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"type", "title", "status", "detail", "message", "field"}, body
        headers = {name.lower(): value for name, value in response.headers.items()}
        assert "application/problem+json" in headers["content-type"], headers
        assert body["status"] == response.status_code, body
