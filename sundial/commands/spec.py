"""Request bodies from command-line flags: a create's job, an update's patch (only the flags given)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

_DURATION = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
TARGET_FLAGS = (
    "target",
    "target_url",
    "target_lambda",
    "target_sqs",
    "target_sns",
    "target_eventbridge",
    "target_python",
)
# Flags whose value goes to the field of the same name unchanged.
PLAIN_FIELDS = (
    "name",
    "window_seconds",
    "schedule",
    "timezone",
    "priority",
    "max_retries",
    "timeout_seconds",
    "misfire_policy",
    "overlap_policy",
    "start_at",
    "end_at",
    "limit_key",
)


def read_json(text: str, option: str) -> Any:
    """JSON given inline, or as @path (@- for standard input)."""
    if text.startswith("@"):
        source = text[1:]
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text()
        except OSError as exc:
            raise click.BadParameter(f"cannot read {source}: {exc.strerror}", param_hint=option) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not valid JSON: {exc}", param_hint=option) from None


def read_object_file(path: str | None) -> dict[str, Any]:
    """The JSON object in --file (`-` for standard input), or nothing."""
    if path is None:
        return {}
    value = read_json(f"@{path}", "--file")
    if not isinstance(value, dict):
        raise click.BadParameter("must hold a JSON object", param_hint="--file")
    return value


def duration(text: str) -> timedelta:
    """`90s`, `10m`, `1h30m`, `2d`."""
    parts = _DURATION.findall(text)
    if not parts or "".join(f"{n}{u}" for n, u in parts) != text:
        raise click.BadParameter(
            f"'{text}' is not a duration such as 90s, 10m, 1h30m or 2d", param_hint="--in"
        )
    total = timedelta()
    for number, unit in parts:
        total += timedelta(**{_UNITS[unit]: int(number)})
    return total


def rfc3339(instant: datetime) -> str:
    return instant.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def backoff(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise click.BadParameter(
            f"'{text}' is not a list of seconds such as 5,30,120", param_hint="--backoff"
        ) from None


def fields_from_flags(flags: Mapping[str, Any], now: Callable[[], datetime]) -> dict[str, Any]:
    """The body fields the given flags set; flags left out are left out."""
    fields = {name: flags[name] for name in PLAIN_FIELDS if flags.get(name) is not None}
    if flags.get("run_at") is not None and flags.get("run_in") is not None:
        raise click.UsageError("give --at or --in, not both")
    if flags.get("run_at") is not None:
        fields["run_at"] = flags["run_at"]
    if flags.get("run_in") is not None:
        fields["run_at"] = rfc3339(now() + duration(flags["run_in"]))
    if flags.get("backoff") is not None:
        fields["backoff"] = backoff(flags["backoff"])
    if flags.get("payload") is not None:
        fields["payload"] = read_json(flags["payload"], "--payload")
    return fields


def target_from_flags(flags: Mapping[str, Any]) -> dict[str, Any] | None:
    """The target the --target* flags describe, or None when none was given."""
    given = {name: flags[name] for name in TARGET_FLAGS if flags.get(name) is not None}
    if len(given) > 1:
        flags_given = ", ".join("--" + name.replace("_", "-") for name in given)
        raise click.UsageError(f"give one target, not {flags_given}")
    if not given:
        return None
    ((kind, value),) = given.items()
    if kind == "target":
        target = read_json(value, "--target")
        if not isinstance(target, dict):
            raise click.BadParameter("must be a JSON object", param_hint="--target")
        return target
    return _typed_target(kind, value, flags)


def _typed_target(kind: str, value: str, flags: Mapping[str, Any]) -> dict[str, Any]:
    if kind == "target_url":
        target: dict[str, Any] = {"type": "http", "url": value, "headers": _headers(flags.get("header", ()))}
        if flags.get("method"):
            target["method"] = flags["method"]
        return target
    if kind == "target_eventbridge":
        return {
            "type": "eventbridge",
            "event_bus_name": value,
            "detail_type": flags.get("detail_type"),
            "source": flags.get("source"),
        }
    field = {
        "target_lambda": ("lambda", "function_arn"),
        "target_sqs": ("sqs", "queue_url"),
        "target_sns": ("sns", "topic_arn"),
        "target_python": ("python", "handler"),
    }[kind]
    return {"type": field[0], field[1]: value}


def _headers(pairs: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for pair in pairs:
        name, separator, value = pair.partition(":") if ":" in pair else pair.partition("=")
        if not separator or not name.strip():
            raise click.BadParameter(f"'{pair}' is not 'Name: value'", param_hint="--header")
        headers[name.strip()] = value.strip()
    return headers
