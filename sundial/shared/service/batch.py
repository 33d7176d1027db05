"""POST /jobs/batch: up to 100 creates, each the same create as POST /jobs, each answered on its own.

Each item goes through JobService.create: the same validation, and the same conditional writes (the
Idempotency-Key's reservation, then the job's put if absent). BatchWriteItem takes no conditions,
and a transaction per item would pay double for what the reservation already makes safe to repeat;
the items are independent, so they are written side by side. Their messages go ten to a
SendMessageBatch (JobService.sends_gathered), each after its job's write.

A throttle the SDK's own retries did not ride out refuses its item with a 429 rather than failing
the request: the items made stand and are answered, and the items not yet begun are refused the
same way without a write, so that a table over its throughput sheds the load at once and the caller
sends only what was refused, with the same keys, after a pause.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError
from pydantic import ValidationError

from sundial.contract.bounds import IDEMPOTENCY_KEY_MEMBER
from sundial.contract.bulk import BatchAnswer, BatchItem
from sundial.contract.errors import ErrorBody
from sundial.contract.jobs import JobCreate
from sundial.shared.engine.patience import error_code, throttled
from sundial.shared.errors import Conflict, InvalidInput, PayloadTooLarge, SundialError
from sundial.shared.service.bodies import field_name
from sundial.shared.service.service import JobService

# Creates in flight at once: each waits on a few DynamoDB round trips.
WRITERS = 8
KEY_LIMIT = 128
AGAIN = "send it again, with its idempotency key, after a pause"


def create_batch(service: JobService, jobs: list[Any]) -> BatchAnswer:
    shedding = threading.Event()
    with (
        service.sends_gathered() as gathering,
        ThreadPoolExecutor(max_workers=min(WRITERS, len(jobs)), thread_name_prefix="batch") as pool,
    ):
        results = list(pool.map(lambda pair: _create_one(gathering, shedding, *pair), enumerate(jobs)))
    counted = [result.status for result in results]
    return BatchAnswer(
        results=results,
        created=counted.count(201),
        existing=counted.count(200),
        refused=sum(status >= 400 for status in counted),
    )


def _create_one(service: JobService, shedding: threading.Event, index: int, body: Any) -> BatchItem:
    where = f"jobs[{index}]"
    if not isinstance(body, dict):
        return _refused(index, 400, f"{where} must be a JSON object: a job as POST /jobs takes it", where)
    fields = dict(body)
    key = fields.pop(IDEMPOTENCY_KEY_MEMBER, None)
    if key is not None and not (isinstance(key, str) and 1 <= len(key) <= KEY_LIMIT):
        field = f"{where}.{IDEMPOTENCY_KEY_MEMBER}"
        return _refused(index, 400, f"{field} must be a string of 1-{KEY_LIMIT} characters", field)
    try:
        spec = JobCreate.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        inner = field_name(tuple(first.get("loc", ())), fields)
        field = f"{where}.{inner}" if inner else where
        return _refused(index, 400, f"{field}: {first.get('msg', 'is not valid')}", field)
    if shedding.is_set():
        return _refused(index, 429, f"{where} was not made: the table is throttling writes; {AGAIN}", where)
    try:
        view, created = service.create(spec, key)
    except ClientError as exc:
        if not throttled(exc):
            raise
        shedding.set()
        message = f"{where} was not made: the table is throttling writes ({error_code(exc)}); {AGAIN}"
        return _refused(index, 429, message, where)
    except SundialError as exc:
        inner = IDEMPOTENCY_KEY_MEMBER if exc.field == "Idempotency-Key" else exc.field
        field = f"{where}.{inner}" if inner else where
        return _refused(index, _status(exc), exc.message, field)
    return BatchItem(index=index, status=201 if created else 200, job=view)


def _status(exc: SundialError) -> int:
    if isinstance(exc, PayloadTooLarge):
        return 413
    if isinstance(exc, InvalidInput):
        return 400
    if isinstance(exc, Conflict):
        return 409
    raise exc  # anything else is no refusal of this item's: the whole request fails as a 500


def _refused(index: int, status: int, message: str, field: str) -> BatchItem:
    # The item's error is problem details of the item's own status, as a single create's would be.
    return BatchItem(index=index, status=status, error=ErrorBody.of(status, message, field))
