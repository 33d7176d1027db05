"""Hostile input: every request here gets a 4xx naming the field at fault, stores nothing, and leaves
the listing answering 200.

The requests are those that once broke the API (a 500, a job no one could list, a url that was not
the url sent) and more of the same kind."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.functions.conftest import Api

NOOP = {"type": "python", "handler": "noop"}
HOURLY = {"target": NOOP, "schedule": "rate(1 hour)"}
LAST_MOMENT = "9999-12-31T23:59:59-14:00"  # 10000-01-01T13:59:59Z


def http(url: str, **fields: Any) -> dict[str, Any]:
    return {"target": {"type": "http", "url": url, **fields}}


def nested(depth: int, inner: str = "0") -> str:
    return "[" * depth + inner + "]" * depth


def raw(payload_text: str) -> str:
    """A create body whose payload is `payload_text`, sent as it is."""
    return '{"target": {"type": "python", "handler": "noop"}, "payload": ' + payload_text + "}"


# (body or raw text, the field named): POST /jobs
CREATES: list[Any] = [
    # instants outside 1970-01-01 .. 9999-12-30 UTC
    pytest.param({"target": NOOP, "run_at": LAST_MOMENT}, "run_at", id="run_at-year-10000"),
    pytest.param({"target": NOOP, "run_at": "0001-01-01T00:00:00+14:00"}, "run_at", id="run_at-year-0"),
    pytest.param({"target": NOOP, "run_at": "0001-01-01T00:00:00Z"}, "run_at", id="run_at-year-1"),
    pytest.param({"target": NOOP, "run_at": "1969-12-31T23:59:59Z"}, "run_at", id="run_at-before-1970"),
    pytest.param({"target": NOOP, "run_at": "9999-12-31T00:00:00Z"}, "run_at", id="run_at-9999-12-31"),
    pytest.param(
        {"target": NOOP, "schedule": "at(9999-12-31T23:59:59)", "timezone": "Pacific/Pago_Pago"},
        "schedule",
        id="at-year-10000-in-its-zone",
    ),
    pytest.param({"target": NOOP, "schedule": "at(9999-12-31T12:00:00)"}, "schedule", id="at-9999-12-31"),
    pytest.param(
        {"target": NOOP, "schedule": "at(1970-01-01T00:00:00)", "timezone": "Asia/Tokyo"},
        "schedule",
        id="at-before-1970-in-its-zone",
    ),
    pytest.param({**HOURLY, "start_at": "9999-12-31T23:59:00-14:00"}, "start_at", id="start_at-year-10000"),
    pytest.param({**HOURLY, "end_at": "9999-12-31T23:59:00-14:00"}, "end_at", id="end_at-year-10000"),
    pytest.param({**HOURLY, "start_at": "0001-01-01T00:00:00+14:00"}, "start_at", id="start_at-year-0"),
    # strict types: a boolean or a string is not an integer, a number is not an instant
    pytest.param({"target": NOOP, "max_retries": True}, "max_retries", id="max_retries-true"),
    pytest.param({"target": NOOP, "max_retries": "3"}, "max_retries", id="max_retries-string"),
    pytest.param({"target": NOOP, "max_retries": 3.0}, "max_retries", id="max_retries-float"),
    pytest.param({"target": NOOP, "timeout_seconds": "30"}, "timeout_seconds", id="timeout-string"),
    pytest.param({"target": NOOP, "timeout_seconds": False}, "timeout_seconds", id="timeout-false"),
    pytest.param({"target": NOOP, "backoff": [5, "30"]}, "backoff[1]", id="backoff-string"),
    pytest.param({"target": NOOP, "backoff": [True]}, "backoff[0]", id="backoff-true"),
    pytest.param({"target": NOOP, "run_at": 1893456000}, "run_at", id="run_at-number"),
    pytest.param({"target": NOOP, "run_at": "1893456000"}, "run_at", id="run_at-digits"),
    pytest.param({"target": NOOP, "run_at": True}, "run_at", id="run_at-true"),
    pytest.param({"target": NOOP, "run_at": "2030-01-01"}, "run_at", id="run_at-date-only"),
    # control characters in names
    pytest.param({"target": NOOP, "name": "a\x00b"}, "name", id="name-nul"),
    pytest.param({"target": NOOP, "name": "report\nX-Injected: 1"}, "name", id="name-newline"),
    pytest.param({"target": NOOP, "name": "\x1b[31mred"}, "name", id="name-escape"),
    pytest.param({"target": NOOP, "name": "a\x85b"}, "name", id="name-c1-control"),
    # urls and header values that a request line or a header cannot carry as they are
    pytest.param(http("https://example.com/\r\nX: y"), "target.url", id="url-crlf"),
    pytest.param(http("https://example.com/a b HTTP/1.1\r\n"), "target.url", id="url-space"),
    pytest.param(http("https://example.com/a\tb"), "target.url", id="url-tab"),
    pytest.param(http("https://example.com/\x00"), "target.url", id="url-nul"),
    pytest.param(http("https://exa\nmple.com/"), "target.url", id="url-newline-in-host"),
    pytest.param(http("https://[fe80::1%25eth0]/"), "target.url", id="url-zone-id"),
    pytest.param(http("https://[fe80::1%eth0]/"), "target.url", id="url-raw-zone-id"),
    pytest.param(http("https://[fec0::1]/"), "target.url", id="url-site-local"),
    pytest.param(http("https://[fec0::1]:8443/hook"), "target.url", id="url-site-local-port"),
    pytest.param(http("https://[::ffff:10.0.0.1]/"), "target.url", id="url-mapped-private"),
    pytest.param(
        http("https://example.com/", headers={"X-Ok": "a\x01b"}), "target.headers", id="header-control"
    ),
    pytest.param(
        http("https://example.com/", headers={"X-Ok": "a\r\nX-Injected: 1"}),
        "target.headers",
        id="header-crlf",
    ),
    # bodies whose parsing used to exhaust the stack or the integer conversion limit
    pytest.param(raw(nested(5_000)), "payload", id="payload-5000-nested-arrays"),
    pytest.param(raw("[" * 100_000), "payload", id="payload-100000-open-brackets"),
    pytest.param(raw('{"a":' * 2_000 + "0" + "}" * 2_000), "payload", id="payload-2000-nested-objects"),
    pytest.param(raw(nested(65)), "payload", id="payload-65-deep"),
    pytest.param(raw("1" * 5_000), "payload", id="payload-5000-digit-integer"),
    pytest.param(raw("1" * 101), "payload", id="payload-101-digit-integer"),
    pytest.param(raw("[0." + "1" * 200 + "]"), "payload", id="payload-201-digit-decimal"),
    pytest.param(raw("1e999999"), "payload", id="payload-overflowing-exponent"),
    pytest.param(raw("NaN"), "payload", id="payload-nan"),
    pytest.param(raw("[-Infinity]"), "payload", id="payload-infinity"),
    pytest.param(
        '{"\\u0070ayload": ' + nested(100) + ', "target": {"type": "python", "handler": "noop"}}',
        "payload",
        id="payload-escaped-key",
    ),
    pytest.param(
        '{"target": {"type": "python", "handler": "noop"}, "name": ' + nested(3_000, '"x"') + "}",
        "body",
        id="name-3000-nested",
    ),
    pytest.param(
        '{"target": {"type": "python", "handler": "noop"}, "max_retries": ' + "9" * 5_000 + "}",
        "body",
        id="max_retries-5000-digits",
    ),
    pytest.param(nested(100_000), "body", id="body-nested-arrays"),
]


@pytest.mark.parametrize(("body", "field"), CREATES)
def test_a_hostile_create_is_a_400_naming_the_field_and_stores_nothing(
    api: Api, stored: Any, body: Any, field: str
) -> None:
    sent = {"raw_body": body} if isinstance(body, str) else {"body": body}

    answer = api("POST", "/jobs", **sent)

    assert answer.status == 400, answer.body
    assert answer.body["field"] == field, answer.body
    assert stored() == []
    assert api("GET", "/jobs").status == 200


# (PATCH body, the field named): a change to an existing recurring job
PATCHES: list[Any] = [
    pytest.param({"run_at": LAST_MOMENT}, "run_at", id="run_at-year-10000"),
    pytest.param({"run_at": "0001-01-01T00:00:00+14:00"}, "run_at", id="run_at-year-0"),
    pytest.param({"start_at": "9999-12-31T23:59:00-14:00"}, "start_at", id="start_at-year-10000"),
    pytest.param({"end_at": "9999-12-31T23:59:00-14:00"}, "end_at", id="end_at-year-10000"),
    pytest.param(
        {"schedule": "at(9999-12-31T23:59:59)", "timezone": "Pacific/Pago_Pago"}, "schedule", id="at"
    ),
    pytest.param({"max_retries": True}, "max_retries", id="max_retries-true"),
    pytest.param({"timeout_seconds": "60"}, "timeout_seconds", id="timeout-string"),
    pytest.param({"run_at": 1893456000}, "run_at", id="run_at-number"),
    pytest.param({"name": "a\x00b"}, "name", id="name-nul"),
    pytest.param('{"payload": ' + nested(5_000) + "}", "payload", id="payload-nested"),
    pytest.param('{"payload": ' + "7" * 5_000 + "}", "payload", id="payload-long-integer"),
]


@pytest.fixture
def job_id(api: Api) -> str:
    answer = api("POST", "/jobs", {**HOURLY, "start_at": "2099-01-01T00:00:00Z", "name": "kept"})
    assert answer.status == 201, answer.body
    return str(answer.body["id"])


@pytest.mark.parametrize(("body", "field"), PATCHES)
def test_a_hostile_change_is_a_400_naming_the_field_and_changes_nothing(
    api: Api, stored: Any, job_id: str, body: Any, field: str
) -> None:
    before = stored()
    sent = {"raw_body": body} if isinstance(body, str) else {"body": body}

    answer = api("PATCH", f"/jobs/{job_id}", **sent)

    assert answer.status == 400, answer.body
    assert answer.body["field"] == field, answer.body
    assert stored() == before
    assert api("GET", "/jobs").status == 200
    assert api("GET", f"/jobs/{job_id}").body["name"] == "kept"


PREVIEWS: list[Any] = [
    pytest.param(
        {"schedule": "rate(1 hour)", "after": "9999-12-31T00:00:00Z"}, "after", id="after-9999-12-31"
    ),
    pytest.param({"schedule": "rate(1 hour)", "after": LAST_MOMENT}, "after", id="after-year-10000"),
    pytest.param(
        {"schedule": "rate(1 hour)", "after": "0001-01-01T00:00:00+14:00"}, "after", id="after-year-0"
    ),
    pytest.param({"schedule": "rate(1 hour)", "after": 0}, "after", id="after-number"),
    pytest.param({"schedule": "rate(1 hour)", "count": True}, "count", id="count-true"),
    pytest.param({"schedule": "rate(1 hour)", "count": "5"}, "count", id="count-string"),
    pytest.param(
        {"schedule": "at(9999-12-31T23:59:59)", "timezone": "Pacific/Pago_Pago"}, "schedule", id="at"
    ),
    pytest.param(
        '{"schedule": "rate(1 hour)", "count": ' + "1" * 5_000 + "}", "body", id="count-5000-digits"
    ),
    pytest.param('{"schedule": ' + nested(5_000, '"x"') + "}", "body", id="nested-schedule"),
]


@pytest.mark.parametrize(("body", "field"), PREVIEWS)
def test_a_hostile_preview_is_a_400_naming_the_field(api: Api, body: Any, field: str) -> None:
    sent = {"raw_body": body} if isinstance(body, str) else {"body": body}

    answer = api("POST", "/schedules/preview", **sent)

    assert answer.status == 400, answer.body
    assert answer.body["field"] == field, answer.body
    assert api("GET", "/jobs").status == 200


def test_a_schedule_ends_where_the_range_of_instants_ends(api: Api) -> None:
    """Its next occurrence would lie past 9999-12-30: it has no more, rather than a 500."""
    near_the_end = {"schedule": "rate(3650 days)", "after": "9999-12-30T00:00:00Z", "count": 3}

    answer = api("POST", "/schedules/preview", near_the_end)
    daily = api("POST", "/schedules/preview", {"schedule": "rate(1 day)", "after": "9999-12-28T12:00:00Z"})

    assert (answer.status, answer.body) == (200, {"next_runs": [], "starts": []})
    assert daily.body["next_runs"] == ["9999-12-29T12:00:00Z", "9999-12-30T12:00:00Z"]
    assert daily.body["starts"] == daily.body["next_runs"]  # no window: each starts at its instant


def test_the_range_holds_its_ends(api: Api) -> None:
    first = api("POST", "/jobs", {"target": NOOP, "run_at": "1970-01-01T00:00:00Z"})
    last = api("POST", "/jobs", {"target": NOOP, "run_at": "9999-12-30T23:59:59.999Z"})

    assert (first.status, last.status) == (201, 201)
    assert first.body["run_at"] == "1970-01-01T00:00:00Z"
    assert last.body["run_at"] == "9999-12-30T23:59:59.999Z"
    assert api("GET", "/jobs").status == 200


def test_a_depth_within_the_limit_is_kept(api: Api) -> None:
    payload = json.loads(nested(64))

    answer = api("POST", "/jobs", {"target": NOOP, "payload": payload, "run_at": "2099-01-01T00:00:00Z"})

    assert answer.status == 201, answer.body
    assert answer.body["payload"] == payload
    assert api("GET", f"/jobs/{answer.body['id']}").body["payload"] == payload
