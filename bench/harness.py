"""What every measurement shares: result rows, percentiles, an emulator of its own, bulk-loaded jobs."""

from __future__ import annotations

import math
import os
import platform
import random
import secrets
import statistics
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

import boto3
from pydantic import TypeAdapter
from ulid import ULID

from sundial.contract.targets import Target
from sundial.contract.vocabulary import JobStatus, Priority
from sundial.local_stack.child import EmulatorProcess
from sundial.local_stack.environment import use_emulator
from sundial.local_stack.resources import Resources, ensure_resources
from sundial.shared import constants as c
from sundial.shared.models import Job
from sundial.shared.store import items

BATCH_WRITE_LIMIT = 25
SECOND_MS = 1000
_target_adapter: TypeAdapter[Target] = TypeAdapter(Target)


@dataclass(frozen=True)
class Row:
    """One figure of the table, with the goal it is held to (None: reported, no goal)."""

    name: str
    value: float
    unit: str
    goal: str | None = None
    met: bool | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    spread: str | None = None  # how the repetitions behind `value` spread, as printed

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with at least `fraction` of the values at or below."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Repeated:
    """A figure measured several times: the median is the figure, the rest says how far to trust it."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def describe(self, digits: int = 3) -> str:
        low, high = min(self.values), max(self.values)
        return f"median of {len(self.values)}, range {low:.{digits}f}-{high:.{digits}f}"

    def as_dict(self, digits: int = 4) -> dict[str, Any]:
        return {
            "median": round(self.median, digits),
            "min": round(min(self.values), digits),
            "max": round(max(self.values), digits),
            "runs": [round(v, digits) for v in self.values],
        }


def machine() -> dict[str, Any]:
    uname = platform.uname()
    return {
        "uname": f"{uname.system} {uname.release} {uname.machine}",
        "node": uname.node,
        "cpu_count": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()),
    }


def versions() -> dict[str, str]:
    names = ("sundial", "boto3", "botocore", "moto", "pydantic", "croniter")
    return {"python": platform.python_version(), **{name: _version(name) for name in names}}


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


class Aws:
    """An emulator process of our own, with the table and queues made under `prefix`."""

    def __init__(self, emulator: EmulatorProcess, prefix: str) -> None:
        self.emulator = emulator
        region = use_emulator()
        self.dynamodb = client("dynamodb", emulator.endpoint_url, region)
        self.sqs = client("sqs", emulator.endpoint_url, region)
        self.resources: Resources = ensure_resources(self.dynamodb, self.sqs, prefix=prefix)

    @classmethod
    def start(cls, prefix: str) -> Aws:
        return cls(EmulatorProcess().start(), prefix)

    def on_same_emulator(self, prefix: str) -> Aws:
        return Aws(self.emulator, prefix)

    def stop(self) -> None:
        self.emulator.stop()


def client(service: str, endpoint_url: str, region: str) -> Any:
    return boto3.client(service, endpoint_url=endpoint_url, region_name=region)


def http_target(url: str = "http://127.0.0.1:9/ok") -> Target:
    return _target_adapter.validate_python({"type": "http", "url": url})


def pending_job(job_id: str, due_at: int, priority: Priority, now_ms: int) -> Job:
    """A one-off job waiting in the due index at `due_at`, as the API would have stored it."""
    return Job(
        id=job_id,
        name=f"bench-{job_id[-6:]}",
        status=JobStatus.PENDING,
        run_at=due_at,
        scheduled_at=due_at,
        due_at=due_at,
        priority=priority,
        target=http_target(),
        payload={"report": "daily", "n": due_at % 1000},
        created_at=now_ms,
        updated_at=now_ms,
    )


def job_items(due_times: Iterable[int], seed: int) -> Iterator[dict[str, Any]]:
    """Job items built by the store's own item code, priorities mixed as traffic would mix them."""
    rng = random.Random(seed)
    now_ms = time.time_ns() // 1_000_000
    for due_at in due_times:
        priority = rng.choice(c.PRIORITIES)
        yield items.job_to_item(pending_job(str(ULID()), due_at, priority, now_ms), "bench-load")


def batch_write(dynamodb: Any, table: str, job_items_: Iterable[dict[str, Any]], threads: int = 2) -> int:
    """BatchWriteItem in 25s from `threads` threads (the emulator's lock serialises them anyway; two
    keep it busy while the next batch is built). Returns the number of items written."""

    def write(chunk: list[dict[str, Any]]) -> int:
        request: dict[str, Any] = {table: [{"PutRequest": {"Item": item}} for item in chunk]}
        while request:
            request = dynamodb.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
        return len(chunk)

    # Submitted a few at a time, so items are built while earlier batches are written.
    written = 0
    in_flight: deque[Future[int]] = deque()
    with ThreadPoolExecutor(threads) as pool:
        for chunk in _chunks(job_items_, BATCH_WRITE_LIMIT):
            in_flight.append(pool.submit(write, chunk))
            if len(in_flight) > 2 * threads:
                written += in_flight.popleft().result()
        written += sum(future.result() for future in in_flight)
    return written


def _chunks(values: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for value in values:
        chunk.append(value)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def raw_claim(dynamodb: Any, table: str, item: dict[str, Any]) -> None:
    """The conditional update a claim makes, made alone with boto3: the same attributes set and
    removed, the same condition, the new item returned. The emulator's raw cost of one claim is what
    the tick and the workers are measured against; a simpler update would make moto's cost of
    evaluating a longer expression look like Sundial's overhead."""
    lease_until = now_ms() + 180_000
    dynamodb.update_item(
        TableName=table,
        Key={"pk": item["pk"], "sk": item["sk"]},
        UpdateExpression="SET #status = :queued, #token = :token, #lease_until = :lease_until, "
        "#updated_at = :now, #due_key = :due_key, #version = if_not_exists(#version, :zero) + :one, "
        "#write_id = :write_id REMOVE #resent",
        ConditionExpression="(#status IN (:failed, :pending)) AND (#due_key = :seen_due_key)",
        ExpressionAttributeNames={
            "#status": "status",
            "#token": "token",
            "#lease_until": "lease_until",
            "#updated_at": "updated_at",
            "#due_key": c.DUE_KEY_ATTRIBUTE,
            "#version": "version",
            "#write_id": "write_id",
            "#resent": "resent",
        },
        ExpressionAttributeValues={
            ":queued": {"S": "queued"},
            ":token": {"S": secrets.token_hex(8)},
            ":lease_until": {"N": str(lease_until)},
            ":now": {"N": str(now_ms())},
            ":due_key": {"S": f"{lease_until:013d}#lease"},
            ":seen_due_key": item[c.DUE_KEY_ATTRIBUTE],
            ":pending": {"S": "pending"},
            ":failed": {"S": "failed"},
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
            ":write_id": {"S": secrets.token_hex(8)},
        },
        ReturnValues="ALL_NEW",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
