"""The OpenAPI document as outsiders use it, against a local stack of its own over HTTP: a client that
openapi-python-client generates from it works, and schemathesis finds every answer documented (status
code, body schema, headers)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import urllib.request
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.processes import Process, start_emulator, start_local

# Enough for each operation's documented answers, few enough that the run takes well under a minute.
EXAMPLES_PER_OPERATION = 25
GENERATOR = Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "sundial_generated_client"
NOOP = {"type": "python", "handler": "noop"}
ANSWERS: defaultdict[str, Counter[int]] = defaultdict(Counter)
CHECKS = [
    status_code_conformance,
    response_schema_conformance,
    content_type_conformance,
    response_headers_conformance,
    not_a_server_error,
]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An emulator and `sundial local` for this module alone: its jobs stay out of the others' way."""
    logs = tmp_path_factory.mktemp("contract-logs")
    processes: list[Process] = []
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SUNDIAL_EPHEMERAL", "1")  # tables in memory: each run starts empty
            emulator, endpoint_url = start_emulator(logs)
        processes.append(emulator)
        local, url = start_local(logs, "--endpoint-url", endpoint_url, "--workers", "3", name="contract")
        processes.append(local)
        yield url
    finally:
        for process in reversed(processes):
            process.stop()


# --- a generated client -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(base_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The package openapi-python-client makes from /openapi.json, offline and without formatter hooks."""
    work = tmp_path_factory.mktemp("generated")
    with urllib.request.urlopen(f"{base_url}/openapi.json", timeout=10) as answer:
        (work / "openapi.json").write_bytes(answer.read())
    (work / "config.yaml").write_text("post_hooks: []\n")
    command = [str(GENERATOR), "generate", "--path", "openapi.json", "--output-path", PACKAGE]
    command += ["--config", "config.yaml", "--meta", "none"]
    result = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr
    sys.path.insert(0, str(work))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(work))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def api(package: ModuleType, tag: str, operation: str) -> Any:
    return importlib.import_module(f"{package.__name__}.api.{tag}.{operation}")


def test_the_generated_client_drives_a_job_through_its_life(generated: ModuleType, base_url: str) -> None:
    models = importlib.import_module(f"{PACKAGE}.models")
    client = generated.Client(base_url=base_url, raise_on_unexpected_status=True)
    name = f"generated-client-{uuid.uuid4().hex}"
    spec = models.JobCreate(
        name=name,
        schedule="cron(0 9 ? * MON-FRI *)",
        timezone="Europe/Berlin",
        target=models.HttpTarget(
            type_="http",
            url="http://127.0.0.1:9/hook",
            headers=models.HttpTargetHeaders.from_dict({"Authorization": "Bearer s3cr3t"}),
        ),
    )

    created = api(generated, "jobs", "create_job").sync_detailed(client=client, body=spec)
    job = created.parsed
    got = api(generated, "jobs", "get_job").sync(job.id, client=client)
    listed = api(generated, "jobs", "list_jobs").sync(client=client, name=name.upper(), limit=10)
    paused = api(generated, "jobs", "pause_job").sync(job.id, client=client)
    resumed = api(generated, "jobs", "resume_job").sync(job.id, client=client)
    runs = api(generated, "runs", "list_job_runs").sync(job.id, client=client)
    cancelled = api(generated, "jobs", "cancel_job").sync(job.id, client=client)
    preview = api(generated, "schedules", "preview_schedule").sync(
        client=client,
        body=models.PreviewRequest.from_dict(
            {
                "schedule": "30 1 * * *",
                "timezone": "America/New_York",
                "count": 3,
                "after": "2026-10-31T00:00:00Z",
            }
        ),
    )
    health = api(generated, "service", "get_health").sync(client=client)

    assert created.status_code == 201
    assert created.headers["Location"] == f"/jobs/{job.id}"
    assert isinstance(job, models.JobView)
    assert job.target.headers.to_dict() == {"Authorization": "***"}
    assert (got.id, got.status.value, got.next_run_at is not None) == (job.id, "pending", True)
    assert [listed_job.id for listed_job in listed.jobs] == [job.id]
    assert (paused.paused, resumed.paused) == (True, False)
    assert isinstance(runs, models.RunList) and runs.runs == []
    assert cancelled.status.value == "cancelled"
    assert preview.next_runs == ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
    assert health.status == "ok"


def test_the_generated_client_parses_errors(generated: ModuleType, base_url: str) -> None:
    models = importlib.import_module(f"{PACKAGE}.models")
    client = generated.Client(base_url=base_url, raise_on_unexpected_status=True)
    bad = models.JobCreate.from_dict({"schedule": "61 * * * *", "target": NOOP})

    refused = api(generated, "jobs", "create_job").sync_detailed(client=client, body=bad)
    missing = api(generated, "jobs", "get_job").sync_detailed("01JD000000000000000000000Z", client=client)
    not_an_id = api(generated, "jobs", "get_job").sync_detailed("nope", client=client)

    assert (refused.status_code, refused.parsed.field) == (400, "schedule")
    assert isinstance(missing.parsed, models.ErrorBody) and missing.status_code == 404
    assert (not_an_id.status_code, not_an_id.parsed.field) == (400, "job_id")


# --- schemathesis: every answer documented -------------------------------------------------------------


def served_document() -> dict[str, Any]:
    """The document the api handler serves at /openapi.json, built in this process."""
    from sundial.functions.api import openapi

    document: dict[str, Any] = json.loads(openapi().body)
    return document


def test_the_stack_serves_the_document_checked_here(base_url: str) -> None:
    with urllib.request.urlopen(f"{base_url}/openapi.json", timeout=10) as answer:
        assert json.loads(answer.read()) == served_document()


@pytest.fixture(scope="module")
def live_job(base_url: str) -> str:
    """A recurring job, so that the generated ids are joined by one that exists."""
    body = json.dumps({"target": NOOP, "schedule": "rate(1 hour)"}).encode()
    request = urllib.request.Request(
        f"{base_url}/jobs", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(json.loads(answer.read())["id"])


# Loaded when the module is: schemathesis parametrizes at collection, before any fixture starts a stack.
schema = schemathesis.openapi.from_dict(served_document())


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
def test_every_answer_is_documented(case: Any, base_url: str, live_job: str) -> None:
    _loopback_only(case.body)
    _check(case, base_url)
    if "job_id" in (case.path_parameters or {}):
        # A generated id almost never exists: the same request on a job that does.
        case.path_parameters["job_id"] = live_job
        _check(case, base_url)


def _check(case: Any, base_url: str) -> None:
    response = case.call(base_url=base_url)
    ANSWERS[f"{case.method} {case.path}"][response.status_code] += 1
    case.validate_response(response, checks=CHECKS)


@pytest.fixture(scope="module", autouse=True)
def tally() -> Iterator[None]:
    yield
    total = sum(counts.total() for counts in ANSWERS.values())
    print(f"\ncontract: {total} requests")
    for operation, counts in sorted(ANSWERS.items()):
        print(f"  {operation}: {dict(sorted(counts.items()))}")


def _loopback_only(body: Any) -> None:
    """A generated http target would be called by the stack's workers: point it at a closed loopback
    port, so that no test reaches beyond this machine."""
    jobs = body.get("jobs") if isinstance(body, dict) else None
    for job in [body, *(jobs if isinstance(jobs, list) else [])]:  # a job, or POST /jobs/batch's
        target = job.get("target") if isinstance(job, dict) else None
        if isinstance(target, dict) and target.get("type") == "http" and isinstance(target.get("url"), str):
            target["url"] = "http://127.0.0.1:9/generated"
