"""Job and run items: keys, the due-index key, and conversion between items and models.

Only the store imports this module: nothing else knows how a job is laid out in DynamoDB.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from pydantic import TypeAdapter

from shared import constants as c
from shared.models import IN_FLIGHT, WAITING, Job, JobStatus, RetryPolicy, Run, RunSummary
from shared.targets.models import Target

JOB_SK = "JOB"
PAYLOAD_SK = "PAYLOAD"
RUN_PREFIX = "RUN#"
LIST_PK = "JOBS"
ALERT_PREFIX = "ALERT#"
RUN_KIND = "run"
LEASE_KIND = "lease"
ALERT_KIND = "alert"
AHEAD_KIND = "ahead"

Item = dict[str, Any]
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
_target_adapter: TypeAdapter[Target] = TypeAdapter(Target)


def job_pk(job_id: str) -> str:
    return f"JOB#{job_id}"


def job_key(job_id: str) -> dict[str, Any]:
    return {c.PARTITION_KEY: {"S": job_pk(job_id)}, c.SORT_KEY: {"S": JOB_SK}}


def idempotency_key(client_key: str) -> dict[str, Any]:
    return {c.PARTITION_KEY: {"S": f"IDEM#{client_key}"}, c.SORT_KEY: {"S": "IDEM"}}


def run_sk(scheduled_at: int, attempt: int) -> str:
    return f"{RUN_PREFIX}{scheduled_at:013d}#{attempt:03d}"


def alert_sk(scheduled_at: int, attempt: int) -> str:
    return f"{ALERT_PREFIX}{scheduled_at:013d}#{attempt:03d}"


def due_shard(priority: str, job_id: str) -> str:
    """Spreads the due index over DUE_SHARDS partitions per priority, stable for a job."""
    bucket = int.from_bytes(hashlib.blake2b(job_id.encode(), digest_size=2).digest(), "big") % c.DUE_SHARDS
    return f"{priority}#{bucket}"


def due_key(status: JobStatus, due_at: int) -> str:
    """Sorts by time; the suffix tells a run time (waiting) from a lease expiry (in flight)."""
    kind = LEASE_KIND if status in IN_FLIGHT else RUN_KIND
    return f"{due_at:013d}#{kind}"


def ahead_key(due_at: int, token: str) -> str:
    """A waiting job's row when it waits with its token: the tick sends its message from the row."""
    return f"{due_at:013d}#{AHEAD_KIND}#{token}"


def parse_due_key(value: str) -> tuple[int, str]:
    instant, kind = value.split("#")[:2]
    return int(instant), kind


def ahead_token(value: str) -> str | None:
    """The token an ahead row carries, or None for any other row."""
    parts = value.split("#")
    return parts[2] if len(parts) == 3 and parts[1] == AHEAD_KIND else None


