"""GET /jobs filtered by name (a case-insensitive substring), and its pages: every match exactly once,
newest first, however the filter thins the pages out."""

from __future__ import annotations

from typing import Any

import pytest

from local_stack.resources import Resources
from shared.api.requests import list_filter
from shared.clock import SystemClock
from shared.store import JobStore
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


def test_a_rare_filter_answers_short_pages_with_a_token_and_misses_nothing(
    env: Resources, dynamodb: Any, jobs: list[dict[str, Any]]
) -> None:
    store = JobStore(dynamodb, env.table_name, SystemClock())
    keep = list_filter(None, None, "report")
    assert keep is not None
    pages: list[list[str | None]] = []
    token: str | None = None
    while True:
        # Two index rows per call: pages come back short, some empty, each with a token.
        page = store.list_jobs(2, token, keep, max_reads=2)
        pages.append([job.name for job in page.jobs])
        token = page.next_token
        if token is None:
            break

    assert [name for page in pages for name in page] == list(reversed(MATCHING))
    assert [] in pages[:-1]  # an empty page that is not the last
    assert all(len(page) <= 2 for page in pages)


def test_a_filtered_page_reads_the_index_in_batches_not_row_by_row(
    env: Resources, dynamodb: Any, jobs: list[dict[str, Any]]
) -> None:
    store = JobStore(dynamodb, env.table_name, SystemClock())
    queries: list[int] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.Query", lambda params, **_: queries.append(params["Limit"])
    )
    keep = list_filter(None, None, "nightly")  # the oldest job alone

    page = store.list_jobs(1, None, keep)

    assert [job.name for job in page.jobs] == ["Nightly-REPORT-eu"]
    assert queries == [100]
