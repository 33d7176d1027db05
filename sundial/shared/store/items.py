"""Job and run items: keys, the due-index key, and conversion between items and models.

Only the store imports this module: nothing else knows how a job is laid out in DynamoDB.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from pydantic import TypeAdapter

from sundial.contract.bounds import NAME_KEY_CHARS
from sundial.contract.calendar import Calendar
from sundial.contract.targets import AlertRoute, Target
from sundial.contract.vocabulary import Health, JobStatus, Priority
from sundial.shared import constants as c
from sundial.shared.models import IN_FLIGHT, WAITING, Job, RetryPolicy, Run, RunSummary

JOB_SK = "JOB"
PAYLOAD_SK = "PAYLOAD"
RUN_PREFIX = "RUN#"
LIST_PK = "JOBS"  # by_created's one partition before it was sharded: read until the upgrade ends
ALERT_PREFIX = "ALERT#"
ROUTE_PREFIX = "ROUTE#"  # an owed alert of the job's own route (on_dead), beside the stack's
RUN_KIND = "run"
LEASE_KIND = "lease"
ALERT_KIND = "alert"
AHEAD_KIND = "ahead"

Item = dict[str, Any]
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
_target_adapter: TypeAdapter[Target] = TypeAdapter(Target)
_route_adapter: TypeAdapter[AlertRoute] = TypeAdapter(AlertRoute)


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


@dataclass(frozen=True)
class DueShards:
    """How the due index is spread: rows are written over `written` shards per priority. After a
    change of count, the rows written under the count `before` stay in their shards until a write
    moves them, so readers cover both counts until then."""

    written: int = c.DUE_SHARDS
    before: int | None = None

    def __post_init__(self) -> None:
        for count in (self.written, self.written if self.before is None else self.before):
            if not 1 <= count <= c.MAX_DUE_SHARDS:
                raise ValueError(f"a shard count must be from 1 to {c.MAX_DUE_SHARDS}, not {count}")

    @property
    def read(self) -> range:
        """Every shard a row may be in."""
        return range(max(self.written, self.before or 0))


def due_shard(priority: str, job_id: str, shards: int = c.DUE_SHARDS) -> str:
    """Spreads the due index over `shards` partitions per priority, stable for a job."""
    return f"{priority}#{shard_number(job_id, shards)}"


def shard_number(job_id: str, shards: int = c.DUE_SHARDS) -> int:
    """A job's shard, the same in every priority: a change of priority moves its row to the same
    number, whose sent mark covers it alike."""
    digest = hashlib.blake2b(job_id.encode(), digest_size=2).digest()
    return int.from_bytes(digest, "big") % shards


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


# The statuses the status index holds: those few jobs are in, which a listing could not find among
# the rest without reading them all. A job is pending, queued or running on every execution: were
# those indexed, each execution would move its key twice (4 write units, as much as the execution
# itself). Succeeded is where most one-offs end: its entry cost each one a write unit, and a listing
# of them reads mostly matches through the index of every job anyway.
INDEXED_STATUSES: frozenset[str] = frozenset({JobStatus.FAILED, JobStatus.DEAD, JobStatus.CANCELLED})
# The priority index leaves out the default priority, for the same reason: most jobs are medium, a
# row cost each create a write unit, and a listing of medium jobs finds mostly matches among every
# job; high and low, which few jobs are, keep it.
UNINDEXED_PRIORITY: Final = Priority.MEDIUM.value


def list_shard(job_id: str) -> int:
    """The listing indexes' shard of a job: stable, and independent of its due-index shard."""
    digest = hashlib.blake2b(job_id.encode(), digest_size=2, person=b"list").digest()
    return int.from_bytes(digest, "big") % c.LIST_SHARDS


def list_partition(value: str, shard: int) -> str:
    return f"{value}#{shard}"


def name_key(name: str) -> str:
    """What the name index keys on: the first characters of the case-folded name."""
    return name.casefold()[:NAME_KEY_CHARS]


