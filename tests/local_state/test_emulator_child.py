"""`sundial local`'s emulator child: it binds a port of its own and tells it through a pipe once it
serves, so the local stack never takes another process on a port it chose for what it started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from sundial.local_stack.child import EmulatorProcess, _port_told


def test_the_child_serves_on_the_port_it_tells_and_stops_with_its_parent_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no state directory of a stack run here before (.sundial)
    child = EmulatorProcess().start()
    try:
        assert child.running() and child.port is not None
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=child.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        assert dynamodb.list_tables()["TableNames"] == []  # moto answers there, not something else
    finally:
        child.stop()
    assert not child.running()


def test_a_child_that_exits_before_it_serves_is_reported_with_its_code() -> None:
    ready, told = os.pipe()
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], pass_fds=(told,))
    os.close(told)
    try:
        with pytest.raises(RuntimeError, match="exited with code 3 before it listened"):
            _port_told(ready, process, timeout=30)
    finally:
        os.close(ready)


def test_a_child_that_says_nothing_in_time_times_out() -> None:
    ready, told = os.pipe()  # the write end stays open here: no end of the pipe, no port
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(TimeoutError, match="did not start serving within"):
            _port_told(ready, process, timeout=0.3)
    finally:
        process.kill()
        process.wait()
        os.close(ready)
        os.close(told)


def test_an_unstarted_child_has_no_endpoint_to_give() -> None:
    with pytest.raises(RuntimeError, match="no port before start"):
        _ = EmulatorProcess().endpoint_url
