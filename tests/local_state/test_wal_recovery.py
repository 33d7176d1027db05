"""The emulator on a state directory: what it acknowledged survives a SIGKILL, a torn last record is
dropped, snapshots hold the same tables as the log they replace."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sundial.local_stack.child import free_port, wait_for_port
from sundial.local_stack.state.records import encode
from tests.local_state.helpers import create_table, dynamodb, items, key, start_emulator

WRITERS = 4


def test_every_kind_of_write_acknowledged_survives_a_sigkill_right_after_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emulator, url = start_emulator(tmp_path, state)
    client = dynamodb(url)
    create_table(client)
    for n in range(5):
        client.put_item(TableName="things", Item={**key(f"p{n}"), "n": {"N": str(n)}})
    client.update_item(
        TableName="things",
        Key=key("p1"),
        UpdateExpression="SET n = :new",
        ConditionExpression="n = :old",
        ExpressionAttributeValues={":new": {"N": "10"}, ":old": {"N": "1"}},
    )
    client.delete_item(TableName="things", Key=key("p2"))
    client.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "things", "Item": {**key("t1"), "n": {"N": "7"}}}},
            {"Update": {"TableName": "things", "Key": key("p3"), "UpdateExpression": "REMOVE n"}},
            {
                "ConditionCheck": {
                    "TableName": "things",
                    "Key": key("p4"),
                    "ConditionExpression": "n = :four",
                    "ExpressionAttributeValues": {":four": {"N": "4"}},
                }
            },
        ]
    )
    client.batch_write_item(
        RequestItems={
            "things": [
                {"PutRequest": {"Item": {**key("b1"), "n": {"N": "1"}}}},
                {"DeleteRequest": {"Key": key("p0")}},
            ]
        }
    )
    emulator.kill()  # right after the last answer: nothing had time to happen after it

    restarted, url = start_emulator(tmp_path, state, "restarted")
    try:
        found = items(dynamodb(url))
    finally:
        restarted.stop()

    assert {pk: item.get("n", {}).get("N") for (pk, _), item in found.items()} == {
        "p1": "10",
        "p3": None,
        "p4": "4",
        "t1": "7",
        "b1": "1",
    }


def test_writes_acknowledged_before_a_sigkill_mid_flood_are_all_there(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emulator, url = start_emulator(tmp_path, state)
    create_table(dynamodb(url))
    acknowledged: list[set[str]] = [set() for _ in range(WRITERS)]
    stop = threading.Event()

    def write(n: int) -> None:
        client = dynamodb(url)
        for i in range(100_000):
            if stop.is_set():
                return
            pk = f"w{n}-{i}"
            try:
                client.put_item(TableName="things", Item={**key(pk), "v": {"S": "x" * (i % 300)}})
            except Exception:  # the emulator is gone: this write was not acknowledged
                return
            acknowledged[n].add(pk)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    time.sleep(2.0)
    emulator.kill()
    stop.set()
    for thread in threads:
        thread.join(10)

    restarted, url = start_emulator(tmp_path, state, "restarted")
    try:
        found = {pk for pk, _ in items(dynamodb(url))}
    finally:
        restarted.stop()

    written = set().union(*acknowledged)
    assert len(written) > 50, "too few writes before the kill to show anything"
    assert written - found == set()
    assert len(found - written) <= WRITERS  # at most the one in flight per writer


def test_a_torn_last_record_is_dropped_and_the_log_goes_on_after_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emulator, url = start_emulator(tmp_path, state)
    client = dynamodb(url)
    create_table(client)
    client.put_item(TableName="things", Item=key("before"))
    emulator.kill()
    [log] = state.glob("wal-*.log")
    torn = encode(
        {"items": [{"a": "1", "r": "us-east-1", "t": "things", "k": key("torn"), "i": key("torn")}]}
    )
    with log.open("ab") as file:
        file.write(torn[: len(torn) // 2])

    second, url = start_emulator(tmp_path, state, "second")
    client = dynamodb(url)
    assert set(items(client)) == {("before", "A")}
    client.put_item(TableName="things", Item=key("after"))
    second.kill()
    third, url = start_emulator(tmp_path, state, "third")
    try:
        assert set(items(dynamodb(url))) == {("before", "A"), ("after", "A")}
    finally:
        third.stop()
    assert "dropped a torn last record" in second.output()


def test_snapshots_replace_the_log_and_restore_the_same_tables(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emulator, url = _emulator_compacting_every(tmp_path, state, 20_000)
    client = dynamodb(url)
    create_table(client)
    for n in range(300):
        client.put_item(TableName="things", Item={**key(f"p{n}"), "v": {"S": "x" * 100}})
        if n % 3 == 0:
            client.update_item(
                TableName="things",
                Key=key(f"p{n}"),
                UpdateExpression="SET n = :n",
                ExpressionAttributeValues={":n": {"N": str(n)}},
            )
        if n % 7 == 0:
            client.delete_item(TableName="things", Key=key(f"p{n // 2}"))
    before = items(client)
    emulator.kill()

    logs = list(state.glob("wal-*.log"))
    assert (state / "snapshot.log").exists() and len(logs) == 1 and logs[0].name != "wal-00000000.log"
    restarted, url = start_emulator(tmp_path, state, "restarted")
    try:
        assert items(dynamodb(url)) == before
    finally:
        restarted.stop()


def test_what_an_interrupted_snapshot_left_is_cleared(tmp_path: Path) -> None:
    state = tmp_path / "state"
    emulator, url = start_emulator(tmp_path, state)
    client = dynamodb(url)
    create_table(client)
    client.put_item(TableName="things", Item=key("kept"))
    emulator.kill()
    # A snapshot half written, and the next log begun, when the process died before the rename.
    (state / "snapshot.tmp").write_bytes(b"partial")
    (state / "wal-00000001.log").write_bytes(encode({"format": 1, "generation": 1, "kind": "log"}))

    restarted, url = start_emulator(tmp_path, state, "restarted")
    try:
        assert set(items(dynamodb(url))) == {("kept", "A")}
    finally:
        restarted.stop()
    assert sorted(file.name for file in state.iterdir()) == [
        "emulator.lock",
        "format.json",
        "wal-00000000.log",
    ]


class _Child:
    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen

    def kill(self) -> None:
        self.popen.kill()
        self.popen.wait()


def _emulator_compacting_every(tmp_path: Path, state: Path, size: int) -> tuple[Any, str]:
    """The emulator with a small snapshot threshold, so that a test sees several snapshots."""
    port = free_port()
    code = (
        "import sys; import sundial.local_stack.state.tables_on_disk as t; "
        f"t.COMPACT_MIN_BYTES = {size}; from sundial.local_stack.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    args = ["emulator", "--port", str(port), "--state-dir", str(state)]
    with (tmp_path / "compacting.log").open("ab") as log:
        popen = subprocess.Popen([sys.executable, "-c", code, *args], stdout=log, stderr=subprocess.STDOUT)
    wait_for_port("127.0.0.1", port, 60, popen)
    return _Child(popen), f"http://127.0.0.1:{port}"
