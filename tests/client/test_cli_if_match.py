"""`sundial jobs update --if-match`: the ETag `jobs get` shows guards a change against another's."""

from __future__ import annotations

import re

import pytest

from sundial.commands.exits import OK, STALE
from tests.client.test_cli_conventions import create, json_of, run


def _etag(api: str, job_id: str) -> str:
    shown = run("jobs", "get", job_id, "--api", api)
    assert shown.returncode == OK, shown.stderr
    match = re.search(r"^etag\s+(\S+)\s*$", shown.stdout, re.MULTILINE)
    assert match, shown.stdout
    return match.group(1)


@pytest.mark.e2e
def test_an_update_with_a_stale_etag_changes_nothing_and_exits_8(local_api: str) -> None:
    job = create(local_api, "--target-python", "noop", "--in", "1d")
    read = _etag(local_api, job["id"])
    assert run("jobs", "update", job["id"], "--name", "by-another", "--api", local_api).returncode == OK

    stale = run("jobs", "update", job["id"], "--name", "mine", "--if-match", read, "--api", local_api)

    assert stale.returncode == STALE, stale.stderr
    assert "412" in stale.stderr
    assert json_of(run("jobs", "get", job["id"], "--api", local_api, "-o", "json"))["name"] == "by-another"


@pytest.mark.e2e
def test_an_update_with_the_current_etag_is_made(local_api: str) -> None:
    job = create(local_api, "--target-python", "noop", "--in", "1d")
    current = _etag(local_api, job["id"])

    made = run(
        "jobs", "update", job["id"], "--name", "mine", "--if-match", current, "--api", local_api, "-o", "json"
    )

    assert json_of(made)["name"] == "mine"
    assert _etag(local_api, job["id"]) != current
