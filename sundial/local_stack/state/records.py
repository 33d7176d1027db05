"""Records on disk: one JSON object per line behind its CRC-32, so that a torn write is told apart
from a whole one.

A record is appended with a single write and fsync'd before the request it records is answered. A
crash mid-write leaves a prefix of the last record (or, on some file systems, zeros): that tail was
never acknowledged, so it is dropped. A bad record with whole ones after it is damage, not a torn
write, and is refused.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Record = dict[str, Any]
_CRC_DIGITS = 8


class CorruptState(Exception):
    """A record in the middle of a file does not read back as it was written."""


def encode(record: Record) -> bytes:
    payload = json.dumps(record, separators=(",", ":")).encode()
    return b"%08x " % zlib.crc32(payload) + payload + b"\n"


def decode(line: bytes) -> Record | None:
    """The record on a whole line, or None when the line is not one (torn, or damaged)."""
    if not line.endswith(b"\n") or len(line) < _CRC_DIGITS + 2 or line[_CRC_DIGITS : _CRC_DIGITS + 1] != b" ":
        return None
    payload = line[_CRC_DIGITS + 1 : -1]
    try:
        if int(line[:_CRC_DIGITS], 16) != zlib.crc32(payload):
            return None
        record = json.loads(payload)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


@dataclass(frozen=True)
class Scan:
    records: int
    whole_bytes: int  # where the last whole record ends: what follows is a torn tail
    size: int

    @property
    def torn(self) -> bool:
        return self.whole_bytes < self.size


@dataclass
class Reading:
    """How far a scan has read its file, for whoever is told the scan was interrupted."""

    path: Path
    size: int
    offset: int = 0

    def describe(self) -> str:
        share = f"{self.offset / self.size:.0%}" if self.size else "all"
        return f"{self.path.name}, {share} of {self.size / 1e6:.1f} MB read"


def scan(path: Path, apply: Callable[[Record], None], reading: Reading | None = None) -> Scan:
    """Hands every whole record to `apply`, in order, keeping `reading` up to date. Raises
    CorruptState for a bad record that has whole records after it, and OSError when the file cannot
    be read."""
    records = whole_bytes = offset = 0
    first_bad: int | None = None
    with path.open("rb") as file:
        for line in file:
            if reading is not None:
                reading.offset = offset
            record = decode(line)
            if record is None:
                first_bad = offset if first_bad is None else first_bad
            elif first_bad is not None:
                raise CorruptState(f"{path}: the record at byte {first_bad} is damaged")
            else:
                apply(record)
                records += 1
                whole_bytes = offset + len(line)
            offset += len(line)
    return Scan(records, whole_bytes, offset)


class AppendLog:
    """An append-only file of records; `append` returns once the record is on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size

    def append(self, record: Record) -> None:
        """Raises OSError; the record may then be partly written, which a later scan drops as torn."""
        data = memoryview(encode(record))
        while data:
            written = os.write(self._fd, data)
            data = data[written:]
            self.size += written
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def write_file(path: Path, records: Callable[[Callable[[Record], None]], None]) -> int:
    """Writes a new file of records through `records(emit)`, fsync'd; returns its size."""
    size = 0
    with path.open("wb") as file:

        def emit(record: Record) -> None:
            nonlocal size
            size += file.write(encode(record))

        records(emit)
        file.flush()
        os.fsync(file.fileno())
    return size


def sync_directory(path: Path) -> None:
    """Makes a rename or a new file in `path` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
