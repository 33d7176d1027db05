"""Child of bench.local_state: loads job items into an emulator on a state directory and reports
the state's size and the time a snapshot of them took, at each count.

The first count goes through the emulator with BatchWriteItem, each batch through the state's log
as any write, so that the log's size is the real one; later counts are put into the tables directly
(about 500 a second through the emulator here, twenty times that directly), then snapshotted.

    python -m bench.local_state_load STATE_DIR OUTPUT.json COUNT [COUNT...]
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.harness import batch_write, client, job_items, now_ms
from sundial.local_stack.emulator import Emulator
from sundial.local_stack.environment import use_emulator
from sundial.local_stack.resources import ensure_resources
from sundial.local_stack.state import tables as moto_tables
from sundial.local_stack.state.tables_on_disk import SNAPSHOT, TablesOnDisk

DAY_MS = 24 * 3600 * 1000


def main(state: Path, output: Path, counts: list[int]) -> None:
    tables = TablesOnDisk.open(state)
    emulator = Emulator(state=tables).start()
    try:
        region = use_emulator()
        dynamodb = client("dynamodb", emulator.endpoint_url, region)
        resources = ensure_resources(dynamodb, client("sqs", emulator.endpoint_url, region))
        sizes: dict[str, dict[str, int]] = {}
        compact_seconds: dict[str, float] = {}
        load_seconds: dict[str, float] = {}
        loaded = 0
        for count in counts:
            started = time.monotonic()
            # Due a day from now and later: waiting in the index, as most of a large state would be.
            due = range(now_ms() + DAY_MS + loaded * 1000, now_ms() + DAY_MS + count * 1000, 1000)
            if loaded == 0:
                loaded += batch_write(dynamodb, resources.table_name, job_items(due, seed=count))
            else:
                loaded += _put_directly(region, resources.table_name, job_items(due, seed=count))
            load_seconds[str(count)] = round(time.monotonic() - started, 2)
            log_bytes = _size(state) - _size(state / SNAPSHOT)
            started = time.monotonic()
            tables.compact()  # nothing else writes meanwhile, so it needs no lock
            compact_seconds[str(count)] = round(time.monotonic() - started, 2)
            sizes[str(count)] = {"log_bytes": log_bytes, "snapshot_bytes": _size(state / SNAPSHOT)}
            print(f"{loaded} jobs: {sizes[str(count)]}", flush=True)
    finally:
        emulator.stop()
    result = {"sizes": sizes, "compact_seconds": compact_seconds, "load_seconds": load_seconds}
    output.write_text(json.dumps(result, indent=2))


def _put_directly(region: str, table_name: str, images: Iterable[dict[str, Any]]) -> int:
    found = moto_tables.find(region, table_name)
    assert found is not None
    written = 0
    for image in images:
        moto_tables.put_image(found[0], None, image)
        written += 1
    return written


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(file.stat().st_size for file in path.iterdir() if file.is_file())
    return path.stat().st_size if path.exists() else 0


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), [int(n) for n in sys.argv[3:]])
