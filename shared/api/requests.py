"""Reading API requests into domain values: what a PATCH changes, time fields as epoch ms, filters.

Every refusal is InvalidInput naming the field the client wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from shared import constants as c
from shared.api.models import JobUpdate
from shared.clock import to_epoch_ms
from shared.errors import InvalidInput, PayloadTooLarge
from shared.models import Job, JobStatus, OverlapPolicy, RetryPolicy
from shared.schedules import check_window, parse_schedule, parse_timezone

# A job's name is at most 200 characters, so a longer filter could match none.
NAME_FILTER_LIMIT = 200
RETRY_FIELDS = ("max_retries", "backoff", "timeout_seconds")
TIMING_FIELDS = ("schedule", "timezone", "run_at", "start_at", "end_at")
# A PATCH may clear name, payload and the window; these have no "unset" state.
NOT_NULLABLE = (
    *RETRY_FIELDS,
    "schedule",
    "timezone",
    "run_at",
    "priority",
    "misfire_policy",
    "overlap_policy",
)


def changes_of(job: Job, patch: JobUpdate) -> dict[str, Any]:
    """The fields a PATCH changes, validated. Raises InvalidInput (or PayloadTooLarge) naming the field."""
    sent = patch.model_dump(include=patch.model_fields_set)
    refuse_nulls(sent)
    refuse_allow(patch.overlap_policy)
    if patch.run_at is not None and patch.schedule is not None:
        raise InvalidInput("run_at and schedule are exclusive: send one", field="run_at")
    changes: dict[str, Any] = timing({k: v for k, v in sent.items() if k in TIMING_FIELDS}, None)
    if patch.run_at is not None:
        changes["schedule"] = None
    if "schedule" in changes and changes["schedule"] is not None:
        changes["run_at"] = None
    for name in ("name", "priority", "misfire_policy", "overlap_policy"):
        if name in sent:
            changes[name] = sent[name]
    if any(name in sent for name in RETRY_FIELDS):
        retry = {name: sent[name] if name in sent else getattr(job.retry, name) for name in RETRY_FIELDS}
        changes["retry"] = RetryPolicy(**retry)
    if "payload" in sent:
        size = len(payload_json(patch.payload).encode())
        if size > c.PAYLOAD_LIMIT_BYTES:
            raise PayloadTooLarge(f"payload is {size} bytes; the limit is 256 KiB", field="payload")
        changes["payload"] = patch.payload
        changes["payload_stored_apart"] = size > c.INLINE_PAYLOAD_BYTES
    return changes


def refuse_allow(policy: OverlapPolicy | None) -> None:
    if policy is OverlapPolicy.ALLOW:
        raise InvalidInput(
            "overlap_policy 'allow' (occurrences side by side) is not available; use 'buffer' to run "
            "an occurrence that falls due during the previous one right after it, or 'skip' to drop it",
            field="overlap_policy",
        )


def timing(values: dict[str, Any], now_ms: int | None) -> dict[str, Any]:
    """Datetimes to epoch ms; the time zone and schedule validated (InvalidInput names the field)."""
    out = {k: (to_epoch_ms(v) if hasattr(v, "tzinfo") else v) for k, v in values.items()}
    if out.get("timezone") is not None:
        parse_timezone(out["timezone"])
    if out.get("schedule") is not None:
        parse_schedule(out["schedule"], out.get("timezone") or "UTC")
    if now_ms is not None and out.get("schedule") is None and out.get("run_at") is None:
        out["run_at"] = now_ms
    return out


def refuse_nulls(sent: dict[str, Any]) -> None:
    nulled = [name for name in NOT_NULLABLE if name in sent and sent[name] is None]
    if nulled:
        raise InvalidInput(f"{nulled[0]} cannot be null; leave it out to keep it as it is", field=nulled[0])


def check_job_window(job: Job) -> None:
    check_window(job.start_at, job.end_at)


def list_filter(status: str | None, priority: str | None, name: str | None) -> Callable[[Job], bool] | None:
    """What GET /jobs keeps, or None to keep every job. `name` is a case-insensitive substring of the
    job's name: a search box finds "nightly-report-eu" by "report" as well as by "nightly"."""
    if status is not None and status not in {s.value for s in JobStatus}:
        raise InvalidInput(
            f"status '{status}' is not one of {', '.join(s.value for s in JobStatus)}", field="status"
        )
    if priority is not None and priority not in {p.value for p in c.Priority}:
        raise InvalidInput(f"priority '{priority}' is not one of high, medium, low", field="priority")
    if name is not None and not 1 <= len(name) <= NAME_FILTER_LIMIT:
        raise InvalidInput(f"name must be 1-{NAME_FILTER_LIMIT} characters", field="name")
    if status is None and priority is None and name is None:
        return None
    needle = name.casefold() if name is not None else None
    return lambda job: (
        (status is None or job.status == status)
        and (priority is None or job.priority == priority)
        and (needle is None or (job.name is not None and needle in job.name.casefold()))
    )


def payload_json(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"))
