"""The OpenAPI document at /openapi.json: valid OpenAPI 3.1, and for every operation what it answers on
success, exactly the errors it answers, a summary, a description, a tag, an operationId and examples."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate

from tests.functions.conftest import Api

JOB = "#/components/schemas/JobView"
ERROR = "#/components/schemas/ErrorBody"
OPERATION = "#/components/schemas/OperationView"

# (method, path): operationId, tag, {success status: schema}, error statuses
OPERATIONS: dict[tuple[str, str], tuple[str, str, dict[str, str], set[str]]] = {
    ("post", "/jobs"): ("create_job", "jobs", {"201": JOB, "200": JOB}, {"400", "409", "413", "415"}),
    ("get", "/jobs"): ("list_jobs", "jobs", {"200": "#/components/schemas/JobList"}, {"400"}),
    ("get", "/jobs/{job_id}"): ("get_job", "jobs", {"200": JOB}, {"400", "404"}),
    ("patch", "/jobs/{job_id}"): (
        "update_job",
        "jobs",
        {"200": JOB},
        {"400", "404", "409", "412", "413", "415"},
    ),
    ("delete", "/jobs/{job_id}"): ("cancel_job", "jobs", {"200": JOB}, {"400", "404", "409", "412"}),
    ("post", "/jobs/{job_id}/pause"): ("pause_job", "jobs", {"200": JOB}, {"400", "404", "409", "412"}),
    ("post", "/jobs/{job_id}/resume"): ("resume_job", "jobs", {"200": JOB}, {"400", "404", "409", "412"}),
    ("post", "/jobs/{job_id}/trigger"): ("trigger_job", "jobs", {"200": JOB}, {"400", "404", "409", "412"}),
    ("post", "/jobs/{job_id}/retry"): ("retry_job", "jobs", {"200": JOB}, {"400", "404", "409", "412"}),
    ("get", "/jobs/{job_id}/runs"): (
        "list_job_runs",
        "runs",
        {"200": "#/components/schemas/RunList"},
        {"400", "404"},
    ),
    ("post", "/schedules/preview"): (
        "preview_schedule",
        "schedules",
        {"200": "#/components/schemas/PreviewResponse"},
        {"400", "415"},
    ),
    ("get", "/health"): ("get_health", "service", {"200": "#/components/schemas/HealthView"}, set()),
    ("post", "/jobs/batch"): (
        "create_jobs",
        "jobs",
        {"200": "#/components/schemas/BatchAnswer"},
        {"400", "415"},
    ),
    ("post", "/jobs/actions"): ("start_action", "jobs", {"202": OPERATION}, {"400", "415"}),
    ("get", "/jobs/actions/{operation_id}"): ("get_action", "jobs", {"200": OPERATION}, {"400", "404"}),
}


@pytest.fixture
def document(api: Api) -> dict[str, Any]:
    answer = api("GET", "/openapi.json")
    assert answer.status == 200
    body: dict[str, Any] = answer.body
    return body


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validate(document)
    assert document["openapi"].startswith("3.1")


@pytest.mark.parametrize(("method", "path"), list(OPERATIONS), ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_each_operation_documents_what_it_answers(document: dict[str, Any], method: str, path: str) -> None:
    operation_id, tag, successes, errors = OPERATIONS[(method, path)]
    operation = document["paths"][path][method]

    assert operation["operationId"] == operation_id
    assert operation["tags"] == [tag]
    assert operation["summary"] and operation["summary"] != f"{method.upper()} {path}"
    assert len(operation["description"]) > 20
    assert set(operation["responses"]) == set(successes) | errors
    for status, schema in successes.items():
        content = operation["responses"][status]["content"]["application/json"]
        assert content["schema"] == {"$ref": schema}
        assert content["examples"]
    for status in errors:
        content = operation["responses"][status]["content"]["application/problem+json"]
        assert content["schema"] == {"$ref": ERROR}
        example = content["examples"]["example"]["value"]
        assert example["message"] and example["detail"] == example["message"]
        assert (example["status"], example["type"]) == (int(status), "about:blank")
    if successes == {"200": JOB}:
        assert operation["responses"]["200"]["headers"]["ETag"]["required"] is True
    if {"412"} <= errors:
        [condition] = [p for p in operation["parameters"] if p["name"].lower() == "if-match"]
        assert condition["in"] == "header" and condition["description"]


def test_create_documents_location_and_request_examples(document: dict[str, Any]) -> None:
    create = document["paths"]["/jobs"]["post"]

    assert set(create["responses"]["201"]["headers"]) == {"Location", "ETag"}
    assert set(create["responses"]["200"]["headers"]) == {"ETag"}  # a replay has no Location
    assert {"recurring", "one-off"} <= set(create["requestBody"]["content"]["application/json"]["examples"])
    assert document["paths"]["/jobs/{job_id}"]["patch"]["requestBody"]["content"]["application/json"][
        "examples"
    ]
    assert document["paths"]["/schedules/preview"]["post"]["requestBody"]["content"]["application/json"][
        "examples"
    ]


def test_the_error_body_is_documented(document: dict[str, Any]) -> None:
    error = document["components"]["schemas"]["ErrorBody"]

    # RFC 9457 problem details, with the members answered before them.
    assert set(error["required"]) == {"type", "title", "status", "detail", "message", "field"}
    assert set(error["properties"]) == {"type", "title", "status", "detail", "message", "field"}
    assert all(member["description"] for member in error["properties"].values())


def test_no_operation_documents_a_422_or_lacks_a_success(api: Api, document: dict[str, Any]) -> None:
    embedded = api("GET", "/docs", query={"format": "json"}).body  # what the /docs page renders

    for served in (document, embedded):
        assert not {"HTTPValidationError", "ValidationError", "ResponseValidationError"} & set(
            served["components"]["schemas"]
        )
        for path, item in served["paths"].items():
            for method, operation in item.items():
                assert "422" not in operation["responses"], (method, path)
                assert any(status.startswith("2") for status in operation["responses"]), (method, path)
                assert operation["summary"] and operation["tags"] and operation["operationId"], (method, path)


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "field"),
    [
        ("POST", "/jobs", {"body": {"target": {"type": "python"}}}, "target.handler"),
        ("POST", "/jobs", {"raw_body": "{"}, "body"),
        ("GET", "/jobs", {"query": {"limit": "x"}}, "limit"),
        ("POST", "/jobs", {"body": {"target": {}}, "headers": {"Idempotency-Key": ""}}, "Idempotency-Key"),
        ("GET", "/jobs/x/runs", {}, "job_id"),
        ("POST", "/schedules/preview", {"body": {"count": "many"}}, "schedule"),
    ],
    ids=["body-field", "body", "query", "header", "path", "preview"],
)
def test_a_request_that_fails_validation_is_a_400_never_a_422(
    api: Api, method: str, path: str, kwargs: dict[str, Any], field: str
) -> None:
    body = kwargs.pop("body", None)
    answer = api(method, path, body, **kwargs)

    assert answer.status == 400
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert set(answer.body) == {"type", "title", "status", "detail", "message", "field"}
    assert answer.body["field"] == field


def test_an_answer_that_fails_its_own_model_is_a_500(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def preview(self, _: Any) -> dict[str, Any]:
            return {"next_runs": "not a list"}

    monkeypatch.setattr("sundial.functions.api._service", Broken)

    answer = api("POST", "/schedules/preview", {"schedule": "rate(1 hour)"})

    assert answer.status == 500
    assert answer.body.items() >= {"message": "internal error; it has been logged", "field": None}.items()
