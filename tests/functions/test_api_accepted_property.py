"""The property behind the API's input checks: any job that a create or a PATCH accepted can always be
read, listed, run and cancelled, and every instant it is answered with is RFC 3339.

Hypothesis draws jobs from the whole range of what a client can send: instants of any year in any
offset, schedules of every form in zones up to 14 hours from UTC, loose types and control characters.
What the API refuses must be a 4xx naming a field; what it accepts must never fail later."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sundial.contract.bounds import LONGEST_TIMEOUT_SECONDS
from sundial.contract.vocabulary import Priority
from sundial.functions import clients
from sundial.local_stack.resources import Resources
from tests.functions.conftest import Api
from tests.functions.test_worker import run, sqs_event, take

RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{3})?Z")
INSTANT_FIELDS = ("run_at", "next_run_at", "start_at", "end_at", "created_at", "updated_at")
ZONES = ("UTC", "Pacific/Pago_Pago", "Pacific/Kiritimati", "Asia/Tokyo", "America/St_Johns", "Europe/Berlin")
OFFSETS = [timezone(timedelta(minutes=m)) for m in (-14 * 60, -11 * 60, -150, 0, 345, 14 * 60)]
offsets = st.one_of(st.sampled_from(OFFSETS), st.sampled_from(OFFSETS[:1] + OFFSETS[-1:]))
# The ends of what datetime holds and of the range the API keeps.
EDGES = (datetime.min, datetime(1970, 1, 1), datetime(9999, 12, 31), datetime.max.replace(microsecond=0))


def _instant_text(moment: datetime) -> str:
    return moment.isoformat()


# Every year datetime holds, with weight on the ends of the range the API keeps.
wall_times = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.sampled_from(EDGES).flatmap(
        lambda edge: st.integers(-30 * 3600, 30 * 3600).map(lambda s: _shifted(edge, s))
    ),
)
instants = st.builds(
    lambda wall, zone: _instant_text(wall.replace(tzinfo=zone)), wall_times, st.sampled_from(OFFSETS)
)
loose = st.one_of(
    st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=12), st.floats(allow_nan=False)
)
schedules = st.one_of(
    st.builds(lambda n, unit: f"rate({n} {unit})", st.integers(1, 3650), st.just("days")),
    st.builds(lambda n: f"rate({n} minutes)", st.integers(1, 120)),
    st.sampled_from(["cron(0 9 * * ? *)", "0 0 29 2 *", "cron(0 12 31 12 ? 2199)", "@hourly", "*/5 * * * *"]),
    wall_times.map(lambda wall: f"at({wall.strftime('%Y-%m-%dT%H:%M:%S')})"),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


def _shifted(edge: datetime, seconds: int) -> datetime:
    try:
        return edge + timedelta(seconds=seconds)
    except OverflowError:
        return datetime.min if seconds < 0 else datetime.max.replace(microsecond=0)


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(None), strategy)


# A one-off or a recurring job (or, now and then, both: a 400), each with a window or not.
when = st.one_of(
    st.fixed_dictionaries({"run_at": _optional(instants)}),
    st.fixed_dictionaries({"schedule": st.one_of(schedules, schedules, st.text(max_size=10))}),
    st.fixed_dictionaries({"run_at": instants, "schedule": schedules}),
    st.just({}),
)
window = st.fixed_dictionaries(
    {},
    optional={
        "timezone": st.sampled_from(ZONES),
        "start_at": _optional(instants),
        "end_at": _optional(instants),
    },
)
timing = st.builds(lambda a, b: {**a, **b}, when, window)
others = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(
            st.text(st.characters(codec="ascii", min_codepoint=32), max_size=12), st.text(max_size=12)
        ),
        "max_retries": st.integers(0, 20),
        "timeout_seconds": st.integers(1, LONGEST_TIMEOUT_SECONDS),
        "payload": json_values,
    },
)


# Now and then one field of another type than its own: the API must refuse it cleanly.
LOOSE_FIELDS = ("run_at", "start_at", "end_at", "max_retries", "timeout_seconds", "name", "schedule")
one_loose = st.one_of(
    *[st.just({})] * 4, st.builds(lambda name, value: {name: value}, st.sampled_from(LOOSE_FIELDS), loose)
)


def _clean(fields: dict[str, Any]) -> dict[str, Any]:
    # None means "left out" for a create, so that drawn jobs are mostly complete ones.
    return {name: value for name, value in fields.items() if value is not None}


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    create_fields=timing.map(_clean),
    extra=st.builds(lambda a, b: _clean({**a, **b}), others, one_loose),
    change=timing,
)
def test_a_job_the_api_accepted_can_be_read_listed_run_and_cancelled(
    api: Api,
    env: Resources,
    sqs: Any,
    create_fields: dict[str, Any],
    extra: dict[str, Any],
    change: dict[str, Any],
) -> None:
    created = api(
        "POST", "/jobs", {"target": {"type": "python", "handler": "noop"}, **create_fields, **extra}
    )
    event(f"create {created.status} {created.body.get('field') if created.status != 201 else ''}")
    if created.status != 201:
        _refused_cleanly(created)
        return
    job_id = created.body["id"]
    _answered_in_rfc3339(created.body)
    changed = api("PATCH", f"/jobs/{job_id}", change)
    event(f"change {changed.status}")
    if changed.status == 200:
        _answered_in_rfc3339(changed.body)
    else:
        _refused_cleanly(changed)
    _can_be_read_listed_run_and_cancelled(api, env, sqs, job_id)


def _can_be_read_listed_run_and_cancelled(api: Api, env: Resources, sqs: Any, job_id: str) -> None:
    read = api("GET", f"/jobs/{job_id}")
    assert read.status == 200, read.body
    _answered_in_rfc3339(read.body)
    listed = api("GET", "/jobs", query={"limit": "100"})
    assert listed.status == 200, listed.body
    assert job_id in {job["id"] for job in listed.body["jobs"]}
    triggered = api("POST", f"/jobs/{job_id}/trigger")
    assert triggered.status == 200, triggered.body
    messages = [body for queue in Priority for body in take(sqs, env.queue_urls[queue])]
    assert messages, "a triggered job sends its message"
    assert run(sqs_event(*messages)) == {"batchItemFailures": []}
    assert clients.store().get(job_id).last_run is not None
    cancelled = api("DELETE", f"/jobs/{job_id}")
    assert cancelled.status == 200, cancelled.body
    assert cancelled.body["status"] == "cancelled"
    assert api("GET", f"/jobs/{job_id}/runs").status == 200
    assert api("GET", "/jobs", query={"status": "cancelled"}).status == 200


def _refused_cleanly(answer: Any) -> None:
    assert 400 <= answer.status < 500, answer.body
    assert answer.body["field"], answer.body


def _answered_in_rfc3339(view: dict[str, Any]) -> None:
    for name in INSTANT_FIELDS:
        value = view[name]
        assert value is None or RFC3339.fullmatch(value), (name, value)
    if view["last_run"] is not None:
        assert RFC3339.fullmatch(view["last_run"]["scheduled_at"]), view["last_run"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    schedule=schedules,
    zone=st.sampled_from(ZONES),
    after=st.one_of(st.none(), instants, instants, loose),
    count=st.one_of(st.integers(1, 100), st.integers(1, 100), st.integers(1, 100), loose),
)
def test_a_preview_is_an_answer_in_rfc3339_or_a_400(
    api: Api, schedule: str, zone: str, after: Any, count: Any
) -> None:
    body = _clean({"schedule": schedule, "timezone": zone, "after": after, "count": count})

    answer = api("POST", "/schedules/preview", body)
    event(f"preview {answer.status} {answer.body.get('field') if answer.status != 200 else ''}")

    if answer.status != 200:
        _refused_cleanly(answer)
        return
    assert all(RFC3339.fullmatch(instant) for instant in answer.body["next_runs"]), answer.body
    last = answer.body["next_runs"][-1:] or ["1970-01-01T00:00:00Z"]
    assert datetime.fromisoformat(last[0]) < datetime(9999, 12, 31, tzinfo=UTC)
