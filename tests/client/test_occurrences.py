"""A job's occurrences (GET /jobs/{id}/occurrences) through the typed client and `sundial jobs
occurrences`: what they send and print against a stub, and what they read from the local stack."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from sundial.client import InvalidInput, NotFound, OccurrenceView, SundialClient
from sundial.contract.vocabulary import OccurrenceState, SkipReason
from tests.client.conftest import NOOP
from tests.client.test_cli import sundial
from tests.client.test_signing import JOB, JOB_ID
from tests.support.sigv4_stub import Received, Reply, StubApi

# Generous: the process suites share two cores with the in-process ones in `make test`.
WAIT_SECONDS = 60.0
RATE = "rate(2 seconds)"


def _row(scheduled_at: str, state: str, **fields: Any) -> dict[str, Any]:
    return {
        "scheduled_at": scheduled_at,
        "start_at": fields.pop("start_at", scheduled_at),
        "state": state,
        "reason": None,
        "attempts": 0,
        "last_status": None,
        "backfilled": False,
        "extra": False,
        **fields,
    }


ROWS = [
    _row("2026-12-01T09:00:00Z", "ran", attempts=1, last_status="succeeded", backfilled=True),
    _row("2026-12-01T09:01:00Z", "skipped", reason="paused"),
    _row("2026-12-01T09:01:30.125Z", "ran", attempts=2, last_status="failed", extra=True),
    _row("2026-12-01T09:02:00Z", "skipped", reason="misfire"),
    _row("2026-12-01T09:03:00Z", "waiting", start_at="2026-12-01T09:03:17.250Z", reason="paused"),
]


def _query(received: Received) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(received.path).query).items()}


def _paged(rows: list[dict[str, Any]]) -> Callable[[Received], Reply]:
    """An API that answers `rows` a page of `limit` at a time; its token is the next row's index."""

    def answer(received: Received) -> Reply:
        query = _query(received)
        start = int(query.get("next_token", "0"))
        end = start + int(query.get("limit", "100"))
        token = str(end) if end < len(rows) else None
        return Reply(200, {"occurrences": rows[start:end], "next_token": token})

    return answer


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    """The header's columns and each row's cells, split where the header's columns start."""
    header, *lines = text.splitlines()
    names = [name.strip() for name in header.split("  ") if name.strip()]
    starts = [header.index(name) for name in names]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return names, [[line[a:b].strip() for a, b in bounds] for line in lines]


# --- the client, against a stub ------------------------------------------------------------------


def test_the_client_sends_the_range_in_utc_and_follows_each_token() -> None:
    with StubApi(default=_paged(ROWS)) as stub:
        client = SundialClient(stub.url)
        start = datetime(2026, 12, 1, 10, 0, tzinfo=timezone(timedelta(hours=1)))
        page = client.list_occurrences(JOB_ID.lower(), from_=start, to="2026-12-01T09:05:00Z", limit=2)
        assert [row.scheduled_at for row in page.occurrences] == [r["scheduled_at"] for r in ROWS[:2]]
        assert page.next_token == "2"
        assert urlsplit(stub.received[0].path).path == f"/jobs/{JOB_ID}/occurrences"
        assert _query(stub.received[0]) == {
            "from": "2026-12-01T09:00:00.000Z",
            "to": "2026-12-01T09:05:00Z",
            "limit": "2",
        }

        every = list(client.iter_occurrences(JOB_ID, from_=start, page_size=2))
        assert every == [OccurrenceView.model_validate(row) for row in ROWS]
        asked = [_query(received) for received in stub.received[1:]]
        assert [query.get("next_token") for query in asked] == [None, "2", "4"]
        assert {query["from"] for query in asked} == {"2026-12-01T09:00:00.000Z"}
        assert all("to" not in query for query in asked)
    assert every[1].state is OccurrenceState.SKIPPED and every[1].reason is SkipReason.PAUSED


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("from", datetime(2026, 12, 1, 9, 0)),  # naive: no zone to read it in
        ("from", "yesterday"),
        ("to", "2026-12-01T09:00:00"),  # no offset
        ("to", "0001-01-01T00:00:00Z"),  # outside the API's range
    ],
)
def test_the_client_refuses_a_bad_instant_naming_it_without_sending(field: str, value: object) -> None:
    with StubApi(default=_paged(ROWS)) as stub:
        client = SundialClient(stub.url)
        arguments: dict[str, Any] = {"from_" if field == "from" else "to": value}
        with pytest.raises(InvalidInput) as refused:
            client.list_occurrences(JOB_ID, **arguments)
        assert refused.value.field == field and refused.value.message.startswith(f"{field}: ")
        assert stub.received == []