def serialize(values: dict[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(_plain(value)) for name, value in values.items()}


def deserialize(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


def job_to_item(job: Job, write_id: str) -> dict[str, Any]:
    """A whole job item for its first write; later writes touch only what changes."""
    values: dict[str, Any] = {
        "write_id": write_id,
        c.PARTITION_KEY: job_pk(job.id),
        c.SORT_KEY: JOB_SK,
        c.LIST_PARTITION_ATTRIBUTE: LIST_PK,
        c.LIST_SORT_ATTRIBUTE: job.id,
        **job.model_dump(exclude={"target", "retry", "last_run", "payload"}, exclude_none=True),
        "target": job.target.model_dump_json(),
        "retry": job.retry.model_dump_json(),
    }
    if not job.payload_stored_apart:
        values["payload"] = json.dumps(job.payload)
    if job.due_at is not None and job.status in WAITING and job.token is not None:
        values.update(ahead_attributes(job.priority, job.id, job.due_at, job.token))
    elif job.due_at is not None and (job.status in WAITING or job.lease_until is not None):
        values.update(due_attributes(job.priority, job.id, job.status, job.lease_until or job.due_at))
    return serialize(values)


def due_attributes(priority: str, job_id: str, status: JobStatus, due_at: int) -> dict[str, str]:
    return {
        c.DUE_SHARD_ATTRIBUTE: due_shard(priority, job_id),
        c.DUE_KEY_ATTRIBUTE: due_key(status, due_at),
    }


def ahead_attributes(priority: str, job_id: str, due_at: int, token: str) -> dict[str, str]:
    return {
        c.DUE_SHARD_ATTRIBUTE: due_shard(priority, job_id),
        c.DUE_KEY_ATTRIBUTE: ahead_key(due_at, token),
    }


def sent_until_key() -> dict[str, Any]:
    return {c.PARTITION_KEY: {"S": c.SENT_UNTIL_KEY}, c.SORT_KEY: {"S": c.SENT_UNTIL_KEY}}


def item_to_job(item: dict[str, Any]) -> Job:
    values = deserialize(item)
    values["target"] = _target_adapter.validate_json(values["target"])
    values["retry"] = RetryPolicy.model_validate_json(values["retry"])
    if "payload" in values:
        values["payload"] = json.loads(values["payload"])
    if "last_run" in values:
        values["last_run"] = RunSummary.model_validate_json(values["last_run"])
    if values.pop("trigger_requested", False) and "triggers" not in values:
        values["triggers"] = 1  # written before triggers were counted; the next write of them removes it
    return Job.model_validate(values)


def run_to_item(run: Run, expires_at: int) -> dict[str, Any]:
    values = {
        c.PARTITION_KEY: job_pk(run.job_id),
        c.SORT_KEY: run_sk(run.scheduled_at, run.attempt),
        c.TTL_ATTRIBUTE: expires_at,
        **run.model_dump(exclude_none=True),
    }
    return serialize(values)


def item_to_run(item: dict[str, Any]) -> Run:
    return Run.model_validate(deserialize(item))


def alert_item(job: Job, run: RunSummary, due_at: int) -> dict[str, Any]:
    """An owed dead-job alert, in the due index so that the tick sends it if nobody else does."""
    values = {
        c.PARTITION_KEY: job_pk(job.id),
        c.SORT_KEY: alert_sk(run.scheduled_at, run.attempt),
        c.DUE_SHARD_ATTRIBUTE: due_shard(job.priority, job.id),
        c.DUE_KEY_ATTRIBUTE: f"{due_at:013d}#{ALERT_KIND}",
        "run": run.model_dump_json(exclude_none=True),
    }
    return serialize(values)


def item_to_alert(item: dict[str, Any]) -> RunSummary:
    return RunSummary.model_validate_json(deserialize(item)["run"])


def _plain(value: Any) -> Any:
    """DynamoDB's serializer refuses floats and enums; jobs hold only ints, strings and JSON text."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "value") and isinstance(value.value, str):
        return value.value
    return value


def payload_item(job_id: str, payload: Any) -> dict[str, Any]:
    return serialize(
        {c.PARTITION_KEY: job_pk(job_id), c.SORT_KEY: PAYLOAD_SK, "payload": json.dumps(payload)}
    )


def idempotency_item(record: Any) -> dict[str, Any]:
    return serialize(
        {
            c.PARTITION_KEY: f"IDEM#{record.key}",
            c.SORT_KEY: "IDEM",
            "job_id": record.job_id,
            "body_hash": record.body_hash,
            c.TTL_ATTRIBUTE: record.expires_at,
        }
    )


def plain_fields(changes: dict[str, Any]) -> dict[str, Any]:
    """Model-valued fields as the item holds them (JSON text for nested models)."""
    out: dict[str, Any] = {}
    for name, value in changes.items():
        if name in ("target", "retry", "last_run"):
            out[name] = value.model_dump_json() if value is not None else None
        elif name == "payload":
            out[name] = json.dumps(value)
        else:
            out[name] = value
    return out
