"""Jobs stored before sealing, their inline header values and url queries in clear, sealed in place
by `sundial reseal-headers` on the emulator (docs/operations.md, "Sealed header values"): afterwards
no item holds a value in clear, the worker opens each to what was stored, and a second run writes nothing."""

from __future__ import annotations

import json
from typing import Any

import boto3
from click.testing import CliRunner
from ulid import ULID

from sundial.cli import cli
from sundial.contract.targets import AnyTarget
from sundial.contract.vocabulary import JobStatus
from sundial.local_stack.resources import Resources
from sundial.shared.clock import FixedClock
from sundial.shared.models import Job
from sundial.shared.service.sealing import HeaderSealer
from sundial.shared.store import JobStore, items
from sundial.shared.store.reseal import reseal_headers
from sundial.shared.targets import HeaderOpener, HttpTarget, PythonTarget, Sealed
from tests.functions.conftest import table_items

NOW = 1_900_000_000_000
PLAIN = {"Authorization": "Bearer older-9c2d", "X-Team": "finance", "Accept": "application/json"}


def _job(target: AnyTarget) -> Job:
    return Job(
        id=str(ULID()),
        name=None,
        status=JobStatus.PENDING,
        target=target,
        created_at=NOW,
        updated_at=NOW,
    )


def test_the_cli_seals_older_plain_values_once(
    dynamodb: Any, aws: dict[str, Any], resources: Resources, header_sealer: HeaderSealer
) -> None:
    table = resources.table_name
    older = _job(HttpTarget(type="http", url="https://example.com/hook", headers=PLAIN))
    query_only = _job(HttpTarget(type="http", url="https://example.com/hook?api_key=older-q-71e0"))
    other = _job(PythonTarget(type="python", handler="noop"))
    for job in (older, query_only, other):
        dynamodb.put_item(TableName=table, Item=items.job_to_item(job, "w0"))
    kms = boto3.client("kms", **aws)
    key = kms.describe_key(KeyId="alias/sundial-headers")["KeyMetadata"]["Arn"]
    args = ["reseal-headers", "--table", table, "--key", key, "--endpoint-url", aws["endpoint_url"]]

    result = CliRunner().invoke(cli, [*args, "--region", aws["region_name"]])

    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "done: 3 items read, 2 jobs' header values and queries sealed"
    stored = json.dumps(table_items(dynamodb, table))
    assert "older-9c2d" not in stored and "older-q-71e0" not in stored
    store = JobStore(dynamodb, table, FixedClock(NOW))
    query_target = store.get(query_only.id).target
    assert isinstance(query_target, HttpTarget) and query_target.sealed_query is not None
    assert query_target.url == "https://example.com/hook?api_key=***"
    opener = HeaderOpener(lambda service: kms)
    assert opener.query(query_target.sealed_query, query_only.id) == "api_key=older-q-71e0"
    target = store.get(older.id).target
    assert isinstance(target, HttpTarget)
    assert isinstance(target.headers["Authorization"], Sealed) and isinstance(
        target.headers["X-Team"], Sealed
    )
    assert target.headers["Accept"] == "application/json"
    opened = {
        n: opener.value(n, v, older.id) if isinstance(v, Sealed) else v for n, v in target.headers.items()
    }
    assert opened == PLAIN
    assert reseal_headers(dynamodb, table, header_sealer.sealed).sealed == 0
