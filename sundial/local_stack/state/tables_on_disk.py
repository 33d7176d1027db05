"""The emulator's tables on disk: a snapshot, and the log of every write applied since it.

Start-up reads the snapshot, then the log, into moto; every acknowledged write is one log record,
fsync'd before its answer goes out. When the log has grown past the snapshot (and COMPACT_MIN_BYTES),
the tables as they are become the next snapshot and the log starts afresh. The switch is a rename:
a crash at any point leaves either the old snapshot with its whole log, or the new one.

    format.json          {"format": 1}
    snapshot.log         generation G: the table definitions, then every item
    wal-<G>.log          the writes applied since snapshot G
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sundial.local_stack.state import directory, records, tables
from sundial.local_stack.state.directory import DirectoryLock, StateError
from sundial.local_stack.state.records import AppendLog, CorruptState, Record

logger = logging.getLogger(__name__)
SNAPSHOT = "snapshot.log"
SNAPSHOT_TMP = "snapshot.tmp"
COMPACT_MIN_BYTES = 32 * 1024 * 1024
SNAPSHOT_CHUNK = 500  # images per snapshot record
SchemaReplay = Callable[[dict[str, Any]], None]


def log_name(generation: int) -> str:
    return f"wal-{generation:08d}.log"


def holds_state(path: Path) -> bool:
    """Whether the directory holds tables from an earlier run (read only, no lock)."""
    logs = [file for file in path.glob("wal-*.log") if file.stat().st_size > 0] if path.is_dir() else []
    return (path / SNAPSHOT).exists() or bool(logs)


@dataclass(frozen=True)
class Restored:
    generation: int
    items: int  # the tables' items once restored
    log_records: int
    torn_bytes: int
    seconds: float


class TablesOnDisk:
    """Opened (checked and locked) before the emulator serves; `restore` then `record` each write."""

    def __init__(self, path: Path, lock: DirectoryLock) -> None:
        self.path = path
        self._lock = lock
        self._generation = 0
        self._schema: list[dict[str, Any]] = []
        self._log: AppendLog | None = None
        self._snapshot_bytes = 0
        self._reading: records.Reading | None = None
        self._restore_started: float | None = None

    @classmethod
    def open(cls, path: Path) -> TablesOnDisk:
        """Raises StateError (unreadable, newer format, held by another emulator); changes nothing then."""
        path = path.absolute()
        directory.check(path)
        path.mkdir(parents=True, exist_ok=True)
        return cls(path, DirectoryLock(path, directory.EMULATOR_LOCK).acquire())

    def restore(self, replay_schema: SchemaReplay) -> Restored:
        """Puts the tables back into moto: snapshot, then log. Raises StateError."""
        started = self._restore_started = time.monotonic()
        try:
            self._generation, self._snapshot_bytes = self._read_snapshot(replay_schema)
            log_path = self.path / log_name(self._generation)
            scan = self._read_log(log_path, replay_schema) if log_path.exists() else None
        except CorruptState as exc:
            raise StateError(f"state directory {self.path}: {exc}; move it aside to start afresh") from exc
        except OSError as exc:
            unreadable = f"cannot read {exc.filename}: {exc.strerror}"
            raise StateError(f"state directory {self.path}: {unreadable}") from exc
        finally:
            self._reading = None
        torn = self._open_log(log_path, scan)
        self._lock.sign()
        self._restore_started = None
        log_records = scan.records - 1 if scan else 0
        seconds = time.monotonic() - started
        return Restored(self._generation, tables.count(), log_records, torn, seconds)

    def restoring(self) -> str:
        """What `restore` is doing now, said when a signal interrupts it."""
        if self._restore_started is None:
            return f"opening the state directory {self.path}"
        seconds = time.monotonic() - self._restore_started
        if self._reading is None:
            return f"opening the log of {self.path} for writes ({seconds:.1f} s into the restore)"
        where = self._reading.describe()
        return f"restoring the tables from {self.path} ({where}, {seconds:.1f} s in)"

    def record(self, record: Record) -> None:
        """Appends one applied write, on disk when this returns. Raises OSError."""
        assert self._log is not None, "restore() first"
        if "schema" in record:
            self._schema.append(record["schema"])
        self._log.append(record)
        if self._log.size > max(COMPACT_MIN_BYTES, self._snapshot_bytes):
            self.compact()

    def compact(self) -> None:
        """The tables as they are become snapshot G+1 and the log starts afresh (moto must not change
        meanwhile: the caller holds the emulator's DynamoDB lock)."""
        assert self._log is not None
        started = time.monotonic()
        generation = self._generation + 1
        tmp = self.path / SNAPSHOT_TMP
        size = records.write_file(tmp, lambda emit: self._write_snapshot(emit, generation))
        new_log = AppendLog(self.path / log_name(generation))
        new_log.append(_header(generation, "log"))
        tmp.replace(self.path / SNAPSHOT)
        records.sync_directory(self.path)
        old, self._log = self._log, new_log
        old.close()
        old.path.unlink(missing_ok=True)
        self._generation, self._snapshot_bytes = generation, size
        seconds = time.monotonic() - started
        logger.info("state: snapshot %d written (%d bytes) in %.2f s", generation, size, seconds)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        self._lock.release()

    # --- reading ----------------------------------------------------------------------------------

    def _read_snapshot(self, replay_schema: SchemaReplay) -> tuple[int, int]:
        path = self.path / SNAPSHOT
        if not path.exists():
            return 0, 0
        reader = _Reader(path, "snapshot", replay_schema, self._schema)
        scan = records.scan(path, reader.apply, self._reading_of(path))
        if scan.torn or reader.generation is None:
            # A snapshot is renamed into place only once whole: a bad tail is damage.
            raise CorruptState(f"{path} ends in a damaged record")
        return reader.generation, scan.size

    def _read_log(self, path: Path, replay_schema: SchemaReplay) -> records.Scan:
        reader = _Reader(path, "log", replay_schema, self._schema, self._generation)
        return records.scan(path, reader.apply, self._reading_of(path))

    def _reading_of(self, path: Path) -> records.Reading:
        self._reading = records.Reading(path, path.stat().st_size)
        return self._reading

    def _open_log(self, path: Path, scan: records.Scan | None) -> int:
        """Drops a torn tail and what an interrupted compaction left, then opens the log for appends.
        Returns the bytes dropped. From here on, the directory changes."""
        directory.write_format(self.path)
        torn = 0
        if scan is not None and (scan.torn or scan.records == 0):
            torn = scan.size - scan.whole_bytes
            with path.open("r+b") as file:
                file.truncate(scan.whole_bytes)
        for stale in self.path.glob("wal-*.log"):
            if stale.name != path.name:
                stale.unlink()
        (self.path / SNAPSHOT_TMP).unlink(missing_ok=True)
        self._log = AppendLog(path)
        if self._log.size == 0:
            self._log.append(_header(self._generation, "log"))
        records.sync_directory(self.path)
        if torn:
            logger.warning("state: dropped a torn last record (%d bytes) of %s", torn, path.name)
        return torn

    # --- writing ----------------------------------------------------------------------------------

    def _write_snapshot(self, emit: Callable[[Record], None], generation: int) -> None:
        emit(_header(generation, "snapshot"))
        for request in self._schema:
            emit({"schema": request})
        for ref, images in _chunks(tables.every_item()):
            emit({"table": ref.record(), "images": images})


def _header(generation: int, kind: str) -> Record:
    return {"format": directory.FORMAT_VERSION, "generation": generation, "kind": kind}


class _Reader:
    """Applies a file's records in order; the first must be its header."""

    def __init__(
        self,
        path: Path,
        kind: str,
        replay_schema: SchemaReplay,
        schema: list[dict[str, Any]],
        generation: int | None = None,
    ) -> None:
        self._path = path
        self._kind = kind
        self._replay_schema = replay_schema
        self._schema = schema
        self._expected_generation = generation
        self.generation: int | None = None

    def apply(self, record: Record) -> None:
        try:
            self._apply(record)
        except (LookupError, TypeError) as exc:
            raise CorruptState(f"{self._path}: {exc}") from exc

    def _apply(self, record: Record) -> None:
        if self.generation is None:
            self.generation = self._header(record)
        elif "schema" in record:
            self._schema.append(record["schema"])
            self._replay_schema(record["schema"])
        elif "images" in record:
            self._images(tables.TableRef.of(record["table"]), record["images"])
        elif "items" in record:
            for change in record["items"]:
                tables.put_image(tables.TableRef.of(change), change["k"], change["i"])
        else:
            raise CorruptState(f"{self._path}: a record of unknown kind ({sorted(record)})")

    def _header(self, record: Record) -> int:
        version, generation = record.get("format"), record.get("generation")
        if (
            not isinstance(version, int)
            or not isinstance(generation, int)
            or record.get("kind") != self._kind
        ):
            raise CorruptState(f"{self._path} does not start with a {self._kind} header")
        if version > directory.FORMAT_VERSION:
            raise StateError(
                f"{self._path} is format {version}, newer than this Sundial's {directory.FORMAT_VERSION}: "
                "upgrade Sundial, or give another --state-dir"
            )
        if self._expected_generation is not None and generation != self._expected_generation:
            raise CorruptState(f"{self._path} is generation {generation}, not {self._expected_generation}")
        return generation

    def _images(self, ref: tables.TableRef, images: list[dict[str, Any]]) -> None:
        for image in images:
            tables.put_image(ref, None, image)


def _chunks(
    items: Iterator[tuple[tables.TableRef, dict[str, Any]]],
) -> Iterator[tuple[tables.TableRef, list[dict[str, Any]]]]:
    """Consecutive images of one table, SNAPSHOT_CHUNK at most at a time."""
    current: tables.TableRef | None = None
    chunk: list[dict[str, Any]] = []
    for ref, image in items:
        if (ref != current or len(chunk) >= SNAPSHOT_CHUNK) and chunk:
            assert current is not None
            yield current, chunk
            chunk = []
        current = ref
        chunk.append(image)
    if chunk and current is not None:
        yield current, chunk


__all__ = ["Restored", "StateError", "TablesOnDisk", "holds_state"]
