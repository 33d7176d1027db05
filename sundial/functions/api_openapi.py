"""The API's OpenAPI document: a resolver whose document lists what the API answers, and the
success answers, examples and error answers each route declares (docs/api.md)."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.models import Example, OpenAPI, Tag
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel

from sundial.contract.jobs import JOB_ID_EXAMPLE, JOB_ID_PATTERN, JobView
from sundial.functions.api_errors import documented

# The path parameter every /jobs/{id} route takes.
JobId = Annotated[
    str,
    Path(
        pattern=JOB_ID_PATTERN,
        description="The job's id, as its create answered it: a 26-character ULID.",
        examples=[JOB_ID_EXAMPLE],
    ),
]

# Powertools' validation answers, which this API never gives: a bad request is a 400 and a response
# that fails its model a 500, both with the error body (sundial/functions/api_errors.py).
_UNUSED_SCHEMAS = ("HTTPValidationError", "ValidationError", "ResponseValidationError")

TAGS: list[Tag | str] = [
    Tag(
        name="jobs", description="Create, read, list, change, pause, resume, trigger, retry and cancel jobs."
    ),
    Tag(name="runs", description="A job's attempt history."),
    Tag(name="schedules", description="What a schedule does, before a job uses it."),
    Tag(name="service", description="Whether the API is up, and what the scheduler is doing."),
    Tag(name="limits", description="Limits per key: how hard the jobs naming a key may hit its target."),
]


class Resolver(APIGatewayRestResolver):
    """Powertools' REST resolver, with two corrections.

    Its document lists a 422 for every route, the answer its own validation gives; this API answers
    400 (sundial/functions/api_errors.py), so the document drops it. And its routes end in `$`, which also
    matches before a final newline: "/jobs/\\n" would be the job list; here they end in `\\Z`.
    """

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> OpenAPI:
        document: OpenAPI = super().get_openapi_schema(*args, **kwargs)
        for item in (document.paths or {}).values():
            for method in ("get", "put", "post", "delete", "patch"):
                operation = getattr(item, method)
                if operation is not None and operation.responses:
                    operation.responses.pop(HTTPStatus.UNPROCESSABLE_ENTITY.value, None)
        schemas = document.components.schemas if document.components else None
        for name in _UNUSED_SCHEMAS:
            (schemas or {}).pop(name, None)
        return document

    @staticmethod
    def _compile_regex(rule: str, base_regex: str = "") -> re.Pattern[str]:
        anchored: re.Pattern[str] = APIGatewayRestResolver._compile_regex(rule)
        return re.compile(anchored.pattern.removesuffix("$") + r"\Z")


def answers(
    status: HTTPStatus,
    model: type[BaseModel],
    description: str,
    example: Any,
    *errors: HTTPStatus,
) -> dict[int, OpenAPIResponse]:
    """A route's documented answers: its success with `model` and an example, then its errors."""
    content: Any = {"application/json": {"model": model, "examples": {"example": {"value": example}}}}
    return {status.value: {"description": description, "content": content}, **documented(*errors)}


# Every answer that carries one job carries its entity tag (docs/api.md, "ETag and If-Match").
ETAG: Any = {
    "description": "The job's revision as a strong entity tag: sent back as If-Match, the call acts only "
    "on the job as this answer shows it.",
    "schema": {"type": "string"},
    "required": True,
    "example": '"7"',
}


def job_answers(description: str, example: Any, *errors: HTTPStatus) -> dict[int, OpenAPIResponse]:
    """The answers of a route whose success carries one job: 200 with its ETag, then its errors."""
    content: Any = {"application/json": {"model": JobView, "examples": {"example": {"value": example}}}}
    success: OpenAPIResponse = {"description": description, "headers": {"ETag": ETAG}, "content": content}
    return {HTTPStatus.OK.value: success, **documented(*errors)}


