"""`sundial local` on a state directory, stopped and started again: the emulator's KMS key, its Secrets
Manager secrets and its SSM parameters are kept with the tables, so a job whose header value and url
query are sealed, and a job whose headers refer to secrets, still deliver after the restart, signed
with the same signing secret. Each service's file is replaced whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from standardwebhooks.webhooks import Webhook

from sundial.shared import constants as c
from tests.e2e.api import Api, wait_until
from tests.e2e.processes import emulator_url_in_banner, start_local
from tests.local_state.helpers import run_emulator, start_emulator
from tests.support.receivers import Receiver, references

pytestmark = pytest.mark.e2e

REFERENCED = ("kept-sm-5c0e", "kept-json-a17b", "kept-ssm-3f92")
INLINE = "kept-inline-d4e8"
QUERY = "key=kept-query-81c6"
DAILY = {"schedule": "cron(0 3 * * ? *)", "timezone": "UTC", "max_retries": 0}  # never due meanwhile
DELIVERY_SECONDS = 60.0


def _signing_secret(endpoint_url: str) -> str:
    client = boto3.client("secretsmanager", endpoint_url=endpoint_url, region_name="us-east-1")
    return str(client.get_secret_value(SecretId=c.SIGNING_SECRET_NAME)["SecretString"])


def test_sealed_and_referenced_jobs_still_deliver_after_a_restart(tmp_path: Path, receiver: Receiver) -> None:
    state = tmp_path / "state"
    first, url = start_local(tmp_path, "--state-dir", str(state), name="first")
    try:
        endpoint_url = emulator_url_in_banner(first.output())
        aws = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
        signing = _signing_secret(endpoint_url)
        sealed = Api(url).create(
            name="sealed",
            target={"type": "http", "url": receiver.url(f"/hook?{QUERY}"), "headers": {"X-Pass": INLINE}},
            **DAILY,
        )
        referenced = Api(url).create(
            name="referenced",
            target={"type": "http", "url": receiver.url("/hook"), "headers": references(aws, *REFERENCED)},
            **DAILY,
        )
    finally:
        first.stop()

    second, url = start_local(tmp_path, "--state-dir", str(state), name="second")
    try:
        assert _signing_secret(emulator_url_in_banner(second.output())) == signing
        for job in (sealed, referenced):
            status, answer = Api(url).call("POST", f"/jobs/{job['id']}/trigger")
            assert status == 200, answer
        runs: dict[str, list[dict[str, Any]]] = {}

        def both_ran() -> bool:
            runs.update({job["id"]: Api(url).runs(job["id"]) for job in (sealed, referenced)})
            finished = [run["finished_at"] for job_runs in runs.values() for run in job_runs]
            return len(finished) == 2 and all(finished)

        wait_until(both_ran, DELIVERY_SECONDS, lambda: f"the triggered runs did not finish: {runs}")
    finally:
        second.stop()

    assert {job_id: [run["status"] for run in job_runs] for job_id, job_runs in runs.items()} == {
        sealed["id"]: ["succeeded"],
        referenced["id"]: ["succeeded"],
    }
    by_job = {sent.headers["Sundial-Job-Id"]: sent for sent in receiver.received}
    assert by_job[sealed["id"]].headers["X-Pass"] == INLINE
    assert by_job[sealed["id"]].path == f"/hook?{QUERY}"
    names = ("Authorization", "X-Token", "X-Param")
    assert tuple(by_job[referenced["id"]].headers[name] for name in names) == REFERENCED
    for sent in receiver.received:
        Webhook(signing).verify(sent.body, sent.headers)


def test_a_write_cut_off_by_a_kill_leaves_the_last_whole_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emulator, endpoint_url = start_emulator(tmp_path, state)
    try:
        kms = boto3.client("kms", endpoint_url=endpoint_url, region_name="us-east-1")
        key = kms.create_key()["KeyMetadata"]["KeyId"]
        sealed = kms.encrypt(KeyId=key, Plaintext=b"kept", EncryptionContext={"job": "a"})["CiphertextBlob"]
    finally:
        emulator.kill()
    # What a kill between the write of the next state and its rename leaves behind.
    (state / "kms.tmp").write_bytes(b"\x80\x05half a pickle")

    restarted, endpoint_url = start_emulator(tmp_path, state, "restarted")
    try:
        kms = boto3.client("kms", endpoint_url=endpoint_url, region_name="us-east-1")
        opened = kms.decrypt(CiphertextBlob=sealed, EncryptionContext={"job": "a"})["Plaintext"]
    finally:
        restarted.stop()
    assert opened == b"kept"
    assert not (state / "kms.tmp").exists()


def test_a_state_file_that_does_not_read_back_stops_the_start_naming_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emulator, endpoint_url = start_emulator(tmp_path, state)
    try:
        client = boto3.client("secretsmanager", endpoint_url=endpoint_url, region_name="us-east-1")
        client.create_secret(Name="kept", SecretString="value")
    finally:
        emulator.stop()
    (state / "secretsmanager.state").write_bytes(b"not a pickle")

    refused = run_emulator(state)

    assert refused.returncode != 0
    assert "secretsmanager.state does not read back" in refused.stdout + refused.stderr
