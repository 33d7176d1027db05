"""The due index's shard count is a setting; after a change, readers cover the old and the new count."""

from __future__ import annotations

import pytest

from shared import constants as c


def counts(monkeypatch: pytest.MonkeyPatch, shards: str | None, before: str | None) -> tuple[int, int]:
    for name, value in ((c.ENV_DUE_SHARDS, shards), (c.ENV_DUE_SHARDS_BEFORE, before)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    return c.shard_counts()


def test_without_settings_rows_are_written_and_read_in_the_default_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert counts(monkeypatch, None, None) == (c.DEFAULT_DUE_SHARDS, c.DEFAULT_DUE_SHARDS)


@pytest.mark.parametrize(("shards", "before", "expected"), [("16", "8", (16, 16)), ("8", "16", (8, 16))])
def test_readers_cover_the_larger_of_the_new_and_the_previous_count(
    monkeypatch: pytest.MonkeyPatch, shards: str, before: str, expected: tuple[int, int]
) -> None:
    assert counts(monkeypatch, shards, before) == expected


@pytest.mark.parametrize("bad", ["0", "-3", "eight", "257", "1.5"])
def test_a_shard_count_out_of_bounds_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    with pytest.raises(ValueError, match=c.ENV_DUE_SHARDS):
        counts(monkeypatch, bad, None)