# --- the command, against a stub -----------------------------------------------------------------


def test_the_table_shows_state_reason_attempts_status_and_flags() -> None:
    with StubApi(default=_paged(ROWS)) as stub:
        result = sundial(stub.url, "jobs", "occurrences", JOB_ID, "--all")
    assert result.exit_code == 0, result.stderr
    names, rows = _table(result.stdout)
    # A start that differs from its instant (a spread window) gets a column of its own.
    assert names == ["SCHEDULED", "START", "STATE", "REASON", "ATTEMPTS", "LAST STATUS", "FLAGS"]
    assert rows == [
        ["2026-12-01T09:00:00Z", "", "ran", "", "1", "succeeded", "backfilled"],
        ["2026-12-01T09:01:00Z", "", "skipped", "paused", "0", "", ""],
        ["2026-12-01T09:01:30.125Z", "", "ran", "", "2", "failed", "extra"],
        ["2026-12-01T09:02:00Z", "", "skipped", "misfire", "0", "", ""],
        ["2026-12-01T09:03:00Z", "2026-12-01T09:03:17.250Z", "waiting", "paused", "0", "", ""],
    ]
    assert result.stderr == ""  # the listing ended: no token to go on from

    with StubApi(default=_paged(ROWS[:2])) as stub:
        on_time = sundial(stub.url, "jobs", "occurrences", JOB_ID)
    assert _table(on_time.stdout)[0] == ["SCHEDULED", "STATE", "REASON", "ATTEMPTS", "LAST STATUS", "FLAGS"]


def test_pages_as_runs_do_in_every_format() -> None:
    with StubApi(default=_paged(ROWS)) as stub:
        first = sundial(stub.url, "jobs", "occurrences", JOB_ID, "--max-items", "3", "-o", "json")
        assert first.exit_code == 0, first.stderr
        document = json.loads(first.stdout)
        assert document == {"occurrences": ROWS[:3], "next_token": "3"}
        # No page asks for more than are still wanted, so the token goes on after the last one printed.
        assert [_query(received)["limit"] for received in stub.received] == ["3"]

        rest = sundial(stub.url, "jobs", "occurrences", JOB_ID, "--starting-token", "3", "-o", "jsonl")
        assert [json.loads(line) for line in rest.stdout.splitlines()] == ROWS[3:]
        assert _query(stub.received[-1])["next_token"] == "3"

        table = sundial(stub.url, "jobs", "occurrences", JOB_ID, "--limit", "2")
        assert len(_table(table.stdout)[1]) == 2
        assert table.stderr.strip() == "more occurrences: --starting-token 2"

        every = sundial(stub.url, "jobs", "occurrences", JOB_ID, "--all", "-o", "yaml")
        assert every.stdout.startswith("---\noccurrences:") and "next_token: null" in every.stdout

        both = sundial(stub.url, "jobs", "occurrences", JOB_ID, "--all", "--max-items", "2")
        assert both.exit_code == 1 and "give --all or --max-items, not both" in both.stderr


@pytest.mark.parametrize(
    ("flags", "named", "says"),
    [
        (["--from", "yesterday"], "--from", "'yesterday' is not an RFC 3339 instant with an offset"),
        (["--to", "2026-12-01T09:00:00"], "--to", "'2026-12-01T09:00:00' is not an RFC 3339 instant"),
        (["--from", "-2x"], "--from", "'-2x' is not an RFC 3339 instant"),
        (["--to", "0001-01-01T00:00:00Z"], "--to", "must lie between 1970-01-01T00:00:00Z and"),
        (["--from", "-1h", "--to", "-2h"], "--to", "does not come after --from"),
        (["--from", "+1h"], "--from", "is not in the past: give --to as well"),
    ],
)
def test_a_bad_range_is_refused_naming_its_flag_before_any_call(
    flags: list[str], named: str, says: str
) -> None:
    with StubApi(default=_paged(ROWS)) as stub:
        result = sundial(stub.url, "jobs", "occurrences", JOB_ID, *flags)
    assert result.exit_code == 1
    assert f"Invalid value for {named}: " in result.stderr and says in result.stderr, result.stderr
    assert stub.received == []


