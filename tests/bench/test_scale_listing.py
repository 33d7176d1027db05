"""The listing's reads counted among many jobs (bench/scale/listing.py): the first page of each dead
filter holds both dead jobs, the oldest of all, and reads no more than page size + shards; and the
count is one that sees a listing that reads more, such as the same filter before its index is ready."""

from __future__ import annotations

from typing import Any

import pytest

from bench.scale import listing
from sundial.shared import constants as c

JOBS = 30_000
BOUND = listing.PAGE + c.LIST_SHARDS


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return listing.measure(JOBS)


@pytest.mark.parametrize("name", listing.DEAD_FILTERS)
def test_the_first_dead_page_holds_every_match_and_reads_at_most_page_size_plus_shards(
    report: dict[str, Any], name: str
) -> None:
    page = report["pages"][name]
    assert page["every_match"] and page["jobs"] >= 1
    assert page["read"] <= BOUND, page
    assert listing.holds(report)


def test_a_full_page_reads_its_page_and_a_bounded_count_for_its_total(report: dict[str, Any]) -> None:
    page = report["pages"]["priority=high"]
    assert page["jobs"] == listing.PAGE and page["total_is_estimate"]
    assert page["items_read"] == listing.PAGE
    assert page["rows_read"] <= 2 * listing.PAGE + c.LIST_SHARDS  # each shard's share read ahead
    assert page["rows_counted"] <= 1000  # the total counts at most this many rows, then estimates
    assert abs(page["total"] - JOBS / 3) <= JOBS / 3 * 0.1


def test_the_count_sees_a_listing_that_reads_every_job() -> None:
    # Without its filter indexes the dead filter reads the listing index of every job: the model
    # counts those reads, and its goal no longer holds.
    before_the_upgrade = listing.measure(5_000, ready=frozenset())
    assert before_the_upgrade["pages"]["status=dead"]["read"] > 1000  # what it read to look for them
    assert not listing.holds(before_the_upgrade)
