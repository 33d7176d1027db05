"""GET /jobs filtered by name (a case-insensitive substring), and its pages: every match exactly once,
newest first, however the filter thins the pages out."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.functions import clients
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from sundial.shared.clock import SystemClock
from sundial.shared.service.requests import list_filter
from sundial.shared.store import JobStore, listing
from tests.functions.conftest import Api

NOOP = {"type": "python", "handler": "noop"}
# Starts long after the test: the status filter must not depend on the time of day the test runs.
DAILY = {"schedule": "cron(0 9 * * ? *)", "timezone": "Europe/Berlin", "start_at": "2099-01-01T00:00:00Z"}
# Oldest first; those with "report" in any case match the filter below.
NAMES = ["Nightly-REPORT-eu", "cleanup", None, "weekly report", "sync", "reporter", "backup", "export"]
MATCHING = [name for name in NAMES if name and "report" in name.lower()]


@pytest.fixture
def jobs(api: Api) -> list[dict[str, Any]]:
    """The jobs of NAMES, newest first as the list answers them."""
    created = []
    for name in NAMES:
        answer = api("POST", "/jobs", {"target": NOOP, **DAILY, **({"name": name} if name else {})})
        assert answer.status == 201
        created.append(answer.body)
    return list(reversed(created))


def all_pages(api: Api, query: dict[str, str]) -> tuple[list[str | None], int]:
    names: list[str | None] = []
    token: str | None = None
    pages = 0
    while True:
        answer = api("GET", "/jobs", query=query | ({"next_token": token} if token else {}))
        assert answer.status == 200, answer.body
        assert len(answer.body["jobs"]) <= int(query.get("limit", "50"))
        names += [job["name"] for job in answer.body["jobs"]]
        token = answer.body["next_token"]
        pages += 1
        if token is None:
            return names, pages


def test_name_keeps_jobs_whose_name_holds_it_in_any_case(api: Api, jobs: list[dict[str, Any]]) -> None:
    answer = api("GET", "/jobs", query={"name": "RePoRt"})

    assert [job["name"] for job in answer.body["jobs"]] == list(reversed(MATCHING))
    assert answer.body["next_token"] is None


@pytest.mark.parametrize("limit", ["1", "2", "3"])
def test_pages_with_a_name_filter_give_every_match_once_newest_first(
    api: Api, jobs: list[dict[str, Any]], limit: str
) -> None:
    names, pages = all_pages(api, {"name": "report", "limit": limit})

    assert names == list(reversed(MATCHING))
    assert pages >= len(MATCHING) // int(limit)


def test_name_combines_with_status(api: Api, jobs: list[dict[str, Any]]) -> None:
    newest_report = next(job for job in jobs if job["name"] == "reporter")
    api("DELETE", f"/jobs/{newest_report['id']}")

    pending = api("GET", "/jobs", query={"name": "report", "status": "pending"})
    cancelled = api("GET", "/jobs", query={"name": "report", "status": "cancelled"})

    assert [job["name"] for job in pending.body["jobs"]] == ["weekly report", "Nightly-REPORT-eu"]
    assert [job["name"] for job in cancelled.body["jobs"]] == ["reporter"]


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "at least 1 character"), ("n" * 201, "at most 200 characters")],
    ids=["empty", "longer-than-a-name"],
)
def test_a_bad_name_filter_is_a_400(api: Api, name: str, message: str) -> None:
    answer = api("GET", "/jobs", query={"name": name})

    assert (answer.status, answer.body["field"]) == (400, "name")
    assert message in answer.body["message"]


def test_a_name_search_that_reads_its_bound_answers_what_it_found_and_misses_nothing(
    env: Resources, dynamodb: Any, jobs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JobStore(dynamodb, env.table_name, SystemClock())
    monkeypatch.setattr(listing, "EXTRA_READS", 1)  # a page stops at its first row the search rejects
    pages: list[list[str | None]] = []
    token: str | None = None
    while True:
        page = store.list_jobs(list_filter(None, None, "report"), 3, token)
        pages.append([job.name for job in page.jobs])
        token = page.next_token
        if token is None:
            break

    assert [name for page in pages for name in page] == list(reversed(MATCHING))
    assert [] not in pages  # short pages, never an empty one while a match is left
    assert any(len(page) < 3 for page in pages[:-1])


def test_each_filter_reads_its_own_index(api: Api, jobs: list[dict[str, Any]]) -> None:
    used: list[str] = []
    clients.clients().dynamodb().meta.events.register(
        "provide-client-params.dynamodb.Query", lambda params, **_: used.append(params.get("IndexName"))
    )
    for query, index in [
        ({"status": "cancelled"}, c.STATUS_INDEX_NAME),
        ({"status": "pending"}, c.LIST_INDEX_NAME),  # a live status is in no index
        ({"priority": "low"}, c.PRIORITY_INDEX_NAME),
        ({"health": "dead"}, c.HEALTH_INDEX_NAME),
        ({"name_prefix": "rep"}, c.NAME_INDEX_NAME),
        ({"name_prefix": "rep", "status": "pending"}, c.NAME_INDEX_NAME),
        ({}, c.LIST_INDEX_NAME),
    ]:
        used.clear()
        answer = api("GET", "/jobs", query=query)
        assert answer.status == 200, answer.body
        assert set(used) == {index}, query


def test_name_prefix_and_health_filters_and_the_total(api: Api, jobs: list[dict[str, Any]]) -> None:
    prefixed = api("GET", "/jobs", query={"name_prefix": "REPORT"})
    healthy = api("GET", "/jobs", query={"health": "ok", "limit": "3"})
    failing = api("GET", "/jobs", query={"health": "failing"})

    assert [job["name"] for job in prefixed.body["jobs"]] == ["reporter"]
    assert (prefixed.body["total"], prefixed.body["total_is_estimate"]) == (1, False)
    assert len(healthy.body["jobs"]) == 3 and healthy.body["total"] == len(NAMES)
    assert {job["health"] for job in healthy.body["jobs"]} == {"ok"}
    assert (failing.body["jobs"], failing.body["total"], failing.body["next_token"]) == ([], 0, None)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"health": "sick"}, "health"),
        ({"name_prefix": "re"}, "name_prefix"),
        ({"next_token": "bm90LWEtdG9rZW4"}, "next_token"),
    ],
    ids=["health", "short-prefix", "token"],
)
def test_a_bad_listing_query_is_a_400_naming_its_field(api: Api, query: dict[str, str], field: str) -> None:
    answer = api("GET", "/jobs", query=query)

    assert (answer.status, answer.body["field"]) == (400, field)