def test_a_range_may_be_relative_to_now_or_given_by_one_bound() -> None:
    def sent(*flags: str) -> tuple[datetime, datetime]:
        with StubApi(default=_paged([])) as stub:
            result = sundial(stub.url, "jobs", "occurrences", JOB_ID, *flags, "-o", "json")
        assert result.exit_code == 0, result.stderr
        query = _query(stub.received[0])
        return _instant(query["from"]), _instant(query["to"])

    before = datetime.now(UTC)
    start, end = sent("--from", "-1h30m")
    after = datetime.now(UTC)
    assert before - timedelta(minutes=90) <= start <= after - timedelta(minutes=90)
    assert before <= end <= after  # --from alone ends now

    start, end = sent("--to", "2026-12-01T10:00:00+01:00")
    assert (start, end) == (datetime(2026, 11, 30, 9, tzinfo=UTC), datetime(2026, 12, 1, 9, tzinfo=UTC))

    start, end = sent("--from=-2d", "--to", "now")
    assert timedelta(days=2) - timedelta(seconds=5) < end - start <= timedelta(days=2)

    with StubApi(default=_paged([])) as stub:
        sundial(stub.url, "jobs", "occurrences", JOB_ID)
    assert _query(stub.received[0]) == {"limit": "50"}  # the API's own default range


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_get_shows_missed_instants_only_when_there_are_some() -> None:
    for missed, shown in ((0, None), (3, "3 (skipped by misfire or overlap: `sundial jobs occurrences`)")):
        with StubApi(default=Reply(200, {**JOB, "missed": missed})) as stub:
            result = sundial(stub.url, "jobs", "get", JOB_ID)
        assert result.exit_code == 0, result.stderr
        fields = dict(line.split(None, 1) for line in result.stdout.splitlines()[1:] if " " in line.strip())
        assert (fields.get("missed", "").strip() or None) == shown, result.stdout


def test_list_adds_a_missed_column_only_when_a_job_of_the_page_missed_some() -> None:
    def listed(*missed: int) -> list[list[str]]:
        jobs = [{**JOB, "id": f"01JD{n:022d}", "missed": count} for n, count in enumerate(missed)]
        with StubApi(default=Reply(200, {"jobs": jobs, "next_token": None})) as stub:
            result = sundial(stub.url, "jobs", "list")
        assert result.exit_code == 0, result.stderr
        return [line.split() for line in result.stdout.splitlines()]

    header, *rows = listed(0, 3, 1200)
    assert header[-2:] == ["HEALTH", "MISSED"] and [row[-1] for row in rows] == ["0", "3", "1200"]
    header, *rows = listed(0, 0)
    assert header[-1] == "HEALTH" and [row[-1] for row in rows] == ["ok", "ok"]


# --- against the local stack ---------------------------------------------------------------------


def _tag() -> str:
    return f"occurrences-{uuid.uuid4().hex[:8]}"


def _until(read: Callable[[], Any], done: Callable[[Any], bool], what: str) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    value = read()
    while not done(value):
        assert time.monotonic() < deadline, f"{what}: {value}"
        time.sleep(0.3)
        value = read()
    return value


def _ran(client: SundialClient, job_id: str, since: str) -> list[OccurrenceView]:
    every = client.iter_occurrences(job_id, from_=since, to=datetime.now(UTC))
    return [row for row in every if row.state is OccurrenceState.RAN]


@pytest.mark.e2e
def test_a_rate_job_lists_the_instants_it_ran_oldest_first_page_by_page(client: SundialClient) -> None:
    job = client.create_job({"name": _tag(), "schedule": RATE, "target": NOOP})
    try:
        ran = _until(lambda: _ran(client, job.id, job.created_at), lambda rows: len(rows) >= 3, "not 3 runs")
        assert all((row.attempts, row.last_status) == (1, "succeeded") for row in ran), ran
        assert not any(row.extra or row.backfilled or row.reason for row in ran), ran

        end = datetime.now(UTC)
        whole = client.list_occurrences(job.id, from_=job.created_at, to=end, limit=500)
        instants = [row.scheduled_at for row in whole.occurrences]
        assert instants == sorted(instants) and len(set(instants)) == len(instants)
        assert whole.next_token is None
        # Page by page, one at a time: the same rows, in the same order.
        one_by_one = list(client.iter_occurrences(job.id, from_=job.created_at, to=end, page_size=1))
        assert one_by_one == whole.occurrences
        first = client.list_occurrences(job.id, from_=job.created_at, to=end, limit=1)
        assert first.occurrences == whole.occurrences[:1] and first.next_token
    finally:
        client.cancel_job(job.id)


