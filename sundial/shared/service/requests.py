"""Reading API requests into domain values: what a PATCH changes, time fields as epoch ms, filters.

Every refusal is InvalidInput naming the field the client wrote."""

from __future__ import annotations

import json
from typing import Any

from sundial.contract.bounds import NAME_FILTER_LIMIT, NAME_KEY_CHARS
from sundial.contract.calendar import Calendar
from sundial.contract.jobs import JobUpdate
from sundial.contract.targets import AnyTarget
from sundial.contract.vocabulary import Health, JobStatus, OverlapPolicy, Priority
from sundial.shared import constants as c
from sundial.shared.clock import to_epoch_ms
from sundial.shared.errors import InvalidInput, PayloadTooLarge
from sundial.shared.models import Job, RetryPolicy
from sundial.shared.schedules import check_window, parse_schedule, parse_timezone
from sundial.shared.schedules.calendars import calendar_on_one_off, check_calendar
from sundial.shared.store.listing import ListFilter
from sundial.shared.targets.payload_room import payload_room

# A job's name is at most 200 characters, so a longer filter could match none.
RETRY_FIELDS = ("max_retries", "backoff", "timeout_seconds")
TIMING_FIELDS = ("schedule", "timezone", "run_at", "start_at", "end_at", "calendar")
# A PATCH may clear name, payload and the window; these have no "unset" state.
NOT_NULLABLE = (
    *RETRY_FIELDS,
    "schedule",
    "timezone",
    "run_at",
    "priority",
    "misfire_policy",
    "overlap_policy",
    "window_seconds",
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
    for name in ("name", "priority", "misfire_policy", "overlap_policy", "window_seconds", "limit_key"):
        if name in sent:
            changes[name] = sent[name]
    if "limit_key" in changes and changes["limit_key"] != job.limit_key and job.limit_held_since is not None:
        # Held back by the key it no longer names: its next look fences it by the new one.
        changes["limit_held_since"] = None
    if any(name in sent for name in RETRY_FIELDS):
        retry = {name: sent[name] if name in sent else getattr(job.retry, name) for name in RETRY_FIELDS}
        changes["retry"] = RetryPolicy(**retry)
    if "payload" in sent:
        size = len(payload_json(patch.payload).encode())
        refuse_oversized_payload(job.target, size)
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
    if out.get("calendar") is not None:
        calendar = Calendar.model_validate(out["calendar"])
        check_calendar(calendar)
        out["calendar"] = calendar
    if now_ms is not None and out.get("schedule") is None and out.get("run_at") is None:
        out["run_at"] = now_ms
    return out


def refuse_nulls(sent: dict[str, Any]) -> None:
    nulled = [name for name in NOT_NULLABLE if name in sent and sent[name] is None]
    if nulled:
        raise InvalidInput(f"{nulled[0]} cannot be null; leave it out to keep it as it is", field=nulled[0])


def check_job_window(job: Job) -> None:
    """The active window, and a calendar only where there are occurrences to skip. Raises InvalidInput
    naming `end_at` or `calendar`."""
    check_window(job.start_at, job.end_at)
    if job.calendar is not None and not job.is_recurring:
        raise calendar_on_one_off()


def list_filter(
    status: str | None,
    priority: str | None,
    name: str | None,
    health: str | None = None,
    name_prefix: str | None = None,
) -> ListFilter:
    """What GET /jobs keeps. `name` is a case-insensitive substring of the job's name (a search box
    finds "nightly-report-eu" by "report"); `name_prefix`, case-insensitive too, is what the name index
    answers, so it needs its first NAME_KEY_CHARS characters."""
    _one_of("status", status, [s.value for s in JobStatus])
    _one_of("priority", priority, [p.value for p in Priority])
    _one_of("health", health, [h.value for h in Health])
    if name is not None and not 1 <= len(name) <= NAME_FILTER_LIMIT:
        raise InvalidInput(f"name must be 1-{NAME_FILTER_LIMIT} characters", field="name")
    if name_prefix is not None and not NAME_KEY_CHARS <= len(name_prefix.casefold()) <= NAME_FILTER_LIMIT:
        raise InvalidInput(
            f"name_prefix must be {NAME_KEY_CHARS}-{NAME_FILTER_LIMIT} characters", field="name_prefix"
        )
    return ListFilter(status, priority, health, name_prefix, name)


def _one_of(field: str, value: str | None, allowed: list[str]) -> None:
    if value is not None and value not in allowed:
        raise InvalidInput(f"{field} '{value}' is not one of {', '.join(allowed)}", field=field)


def refuse_oversized_payload(target: AnyTarget, size: int) -> None:
    """Raises PayloadTooLarge for a payload the API, or every delivery to `target`, would refuse."""
    if size > c.PAYLOAD_LIMIT_BYTES:
        raise PayloadTooLarge(f"payload is {size} bytes; the limit is 256 KiB", field="payload")
    room = payload_room(target)
    if room is not None and size > room:
        raise PayloadTooLarge(
            f"payload is {size} bytes; a {target.type} target carries at most {room}: its 256 KiB"
            " message holds the whole envelope (docs/api.md)",
            field="payload",
        )


def payload_json(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"))
