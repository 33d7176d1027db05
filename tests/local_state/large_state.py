"""A state directory of 100,000 jobs in seconds: the table made by a real emulator through
ensure_resources, as `sundial local` makes it, then a snapshot of the jobs written as a compaction
writes one (creating them through an emulator would take minutes)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import boto3

from sundial.contract.vocabulary import JobStatus
from sundial.local_stack.resources import ensure_resources
from sundial.local_stack.state import directory, records
from sundial.local_stack.state.tables_on_disk import SNAPSHOT, SNAPSHOT_CHUNK, log_name
from sundial.shared import constants as c
from sundial.shared.models import Job
from sundial.shared.store import items
from tests.local_state.helpers import start_emulator

JOBS = 100_000
DAY_MS = 24 * 3600 * 1000
_FIRST_DUE_MS = 4_000_000_000_000  # far ahead: nothing in it falls due while a test looks


def build(state: Path, log_dir: Path, jobs: int = JOBS) -> list[str]:
    """Writes the directory; returns the jobs' ids."""
    emulator, endpoint_url = start_emulator(log_dir, state, "emulator-making-the-table")
    try:
        dynamodb = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
        sqs = boto3.client("sqs", endpoint_url=endpoint_url, region_name="us-east-1")
        table = ensure_resources(dynamodb, sqs).table_name
        dynamodb.put_item(TableName=table, Item=job_item(0))
    finally:
        assert emulator.stop() == 0, emulator.tail()
    recorded: list[records.Record] = []
    records.scan(state / log_name(0), recorded.append)
    schema = [record for record in recorded if "schema" in record]
    table_ref = {key: recorded[-1]["items"][0][key] for key in ("a", "r", "t")}
    ids = [job_id(n) for n in range(jobs)]

    def snapshot(emit: Any) -> None:
        emit({"format": directory.FORMAT_VERSION, "generation": 1, "kind": "snapshot"})
        for record in schema:
            emit(record)
        for start in range(0, jobs, SNAPSHOT_CHUNK):
            images = [job_item(n) for n in range(start, min(jobs, start + SNAPSHOT_CHUNK))]
            emit({"table": table_ref, "images": images})

    records.write_file(state / SNAPSHOT, snapshot)
    (state / log_name(0)).unlink()
    return ids


def job_id(n: int) -> str:
    return f"{n:026d}"


def job_item(n: int) -> dict[str, Any]:
    """Job n as the store writes it: the template's item, its id, name and instant its own."""
    item = dict(_TEMPLATE)
    due_at = _FIRST_DUE_MS + n * 1000
    ident = job_id(n)
    item.update(
        {
            c.PARTITION_KEY: {"S": f"JOB#{ident}"},
            c.LIST_SORT_ATTRIBUTE: {"S": ident},
            "id": {"S": ident},
            "name": {"S": f"job-{n}"},
            "run_at": {"N": str(due_at)},
            "scheduled_at": {"N": str(due_at)},
            "due_at": {"N": str(due_at)},
            c.DUE_KEY_ATTRIBUTE: {"S": f"{due_at:013d}#run"},
        }
    )
    return item


def _template() -> dict[str, Any]:
    job = Job.model_validate(
        {
            "id": job_id(0),
            "name": "job-0",
            "status": JobStatus.PENDING,
            "run_at": _FIRST_DUE_MS,
            "scheduled_at": _FIRST_DUE_MS,
            "due_at": _FIRST_DUE_MS,
            "priority": "medium",
            "target": {"type": "http", "url": "http://127.0.0.1:9/ok"},
            "payload": {"report": "daily"},
            "created_at": _FIRST_DUE_MS - DAY_MS,
            "updated_at": _FIRST_DUE_MS - DAY_MS,
        }
    )
    item: dict[str, Any] = items.job_to_item(job, "large-state")
    return item


_TEMPLATE = _template()


def digests(path: Path) -> dict[str, str]:
    """Every file of the directory by its content's digest: what a start changed in it."""
    return {
        file.name: hashlib.sha256(file.read_bytes()).hexdigest()
        for file in sorted(path.iterdir())
        if file.is_file()
    }
