"""The ledger part of `make bench` (bench/ledger.py) at a small size: what it counts at the client
boundary holds. A job never paused writes no SKIP item and no transaction; each pause writes exactly
one SKIP item, at its resume, in one transaction with the job's update, whatever its length; a page
of occurrences reads the job, then its history, skip and backfill ledgers once each. And the meter
bills a filtered query for every item it evaluated."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from bench import ledger
from bench.harness import Aws, Row
from bench.meter import Meter
from sundial.contract.vocabulary import SkipReason
from sundial.shared.clock import FixedClock
from sundial.shared.lifecycle.skips import Skip
from sundial.shared.store import JobStore
from sundial.shared.store.skips import skip_item

MINUTE_MS = ledger.MINUTE_MS
PAUSE_MS = 20 * MINUTE_MS
LONG_PAUSE_MS = 3 * ledger.HOUR_MS
PAGE = 10
SMALL = ledger.Size(
    repetitions=1,
    never_paused_jobs=2,
    never_paused_minutes=3,
    never_paused_days=1,
    pauses=((PAUSE_MS,), (PAUSE_MS, PAUSE_MS), (LONG_PAUSE_MS,)),
    history_minutes=3,
    paged_history_minutes=2 * PAGE + 5,
    tick_every_ms=30 * MINUTE_MS,
    after_minutes=3,
    page=PAGE,
    kept_stretches=300,
)


@pytest.fixture(scope="module")
def rows(bench_aws: Callable[[str], Aws]) -> dict[str, Row]:
    return {row.name: row for row in ledger.measure(bench_aws("ledger-"), SMALL)}


def _row(rows: dict[str, Row], start: str) -> Row:
    (found,) = [row for name, row in rows.items() if name.startswith(start)]
    return found


def test_a_job_never_paused_writes_no_skip_item_and_no_transaction(rows: dict[str, Row]) -> None:
    skips = _row(rows, "ledger, never paused: SKIP items")
    assert skips.value == 0 and skips.met
    for kind in ("rate(1 minute)", "daily"):
        extra = _row(rows, f"ledger, never paused: extra write requests per execution ({kind})")
        assert extra.detail["skip_items_written"] == [0]
        assert extra.detail["transactions"] == 0
        assert "SKIP" not in extra.detail["items_written"]
        assert extra.detail["items_written"]["JOB"] > 0
        assert extra.detail["executions"][0] > 0


def test_each_pause_writes_exactly_one_skip_item_at_its_resume_however_long(rows: dict[str, Row]) -> None:
    per_pause = _row(rows, "ledger, a pause: SKIP items per pause")
    assert per_pause.value == 1 and per_pause.met
    pauses = per_pause.detail["pauses"]
    assert [pause["paused"] for pause in pauses] == ["20 min", "20 min", "20 min", "3 h"]
    assert per_pause.detail["skip_items_written"] == per_pause.detail["skip_items_stored"] == 4
    for pause, length in zip(pauses, (PAUSE_MS, PAUSE_MS, PAUSE_MS, LONG_PAUSE_MS), strict=True):
        assert pause["skip_items_its_resume_wrote"] == 1
        assert pause["stored"]["reason"] == "paused"
        # Paused mid-minute: every instant of the pause, but the latest, which the resume runs now.
        assert pause["stored"]["count"] == length // MINUTE_MS - 1
        assert pause["runs_after_resume"] > 0


def test_a_resume_is_one_transaction_of_the_jobs_update_and_one_put(rows: dict[str, Row]) -> None:
    resume = _row(rows, "ledger, a pause: the resume's write units")
    assert resume.detail["calls"]["TransactWriteItems"] == 1
    assert "UpdateItem" not in resume.detail["calls"] and "PutItem" not in resume.detail["calls"]
    assert resume.detail["items_written"] == {"JOB": 1, "SKIP": 1}
    assert set(resume.detail["write_requests"]) == {2}
    # A transaction bills each item twice: at least 2 units for the job and 2 for the skip item.
    assert 4 <= resume.value <= 12
    assert "TransactWriteItems" not in resume.detail["pause_calls"]


def test_a_page_of_occurrences_reads_the_job_and_each_ledger_once(rows: dict[str, Row]) -> None:
    page = _row(rows, "ledger, a page: GET")
    # the job; history, the stretches starting in the page and the one before it, the backfill ledger
    assert page.detail["calls_per_page"] == {"GetItem": 1, "Query": 4}
    assert page.detail["ran_pages"] == 2
    assert page.detail["skipped_pages"] >= LONG_PAUSE_MS // MINUTE_MS // PAGE - 2
    # Each of the five reads is at least one unit; a page that ran reads its history items too.
    skipped = page.detail["read_units_of_a_skipped_page"]
    assert skipped == 5
    assert page.value >= skipped


def test_stretches_kept_before_a_page_leave_its_rows_as_they_were(rows: dict[str, Row]) -> None:
    crowded = _row(rows, "ledger, a page: the same page of runs")
    assert crowded.detail["stretches_kept"] == 300
    assert crowded.detail["rows"] == PAGE and crowded.detail["states"] == {"ran": PAGE}
    assert crowded.value >= crowded.detail["read_units_without_them"]


def test_the_meter_bills_a_filtered_query_for_every_item_it_evaluated(
    aws: dict[str, Any], dynamodb: Any, sqs: Any, resources: Any
) -> None:
    raw = boto3.client("dynamodb", **aws)  # unmetered, as the meter's own reads
    table = resources.table_name
    # 40 stretches of about 200 bytes, every one ended before `from`: the filter keeps none.
    for n in range(40):
        item = skip_item("01JOB", Skip(n * MINUTE_MS, n * MINUTE_MS + 1, SkipReason.PAUSED, 1), 3600)
        item["padding"] = {"S": "x" * 150}
        raw.put_item(TableName=table, Item=item)
    meter = Meter(dynamodb, sqs, raw, table)
    store = JobStore(dynamodb, table, FixedClock(0))
    with meter.acting_as("reader"):
        assert store.skips("01JOB", 100 * MINUTE_MS, 200 * MINUTE_MS) == []
    # About 8 KB evaluated, read strongly: 2 units or more, not the 1 of an empty answer.
    assert meter.bill("reader").read_units >= 2