def created(model: type[BaseModel], example: Any, *errors: HTTPStatus) -> dict[int, OpenAPIResponse]:
    """POST /jobs: 201 with a Location header, 200 for a replay of an Idempotency-Key; both with the
    job's ETag."""
    content: Any = {"application/json": {"model": model, "examples": {"example": {"value": example}}}}
    location: Any = {
        "description": "The job's URL path: /jobs/{id}, behind the stage's path when deployed.",
        "schema": {"type": "string"},
        "example": f"/v1/jobs/{JOB_ID_EXAMPLE}",
    }
    return {
        HTTPStatus.CREATED.value: {
            "description": "Created: the job as stored.",
            "headers": {"Location": location, "ETag": ETAG},
            "content": content,
        },
        HTTPStatus.OK.value: {
            "description": "The job an earlier request with the same Idempotency-Key and body created, "
            "within 24 hours; nothing new is stored.",
            "headers": {"ETag": ETAG},
            "content": content,
        },
        **documented(*errors),
    }


def example(summary: str, value: Any) -> Example:
    return Example(summary=summary, value=value)


JOB = {
    "id": JOB_ID_EXAMPLE,
    "name": "daily-report",
    "status": "pending",
    "schedule": "cron(0 9 ? * MON-FRI *)",
    "timezone": "Europe/Berlin",
    "run_at": None,
    "next_run_at": "2026-12-01T08:00:00Z",
    "priority": "high",
    "target": {
        "type": "http",
        "url": "https://reports.example.com/run",
        "method": "POST",
        "headers": {
            "Authorization": {
                "secret": "arn:aws:secretsmanager:eu-west-1:111122223333:secret:reports/token-AbCdEf",
                "json_key": None,
            },
            "X-Team": "***",
        },
    },
    "payload": {"report": "sales"},
    "max_retries": 5,
    "backoff": [5, 30, 120, 600, 3600],
    "timeout_seconds": 300,
    "attempt": 0,
    "paused": False,
    "misfire_policy": "run_once",
    "overlap_policy": "skip",
    "start_at": None,
    "end_at": None,
    "last_run": {
        "scheduled_at": "2026-11-30T08:00:00Z",
        "status": "succeeded",
        "started_at": "2026-11-30T08:00:00.012Z",
        "finished_at": "2026-11-30T08:00:01.250Z",
        "error": None,
    },
    "created_at": "2026-11-01T10:00:00Z",
    "updated_at": "2026-11-30T08:00:01.251Z",
}
RUNS = {
    "runs": [
        {
            "scheduled_at": "2026-11-30T08:00:00Z",
            "attempt": 2,
            "status": "succeeded",
            "started_at": "2026-11-30T08:00:05.020Z",
            "finished_at": "2026-11-30T08:00:06.100Z",
            "error": None,
            "worker": "worker-high-3",
        },
        {
            "scheduled_at": "2026-11-30T08:00:00Z",
            "attempt": 1,
            "status": "failed",
            "started_at": "2026-11-30T08:00:00.012Z",
            "finished_at": "2026-11-30T08:00:00.400Z",
            "error": "http POST https://reports.example.com/run answered 503",
            "worker": "worker-high-1",
        },
    ],
    "next_token": None,
}

