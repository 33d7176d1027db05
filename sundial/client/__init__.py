"""A typed Python client of the Sundial HTTP API v1 (docs/client.md).

    from sundial.client import SundialClient

    client = SundialClient("http://127.0.0.1:8000")
    job = client.create_job({"name": "hello", "target": {"type": "python", "handler": "noop"}})
    for run in client.iter_runs(job.id):
        print(run.status)

Importable without the local stack or its emulator: it needs pydantic, botocore and the API's models.
"""

from __future__ import annotations

from sundial.client.client import Health, SundialClient, TaggedJob
from sundial.client.errors import (
    ApiError,
    Conflict,
    InvalidInput,
    NotFound,
    PreconditionFailed,
    ServerError,
    Throttled,
    Unauthorized,
    Unreachable,
)
from sundial.client.signing import execute_api_region
from sundial.client.stack import api_url_of_stack
from sundial.client.transport import Answer, RetryPolicy
from sundial.client.wire import LOCAL_API_URL
from sundial.contract.bulk import BatchAnswer, BatchItem, OperationView
from sundial.contract.calendar import Calendar
from sundial.contract.jobs import (
    BackfillView,
    JobCreate,
    JobList,
    JobUpdate,
    JobView,
    PreviewRequest,
    PreviewResponse,
    RunList,
    RunView,
)
from sundial.contract.limits import LimitList, LimitPut, LimitView
from sundial.contract.occurrences import OccurrenceList, OccurrenceView

__all__ = [
    "LOCAL_API_URL",
    "Answer",
    "ApiError",
    "BackfillView",
    "BatchAnswer",
    "BatchItem",
    "Calendar",
    "Conflict",
    "Health",
    "InvalidInput",
    "JobCreate",
    "JobList",
    "JobUpdate",
    "JobView",
    "LimitList",
    "LimitPut",
    "LimitView",
    "NotFound",
    "OccurrenceList",
    "OccurrenceView",
    "OperationView",
    "PreconditionFailed",
    "PreviewRequest",
    "PreviewResponse",
    "RetryPolicy",
    "RunList",
    "RunView",
    "ServerError",
    "SundialClient",
    "TaggedJob",
    "Throttled",
    "Unauthorized",
    "Unreachable",
    "api_url_of_stack",
    "execute_api_region",
]