def listing_attributes(job: Job) -> dict[str, str]:
    """Every listing index's key attributes for a job as it is (a create, or the upgrade's backfill)."""
    values = {
        c.LIST_PARTITION_ATTRIBUTE: list_partition("JOBS", list_shard(job.id)),
        c.LIST_SORT_ATTRIBUTE: job.id,
    }
    fields: dict[str, Any] = {
        "status": job.status,
        "priority": job.priority,
        "name": job.name,
        "health": job.health,
    }
    moved = index_moves(job.id, fields, set())
    values.update({name: value for name, value in moved.items() if value is not None})
    return values


# Which job field keys which listing index.
_INDEXED_BY = {
    "status": c.STATUS_PARTITION_ATTRIBUTE,
    "priority": c.PRIORITY_PARTITION_ATTRIBUTE,
    "name": c.NAME_PARTITION_ATTRIBUTE,
    "health": c.HEALTH_PARTITION_ATTRIBUTE,
}


def index_moves(job_id: str, sets: dict[str, Any], removes: set[str]) -> dict[str, str | None]:
    """The listing index keys that a write of these fields moves: a value, or None to leave the index
    (health ok, no name). Every write that changes an indexed field adds these to itself."""
    moves: dict[str, str | None] = {}
    shard = list_shard(job_id)
    for name, attribute in _INDEXED_BY.items():
        if name in removes:
            moves[attribute] = None
        elif name in sets:
            moves[attribute] = _index_value(name, _plain(sets[name]), shard)
    return moves


def _index_value(name: str, value: Any, shard: int) -> str | None:
    if value is None or (name == "health" and value == Health.OK.value):
        return None
    if name == "status" and value not in INDEXED_STATUSES:
        return None
    if name == "priority" and value == UNINDEXED_PRIORITY:
        return None
    if name == "name":
        value = name_key(str(value))
        if not value:
            return None
    return list_partition(str(value), shard)


def serialize(values: dict[str, Any]) -> dict[str, Any]:
    return {name: _serializer.serialize(_plain(value)) for name, value in values.items()}