CREATE_EXAMPLES = {
    "recurring": example(
        "A weekday report at 9:00 in Berlin, to an https endpoint with a secret header",
        {
            "name": "daily-report",
            "schedule": "cron(0 9 ? * MON-FRI *)",
            "timezone": "Europe/Berlin",
            "priority": "high",
            "target": {
                "type": "http",
                "url": "https://reports.example.com/run",
                "headers": {
                    "Authorization": {
                        "secret": "arn:aws:secretsmanager:eu-west-1:111122223333:secret:reports/token-AbCdEf"
                    },
                    "X-Team": "finance",
                },
            },
            "payload": {"report": "sales"},
        },
    ),
    "one-off": example(
        "A one-off run of a registered python handler, with two retries",
        {
            "name": "in-ten-seconds",
            "run_at": "2026-12-01T09:00:10Z",
            "max_retries": 2,
            "backoff": [2, 4],
            "target": {"type": "python", "handler": "noop"},
        },
    ),
    "sqs": example(
        "Every 5 minutes, a message on a queue of yours",
        {
            "schedule": "rate(5 minutes)",
            "target": {
                "type": "sqs",
                "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/reports",
            },
        },
    ),
    "lambda": example(
        "Hourly, a Lambda function's live alias",
        {
            "schedule": "0 * * * *",
            "target": {
                "type": "lambda",
                "function_arn": "arn:aws:lambda:eu-west-1:123456789012:function:rollup:live",
            },
        },
    ),
}
UPDATE_EXAMPLES = {
    "rename-and-reprioritise": example(
        "A new name and priority", {"name": "weekly-report", "priority": "low"}
    ),
    "reschedule": example(
        "New timing, from the next occurrence on",
        {"schedule": "cron(0 7 ? * MON *)", "timezone": "Europe/Berlin"},
    ),
}
PREVIEW_EXAMPLES = {
    "dst": example(
        "A fixed-hour job on the fall-back night runs once",
        {
            "schedule": "30 1 * * *",
            "timezone": "America/New_York",
            "count": 3,
            "after": "2026-10-31T00:00:00Z",
        },
    ),
    "holidays": example(
        "Daily at 09:00 but on German public holidays, with what the calendar passed over",
        {
            "schedule": "0 9 * * *",
            "timezone": "UTC",
            "calendar": {"holidays": "DE"},
            "count": 4,
            "after": "2026-12-22T00:00:00Z",
            "explain": True,
        },
    ),
}
PREVIEW = {
    "next_runs": ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"],
    "starts": ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"],
}

BATCH_EXAMPLES = {
    "two": example(
        "Two jobs, each with its own idempotency key",
        {
            "jobs": [
                {"idempotency_key": "import-1", "name": "a", "target": {"type": "python", "handler": "noop"}},
                {"idempotency_key": "import-2", "name": "b", "schedule": "rate(5 minutes)"},
            ]
        },
    ),
}
BATCH_ANSWER = {
    "results": [
        {"index": 0, "status": 201, "job": JOB, "error": None},
        {
            "index": 1,
            "status": 400,
            "job": None,
            "error": {"message": "jobs[1].target: Field required", "field": "jobs[1].target"},
        },
    ],
    "created": 1,
    "existing": 0,
    "refused": 1,
}
ACTION_EXAMPLES = {
    "filter": example("Cancel every dead job", {"action": "cancel", "filter": {"status": "dead"}}),
    "ids": example(
        "Pause two jobs", {"action": "pause", "ids": [JOB_ID_EXAMPLE, "01JDQ8ZK7N4V3M2X1W0Y9T8S7R"]}
    ),
}
OPERATION = {
    "id": "01JDR0A4M5N6P7Q8R9S0T1V2W3",
    "action": "cancel",
    "filter": {"status": "dead"},
    "ids": None,
    "state": "running",
    "done": 100,
    "refused": 1,
    "left": 2399,
    "left_is_estimate": True,
    "refusals": [{"job_id": JOB_ID_EXAMPLE, "message": f"job '{JOB_ID_EXAMPLE}' not found"}],
    "who": "arn:aws:sts::111122223333:assumed-role/ops/alice",
    "created_at": "2026-12-01T09:00:00Z",
    "updated_at": "2026-12-01T09:00:02.120Z",
    "finished_at": None,
}

BACKFILL_EXAMPLES = {
    "window": {
        "summary": "The week before the job existed",
        "value": {"from": "2026-11-23T00:00:00Z", "to": "2026-11-30T00:00:00Z"},
    },
    "dry_run": {
        "summary": "What would run, nothing recorded",
        "value": {"from": "2026-11-23T00:00:00Z", "to": "2026-11-30T00:00:00Z", "dry_run": True},
    },
}
BACKFILL = {
    "job_id": JOB_ID_EXAMPLE,
    "from": "2026-11-23T00:00:00Z",
    "to": "2026-11-30T00:00:00Z",
    "instants": ["2026-11-27T08:00:00Z", "2026-11-28T08:00:00Z", "2026-11-29T08:00:00Z"],
    "skipped": [],
    "already": [
        "2026-11-23T08:00:00Z",
        "2026-11-24T08:00:00Z",
        "2026-11-25T08:00:00Z",
        "2026-11-26T08:00:00Z",
    ],
    "dry_run": False,
    "job": JOB | {"status": "queued"},
}
