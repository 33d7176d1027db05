"""`--stack NAME`: the API URL is the stack's ApiUrl output (infra/stack.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from click.testing import CliRunner

from sundial.cli import cli
from sundial.client import NotFound, api_url_of_stack
from tests.support.sigv4_stub import Reply, StubApi

CREATED = "2026-12-01T09:00:00Z"


@pytest.fixture
def cloudformation(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    client = boto3.client(
        "cloudformation", region_name="eu-west-1", aws_access_key_id="AKID", aws_secret_access_key="secret"
    )
    monkeypatch.setattr(boto3.Session, "client", lambda self, name, **_: client)
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def _stack(outputs: dict[str, str]) -> dict[str, Any]:
    described = {
        "StackName": "Sundial-staging",
        "CreationTime": CREATED,
        "StackStatus": "CREATE_COMPLETE",
        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
    }
    return {"Stacks": [described]}


def test_the_url_is_the_api_url_output(cloudformation: Stubber) -> None:
    url = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1/"
    cloudformation.add_response(
        "describe_stacks", _stack({"TableName": "t", "ApiUrl": url}), {"StackName": "Sundial-staging"}
    )
    assert api_url_of_stack("Sundial-staging", region="eu-west-1") == url


def test_a_missing_stack_or_output_is_not_found(cloudformation: Stubber) -> None:
    cloudformation.add_client_error(
        "describe_stacks", "ValidationError", "Stack with id Nope does not exist", 400
    )
    with pytest.raises(NotFound, match="does not exist") as missing:
        api_url_of_stack("Nope")
    assert missing.value.field == "stack"
    cloudformation.add_response("describe_stacks", _stack({"TableName": "t"}))
    with pytest.raises(NotFound, match="no ApiUrl output"):
        api_url_of_stack("Sundial-staging")


def test_the_cli_calls_the_stacks_api(cloudformation: Stubber) -> None:
    with StubApi(default=Reply(200, {"status": "ok", "next_runs": ["2030-01-01T00:00:00Z"]})) as stub:
        cloudformation.add_response("describe_stacks", _stack({"ApiUrl": stub.url + "/v1/"}))
        result = CliRunner().invoke(
            cli, ["preview", "rate(1 day)", "--stack", "Sundial-staging", "-o", "json"]
        )
    assert result.exit_code == 0, result.stderr
    assert stub.received[0].path == "/v1/schedules/preview"
    cloudformation.add_client_error(
        "describe_stacks", "ValidationError", "Stack with id X does not exist", 400
    )
    missing = CliRunner().invoke(cli, ["jobs", "list", "--stack", "X"])
    assert missing.exit_code == 2 and "field stack" in missing.stderr
