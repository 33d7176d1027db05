"""The emulator as its own process on a state directory, to be killed and started again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3

from sundial.local_stack.child import free_port, wait_for_port
from tests.e2e.processes import Process

TABLE = "things"
STARTUP_SECONDS = 60.0


def start_emulator(log_dir: Path, state: Path, name: str = "emulator", *extra: str) -> tuple[Process, str]:
    port = free_port()
    process = Process(name, ["emulator", "--port", str(port), "--state-dir", str(state), *extra], log_dir)
    wait_for_port("127.0.0.1", port, STARTUP_SECONDS, process.popen)
    return process, f"http://127.0.0.1:{port}"


def run_emulator(state: Path, *extra: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`sundial emulator` expected to refuse to start: its exit status and what it printed."""
    command = [sys.executable, "-m", "sundial.local_stack.cli", "emulator", "--port", str(free_port())]
    return subprocess.run(
        [*command, "--state-dir", str(state), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def dynamodb(endpoint_url: str) -> Any:
    return boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")


def create_table(client: Any, name: str = TABLE) -> None:
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )


def key(pk: str, sk: str = "A") -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def items(client: Any, name: str = TABLE) -> dict[tuple[str, str], dict[str, Any]]:
    """Every item, by (pk, sk)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for page in client.get_paginator("scan").paginate(TableName=name, ConsistentRead=True):
        for item in page["Items"]:
            found[(item["pk"]["S"], item["sk"]["S"])] = item
    return found


def snapshot_of(path: Path) -> dict[str, bytes]:
    """Every file of a directory with its content: to show that a refused start changed nothing."""
    return {
        str(file.relative_to(path)): file.read_bytes() for file in sorted(path.rglob("*")) if file.is_file()
    }
