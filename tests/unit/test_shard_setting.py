"""The due index's shard count is a setting; after a change, readers cover the old and the new count."""

from __future__ import annotations

import pytest

from sundial.functions.settings import Settings
from sundial.shared import constants as c
from sundial.shared.store import DueShards

NAMES = {
    c.ENV_TABLE_NAME: "jobs",
    c.ENV_QUEUE_URL_HIGH: "h",
    c.ENV_QUEUE_URL_MEDIUM: "m",
    c.ENV_QUEUE_URL_LOW: "l",
    c.ENV_DEAD_LETTER_QUEUE_URL: "d",
}


def test_without_a_change_readers_cover_the_written_count() -> None:
    assert DueShards().read == range(c.DUE_SHARDS)
    assert DueShards(32).read == range(32)


@pytest.mark.parametrize(("written", "before", "read"), [(16, 8, 16), (8, 16, 16)])
def test_readers_cover_the_larger_of_the_new_and_the_previous_count(
    written: int, before: int, read: int
) -> None:
    assert DueShards(written, before).read == range(read)


@pytest.mark.parametrize(("written", "before"), [(0, None), (257, None), (8, 0), (8, 300)])
def test_a_count_out_of_bounds_is_refused(written: int, before: int | None) -> None:
    with pytest.raises(ValueError, match="shard count"):
        DueShards(written, before)


def test_the_functions_read_both_counts_from_their_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**NAMES, c.ENV_DUE_SHARDS: "8", c.ENV_DUE_SHARDS_BEFORE: "16"}.items():
        monkeypatch.setenv(name, value)
    settings = Settings()  # type: ignore[call-arg]
    assert (settings.due_shards, settings.due_shards_before) == (8, 16)
    monkeypatch.setenv(c.ENV_DUE_SHARDS, "0")
    with pytest.raises(ValueError, match=c.ENV_DUE_SHARDS):
        Settings()  # type: ignore[call-arg]
