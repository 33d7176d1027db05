"""Job ids in any case on every command: ULIDs' Crockford base 32 ignores case, and the API's form
is upper case, in a path or in a body alike."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sundial.cli import cli
from sundial.client import SundialClient
from sundial.commands.exits import OK
from tests.client.test_cli_conventions import create, json_of, run
from tests.support.sigv4_stub import Reply, StubApi

OPERATION: dict[str, object] = {
    "id": "op-1",
    "action": "pause",
    "filter": None,
    "ids": 2,
    "state": "done",
    "done": 2,
    "refused": 0,
    "left": 0,
    "left_is_estimate": False,
    "refusals": [],
    "who": None,
    "created_at": "2026-12-01T09:30:15Z",
    "updated_at": "2026-12-01T09:30:15Z",
    "finished_at": "2026-12-01T09:30:15Z",
}


def test_the_ids_of_a_bulk_action_are_sent_in_upper_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUNDIAL_CONFIG", "/nonexistent/config.toml")
    with StubApi(default=Reply(202, OPERATION)) as stub:
        result = CliRunner().invoke(cli, ["jobs", "pause", "01jdaaa", "01JDbbb", "--api", stub.url])
    assert result.exit_code == OK, result.output
    assert stub.received[0].json()["ids"] == ["01JDAAA", "01JDBBB"]


@pytest.mark.e2e
def test_cancel_of_ids_in_mixed_case_cancels_them_all(local_api: str) -> None:
    first, second = (create(local_api, "--target-python", "noop", "--in", "1d")["id"] for _ in range(2))
    result = run("jobs", "cancel", first, second.lower(), "--yes", "--api", local_api, "-o", "json")
    assert result.returncode == OK, result.stderr
    assert json.loads(result.stdout)["done"] == 2
    for job_id in (first, second):
        assert json_of(run("jobs", "get", job_id, "--api", local_api, "-o", "json"))["status"] == "cancelled"


def test_the_client_sends_a_bulk_action_s_ids_in_upper_case() -> None:
    with StubApi(default=Reply(202, OPERATION)) as stub:
        SundialClient(stub.url).start_action("pause", ids=["01jdaaa", "01JDbbb"])
    assert stub.received[0].json()["ids"] == ["01JDAAA", "01JDBBB"]
