"""Records on disk: a torn last record is dropped, damage in the middle is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from sundial.local_stack.state.records import AppendLog, CorruptState, Record, decode, encode, scan


def _log(path: Path, records: list[Record]) -> None:
    log = AppendLog(path)
    for record in records:
        log.append(record)
    log.close()


def _read(path: Path) -> tuple[list[Record], int, int]:
    seen: list[Record] = []
    result = scan(path, seen.append)
    return seen, result.whole_bytes, result.size


def test_a_record_reads_back_and_a_changed_byte_does_not() -> None:
    line = encode({"items": [{"k": "a\nb"}]})
    assert line.count(b"\n") == 1
    assert decode(line) == {"items": [{"k": "a\nb"}]}
    assert decode(line.replace(b"a", b"c", 1)) is None
    assert decode(line[:-1]) is None


@pytest.mark.parametrize("cut", [1, 5, 16])  # a record here is 17 bytes
def test_a_torn_last_record_is_dropped(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "wal.log"
    _log(path, [{"n": 1}, {"n": 2}, {"n": 3}])
    whole = path.read_bytes()
    path.write_bytes(whole[:-cut])

    seen, whole_bytes, size = _read(path)

    assert seen == [{"n": 1}, {"n": 2}]
    assert whole_bytes == len(whole) - len(encode({"n": 3}))
    assert size == len(whole) - cut


def test_zeros_after_the_last_record_are_a_torn_tail(tmp_path: Path) -> None:
    # What some file systems leave when a crash came after the size grew but before the data landed.
    path = tmp_path / "wal.log"
    _log(path, [{"n": 1}])
    path.write_bytes(path.read_bytes() + b"\0" * 300 + b"\n" + b"\0" * 10)

    seen, whole_bytes, _ = _read(path)

    assert seen == [{"n": 1}]
    assert whole_bytes == len(encode({"n": 1}))


def test_a_damaged_record_with_whole_ones_after_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _log(path, [{"n": 1}, {"n": 2}, {"n": 3}])
    data = bytearray(path.read_bytes())
    data[len(encode({"n": 1})) + 12] ^= 0x01  # inside the second record's payload
    path.write_bytes(bytes(data))

    with pytest.raises(CorruptState, match="byte"):
        _read(path)