def deserialize(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


def job_to_item(job: Job, write_id: str, shards: int = c.DUE_SHARDS) -> dict[str, Any]:
    """A whole job item for its first write; later writes touch only what changes."""
    values: dict[str, Any] = {
        "write_id": write_id,
        c.PARTITION_KEY: job_pk(job.id),
        c.SORT_KEY: JOB_SK,
        **listing_attributes(job),
        **job.model_dump(exclude=set(_STORED_APART) | _at_default(job), exclude_none=True),
        "target": job.target.model_dump_json(),
        "retry": job.retry.model_dump_json(),
    }
    if job.on_dead is not None:
        values["on_dead"] = job.on_dead.model_dump_json()
    if job.calendar is not None:
        values["calendar"] = job.calendar.model_dump_json()
    if not job.payload_stored_apart:
        values["payload"] = json.dumps(job.payload)
    if job.due_at is not None and job.status in WAITING and job.token is not None:
        values.update(ahead_attributes(job.priority, job.id, job.due_at, job.token, shards))
    elif job.due_at is not None and (job.status in WAITING or job.lease_until is not None):
        due_at = job.lease_until or job.due_at
        values.update(due_attributes(job.priority, job.id, job.status, due_at, shards))
    return serialize(values)


# Stored as JSON of their own: the target, the retry policy, the last run, the payload, the route,
# the calendar.
_STORED_APART = frozenset({"target", "retry", "last_run", "payload", "on_dead", "calendar"})
# Fields most jobs keep at their default, stored only once they differ: a job item stays within one
# write unit (1 KB) for longer, and an item without them reads as the default.
# Only state that starts empty is left out, never a policy whose default a later version could
# change: an item without it would take the new default.
_UNSTORED_DEFAULTS: dict[str, Any] = {
    "missed": 0,
    "alert_on_missed": False,
    "backfill_run": False,
    "payload_stored_apart": False,
    "cancel_requested": False,
    "paused": False,
    "extra_run": False,
    "backfill": (),
    "triggers": 0,
    "retried_after": 0,
    "window_seconds": 0,
    "consecutive_failures": 0,
}


def _at_default(job: Job) -> set[str]:
    return {name for name, default in _UNSTORED_DEFAULTS.items() if getattr(job, name) == default}


def due_attributes(
    priority: str, job_id: str, status: JobStatus, due_at: int, shards: int = c.DUE_SHARDS
) -> dict[str, str]:
    return {
        c.DUE_SHARD_ATTRIBUTE: due_shard(priority, job_id, shards),
        c.DUE_KEY_ATTRIBUTE: due_key(status, due_at),
    }


def ahead_attributes(
    priority: str, job_id: str, due_at: int, token: str, shards: int = c.DUE_SHARDS
) -> dict[str, str]:
    return {
        c.DUE_SHARD_ATTRIBUTE: due_shard(priority, job_id, shards),
        c.DUE_KEY_ATTRIBUTE: ahead_key(due_at, token),
    }


SENT_MARK_PREFIX = "SHARD#"
SENT_UNTIL, SENT_WITHIN = "sent_until", "sent_within"


def send_position(priority: str, due_key: str) -> str:
    """Where the tick takes a row in its order (earliest second first, high before medium before low
    within a second, then by row): within one shard number, a text that sorts as the tick goes."""
    due_at = parse_due_key(due_key)[0]
    return f"{due_at // 1000:010d}#{c.PRIORITIES.index(Priority(priority))}#{due_key}"


def sent_mark_key(shard: int | None) -> dict[str, Any]:
    """A shard's sent mark; None names the one mark of all shards that earlier versions kept."""
    sort_key = c.SENT_UNTIL_KEY if shard is None else f"{SENT_MARK_PREFIX}{shard}"
    return {c.PARTITION_KEY: {"S": c.SENT_UNTIL_KEY}, c.SORT_KEY: {"S": sort_key}}


def item_to_job(item: dict[str, Any]) -> Job:
    values = deserialize(item)
    values["target"] = _target_adapter.validate_json(values["target"])
    values["retry"] = RetryPolicy.model_validate_json(values["retry"])
    if "payload" in values:
        values["payload"] = json.loads(values["payload"])
    if "last_run" in values:
        values["last_run"] = RunSummary.model_validate_json(values["last_run"])
    if "on_dead" in values:
        values["on_dead"] = _route_adapter.validate_json(values["on_dead"])
    if "calendar" in values:
        values["calendar"] = Calendar.model_validate_json(values["calendar"])
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


def alert_item(job: Job, run: RunSummary, due_at: int, shards: int = c.DUE_SHARDS) -> dict[str, Any]:
    """An owed dead-job alert, in the due index so that the tick sends it if nobody else does."""
    values = {
        c.PARTITION_KEY: job_pk(job.id),
        c.SORT_KEY: alert_sk(run.scheduled_at, run.attempt),
        c.DUE_SHARD_ATTRIBUTE: due_shard(job.priority, job.id, shards),
        c.DUE_KEY_ATTRIBUTE: alert_due_key(due_at),
        "run": run.model_dump_json(exclude_none=True),
    }
    return serialize(values)


def item_to_alert(item: dict[str, Any]) -> RunSummary:
    return RunSummary.model_validate_json(deserialize(item)["run"])


def alert_due_key(due_at: int) -> str:
    return f"{due_at:013d}#{ALERT_KIND}"


# Most of an item's values, looked up by their exact type before the checks below: every write
# serializes its values, a million of them for a million jobs placed at once.
_ALREADY_PLAIN = frozenset({str, int, bool, type(None)})


def _plain(value: Any) -> Any:
    """DynamoDB's serializer refuses floats and enums; jobs hold only ints, strings and JSON text."""
    if type(value) in _ALREADY_PLAIN:
        return value
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
        if name in ("target", "retry", "last_run", "on_dead", "calendar"):
            out[name] = value.model_dump_json() if value is not None else None
        elif name == "payload":
            out[name] = json.dumps(value)
        else:
            out[name] = value
    return out