@pytest.mark.e2e
def test_the_instants_of_a_pause_are_skipped_for_it_but_the_one_a_resume_runs(client: SundialClient) -> None:
    job = client.create_job({"name": _tag(), "schedule": RATE, "target": NOOP})
    _until(lambda: _ran(client, job.id, job.created_at), bool, "never ran")
    since = client.pause_job(job.id).updated_at

    def paused(state: OccurrenceState) -> list[OccurrenceView]:
        rows = client.iter_occurrences(job.id, from_=since, to=datetime.now(UTC))
        return [row for row in rows if row.state is state and row.reason is SkipReason.PAUSED]

    # A resume would pass over what fell due while paused but the latest, which run_once runs: the
    # others show skipped for the pause already, the latest waits.
    passed = _until(lambda: paused(OccurrenceState.SKIPPED), lambda rows: len(rows) >= 2, "none passed over")
    assert all(row.attempts == 0 and row.last_status is None for row in passed), passed
    assert len(paused(OccurrenceState.WAITING)) <= 1
    # Cancelled while paused, nothing will run any of them: all were skipped for the pause.
    client.cancel_job(job.id)
    skipped = paused(OccurrenceState.SKIPPED)
    assert {row.scheduled_at for row in passed} <= {row.scheduled_at for row in skipped}, skipped
    assert all(row.attempts == 0 and row.last_status is None for row in skipped), skipped
    assert paused(OccurrenceState.WAITING) == []


@pytest.mark.e2e
def test_an_unknown_job_and_bad_values_are_refused_naming_them(client: SundialClient) -> None:
    with pytest.raises(NotFound):
        client.list_occurrences("01JD0000000000000000000000")
    job = client.create_job({"name": _tag(), "schedule": "rate(1 hour)", "target": NOOP})
    try:
        assert client.list_occurrences(job.id).occurrences is not None  # the 24 hours before now
        for arguments, field in (
            ({"limit": 501}, "limit"),
            ({"limit": 0}, "limit"),
            ({"next_token": "not-a-token"}, "next_token"),
        ):
            with pytest.raises(InvalidInput) as refused:
                client.list_occurrences(job.id, **arguments)
            assert refused.value.field == field, (arguments, refused.value)
        with pytest.raises(InvalidInput) as backwards:
            client.list_occurrences(job.id, from_="2026-12-02T00:00:00Z", to="2026-12-01T00:00:00Z")
        assert backwards.value.field in ("from", "to")
    finally:
        client.cancel_job(job.id)


@pytest.mark.e2e
def test_the_command_prints_a_jobs_occurrences_over_the_local_stack(
    client: SundialClient, local_api: str
) -> None:
    job = client.create_job({"name": _tag(), "schedule": RATE, "target": NOOP})
    try:
        _until(lambda: _ran(client, job.id, job.created_at), lambda rows: len(rows) >= 2, "not 2 runs")
        as_json = sundial(local_api, "jobs", "occurrences", job.id, "--from", job.created_at, "-o", "json")
        assert as_json.exit_code == 0, as_json.stderr
        document = json.loads(as_json.stdout)
        assert set(document) == {"occurrences", "next_token"}
        assert sum(row["state"] == "ran" for row in document["occurrences"]) >= 2

        as_table = sundial(local_api, "jobs", "occurrences", job.id.lower(), "--from", job.created_at)
        names, rows = _table(as_table.stdout)
        assert names[0] == "SCHEDULED" and "STATE" in names and "REASON" in names
        state = names.index("STATE")
        assert [row[state] for row in rows].count("ran") >= 2

        missing = sundial(local_api, "jobs", "occurrences", "01JD0000000000000000000000")
        assert missing.exit_code == 2 and "not found" in missing.stderr
    finally:
        client.cancel_job(job.id)
