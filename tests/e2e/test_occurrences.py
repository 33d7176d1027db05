"""The occurrence ledger over HTTP on the local stack (docs/api.md, "Occurrences" and "Backfill";
docs/design.md, "Every instant accounted for"): `GET /jobs/{id}/occurrences` lists every instant of
a job's life once, 10 s apart for a `rate(10 seconds)` job; the `ran` ones are exactly the instants
an http target in this process saw (its `Sundial-Scheduled-At`), and the others are `skipped` with
the reason the write that passed them over recorded.

Three jobs live side by side on the shared stack, on one timeline (seconds from each one's creation):

- `short`: runs 40 s, is paused 35 s, resumed 35 s. A resume reads every instant that fell due
  while paused as missed, however short the pause, so `misfire_policy: skip` passes them all over
  (`skipped`/`paused`) and none runs late.
- `long`: runs 40 s, is paused 83 s, resumed 30 s, likewise; then a backfill with
  `include_skipped` over its pause runs each skipped instant once, however often asked.
- `overlap`: a call of 25 s every 10 s under `overlap_policy: skip`: the instants due while a call
  ran are `skipped`/`overlap`, and the job's `missed` counts them.

Each read waits for the attempt of an instant to settle and ends its range (`to`) before the next
instant, so no attempt is in flight within it when the ledger and the target are compared. A whole
life's range starts at the job's first instant; what lies between a creation and its first instant
has a test of its own."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import pytest

from sundial.shared.clock import format_rfc3339
from tests.e2e.api import Api, Json, parse_rfc3339, rfc3339, wait_until
from tests.e2e.checks import Checks
from tests.e2e.conftest import Stack
from tests.e2e.listener import Call, Listener

pytestmark = pytest.mark.e2e

PERIOD_MS = 10_000
RATE = "rate(10 seconds)"
RUN_SECONDS = 40  # each paused job's instants at +10, +20, +30, +40 run before its pause
PAUSE_AT = 42  # two seconds after the fourth instant, once it has settled
SHORT_RESUME_AT = PAUSE_AT + 35
SHORT_READ_AT = SHORT_RESUME_AT + 35 + 3  # +115: through +110
# Resumed at +125: its pause's eight instants, +50 to +120, are passed over, five seconds from the
# pause and the resume, far more than a clock's slack.
LONG_RESUME_AT = PAUSE_AT + 83
LONG_READ_AT = LONG_RESUME_AT + 30  # +155: through +150
CALL_SECONDS = 25
OVERLAP_RUNS = 3  # at +10, +40, +70; read once the third has ended, through +90
OVERLAP_READ_AT = 70 + CALL_SECONDS + 2  # +97
SETTLE_SECONDS = 20.0  # for an instant's attempt to start and settle on a busy machine
QUIET_SECONDS = 3.0  # after the backfilled calls: a second run of one would come at once
MAX_PAGE = 500


@dataclass
class Read:
    """What one job's ledger said at one moment, and what its target had seen by then."""

    at_ms: int  # the range's end, `to`: the moment of the read
    rows: list[Json]
    job: Json
    calls: list[Call]


@dataclass
class Life:
    """One job as the timeline drove it."""

    name: str
    job_id: str
    origin_ms: int  # its grid's zero: the first instant, as its creation placed it, less a period
    paused_ms: int = 0  # the pause answered: the server's paused_at is before it
    resume_ms: int = 0  # the resume was sent: the server's resume is after it
    during_pause: Read | None = None  # the pause's instants read a second before the resume
    read: Read | None = None
    backfills: list[tuple[int, Json]] = field(default_factory=list)  # (status, answer)
    backfill_ms: int = 0  # the first backfill was sent
    after_backfill: Read | None = None

    def at(self, seconds: float) -> float:
        """The epoch second this many seconds after the job's grid began (its creation)."""
        return self.origin_ms / 1000 + seconds


@dataclass
class Scenario:
    short: Life
    long: Life
    overlap: Life


# --- reading the ledger -----------------------------------------------------------------------------


def _ms(text: str) -> int:
    return round(parse_rfc3339(text) * 1000)


def _query(**values: Any) -> str:
    return urllib.parse.urlencode({name: value for name, value in values.items() if value is not None})


def _page(api: Api, job_id: str, **query: Any) -> Json:
    status, answer = api.call_patiently("GET", f"/jobs/{job_id}/occurrences?{_query(**query)}")
    assert status == 200, answer
    return dict(answer)


def _life_range(life: Life, to_ms: int) -> dict[str, str]:
    """The job's whole life: from its first instant (one period after its creation) to `to`."""
    return {"from": rfc3339((life.origin_ms + PERIOD_MS) / 1000), "to": rfc3339(to_ms / 1000)}


def _read(api: Api, listener: Listener, life: Life, to_ms: int, from_ms: int | None = None) -> Read:
    span = _life_range(life, to_ms)
    if from_ms is not None:
        span["from"] = rfc3339(from_ms / 1000)
    answer = _page(api, life.job_id, limit=MAX_PAGE, **span)
    assert answer["next_token"] is None, f"{life.name}: more than {MAX_PAGE} occurrences"
    job = api.job(life.job_id)
    calls = [call for call in listener.calls(life.job_id) if call.scheduled_at * 1000 < to_ms]
    return Read(_ms(span["to"]), list(answer["occurrences"]), job, calls)


def _read_through(api: Api, listener: Listener, life: Life, instant_ms: int) -> Read:
    """Once the attempt of the instant has settled: every instant up to it, the next one left out."""
    _wait_settled(api, life, instant_ms)
    return _read(api, listener, life, instant_ms + PERIOD_MS)


def _last_instant(life: Life, seconds: float) -> int:
    """The job's last instant at or before this many seconds after its grid began."""
    return life.origin_ms + int(seconds * 1000) // PERIOD_MS * PERIOD_MS


def _wait_settled(api: Api, life: Life, instant_ms: int) -> None:
    """Until the job's last run is the instant's, finished (with its history and skips written)."""

    def settled() -> bool:
        last = api.job(life.job_id).get("last_run") or {}
        return _ms(last.get("scheduled_at") or rfc3339(0)) == instant_ms and bool(last.get("finished_at"))

    wait_until(
        settled,
        SETTLE_SECONDS,
        lambda: f"{life.name}: {_offsets(life, [instant_ms])} never settled: {api.job(life.job_id)}",
    )


def _instants(rows: list[Json], state: str | None = None, reason: str | None = None) -> list[int]:
    return [
        _ms(row["scheduled_at"])
        for row in rows
        if (state is None or row["state"] == state) and (reason is None or row["reason"] == reason)
    ]


def _seen(calls: list[Call]) -> Counter[int]:
    return Counter(round(call.scheduled_at * 1000) for call in calls)


def _offsets(life: Life, instants: list[int] | set[int]) -> str:
    """Instants as seconds after the job's grid began (its creation): `+10 +20 +30`."""
    return " ".join(f"+{(instant - life.origin_ms) / 1000:g}" for instant in sorted(instants)) or "none"


def _rows_text(life: Life, rows: list[Json]) -> str:
    return ", ".join(
        f"{_offsets(life, [_ms(row['scheduled_at'])])} {row['state']}"
        + (f"/{row['reason']}" if row["reason"] else "")
        + (" backfilled" if row["backfilled"] else "")
        + (" extra" if row["extra"] else "")
        for row in rows
    )


# --- the timeline -----------------------------------------------------------------------------------


def _sleep_until(epoch_seconds: float) -> None:
    time.sleep(max(0.0, epoch_seconds - time.time()))


def _create(api: Api, listener: Listener, name: str, path: str, **fields: Any) -> Life:
    job = api.create(
        name=name, schedule=RATE, target={"type": "http", "url": listener.url(f"{path}/{name}")}, **fields
    )
    assert job["missed"] == 0, job
    return Life(name, str(job["id"]), _ms(job["next_run_at"]) - PERIOD_MS)


def _act(api: Api, life: Life, action: str) -> Json:
    status, job = api.call_patiently("POST", f"/jobs/{life.job_id}/{action}")
    assert status == 200, f"{life.name}: {action} answered {status} {job}"
    return dict(job)


def _pause_after_run(api: Api, life: Life) -> None:
    """Paused at +42, once the instant at +40 has run and settled: the pause meets no attempt."""
    _sleep_until(life.at(RUN_SECONDS))
    _wait_settled(api, life, _last_instant(life, RUN_SECONDS))
    _sleep_until(life.at(PAUSE_AT))
    assert _act(api, life, "pause")["paused"] is True
    life.paused_ms = int(time.time() * 1000)


def _resume(api: Api, listener: Listener, life: Life, at: float) -> None:
    """The pause's instants read a second before, then the resume."""
    _sleep_until(life.at(at - 1))
    life.during_pause = _read(api, listener, life, int(time.time() * 1000), from_ms=life.paused_ms)
    _sleep_until(life.at(at))
    life.resume_ms = int(time.time() * 1000)
    assert _act(api, life, "resume")["paused"] is False


def _backfill(api: Api, life: Life) -> tuple[int, Json]:
    """`include_skipped` over the job's pause: from the pause to the resume."""
    body = {
        "from": rfc3339(life.paused_ms / 1000),
        "to": rfc3339(life.resume_ms / 1000),
        "include_skipped": True,
    }
    status, answer = api.call_patiently("POST", f"/jobs/{life.job_id}/backfill", body)
    return status, dict(answer)


def _backfill_long(api: Api, listener: Listener, life: Life) -> None:
    """Asked twice, the second time once the first one's runs have reached the target."""
    skipped = set(_instants(life.read.rows if life.read else [], "skipped"))
    life.backfill_ms = int(time.time() * 1000)
    life.backfills.append(_backfill(api, life))

    def reached() -> bool:
        return skipped <= set(_seen(listener.calls(life.job_id)))

    wait_until(reached, SETTLE_SECONDS, f"{life.name}: the backfilled instants never reached the target")
    life.backfills.append(_backfill(api, life))
    # Through the schedule's next instant, which the backfilled runs put off until they had ended.
    _sleep_until(time.time() + QUIET_SECONDS)
    next_instant = _last_instant(life, time.time() - life.origin_ms / 1000) + PERIOD_MS
    _sleep_until(next_instant / 1000)
    life.after_backfill = _read_through(api, listener, life, next_instant)


@pytest.fixture(scope="module")
def scenario(stack: Stack, listener: Listener) -> Iterator[Scenario]:
    started = time.monotonic()
    api = stack.api
    paused = {"misfire_policy": "skip", "overlap_policy": "buffer", "priority": "high"}
    short = _create(api, listener, "occurrences-short-pause", "ok", **paused)
    long = _create(api, listener, "occurrences-long-pause", "ok", **paused)
    overlap = _create(api, listener, "occurrences-overlap", f"sleep/{CALL_SECONDS}", overlap_policy="skip")
    try:
        _pause_after_run(api, short)
        _pause_after_run(api, long)
        _resume(api, listener, short, SHORT_RESUME_AT)
        _sleep_until(overlap.at(OVERLAP_READ_AT))
        # The third call's settle recorded the instants due while it ran: read through them.
        _wait_settled(api, overlap, overlap.origin_ms + 70_000)
        overlap.read = _read(api, listener, overlap, overlap.origin_ms + 100_000)
        api.call("DELETE", f"/jobs/{overlap.job_id}")
        _sleep_until(short.at(SHORT_READ_AT))
        short.read = _read_through(api, listener, short, _last_instant(short, SHORT_READ_AT))
        api.call("DELETE", f"/jobs/{short.job_id}")
        _resume(api, listener, long, LONG_RESUME_AT)
        _sleep_until(long.at(LONG_READ_AT))
        long.read = _read_through(api, listener, long, _last_instant(long, LONG_READ_AT))
        _backfill_long(api, listener, long)
        print(f"\noccurrences timeline took {time.monotonic() - started:.1f} s")
        yield Scenario(short, long, overlap)
    finally:
        for life in (short, long, overlap):
            api.call("DELETE", f"/jobs/{life.job_id}")


# --- checks shared by the jobs ----------------------------------------------------------------------


def _check_grid(checks: Checks, life: Life, read: Read) -> None:
    """Every instant of the life once, oldest first, exactly one period apart, up to `to`."""
    instants = [_ms(row["scheduled_at"]) for row in read.rows if not row["extra"]]
    extras = [row for row in read.rows if row["extra"]]
    checks.check(not extras, f"{life.name}: extra rows with no trigger: {extras}")
    if not checks.check(bool(instants), f"{life.name}: no occurrences at all"):
        return
    first = instants[0] - life.origin_ms
    checks.check(first == PERIOD_MS, f"{life.name}: the first instant {first} ms after the grid began")
    gaps = Counter(later - earlier for earlier, later in pairwise(instants))
    checks.check(set(gaps) == {PERIOD_MS}, f"{life.name}: gaps between instants (ms: count) {dict(gaps)}")
    checks.check(
        instants[-1] < read.at_ms <= instants[-1] + PERIOD_MS,
        f"{life.name}: the last instant {_offsets(life, instants[-1:])} does not end the range at "
        f"{_offsets(life, [read.at_ms])}",
    )


def _check_ran_is_seen(checks: Checks, life: Life, read: Read) -> None:
    """The `ran` rows are exactly the instants the target saw, each once, one succeeded attempt."""
    seen = _seen(read.calls)
    ran = _instants(read.rows, "ran")
    twice = {instant: n for instant, n in seen.items() if n > 1}
    checks.check(not twice, f"{life.name}: the target saw instants more than once: {twice}")
    checks.check(
        Counter(ran) == Counter(set(seen)),
        f"{life.name}: ran {_offsets(life, ran)}, but the target saw {_offsets(life, set(seen))}",
    )
    odd = [
        row
        for row in read.rows
        if row["state"] == "ran" and (row["attempts"], row["last_status"]) != (1, "succeeded")
    ]
    checks.check(not odd, f"{life.name}: ran rows not one succeeded attempt: {odd}")
    other = [row for row in read.rows if row["state"] not in ("ran", "skipped")]
    checks.check(not other, f"{life.name}: rows neither ran nor skipped at half past a period: {other}")


def _check_skips(checks: Checks, life: Life, read: Read, paused: set[int]) -> None:
    """Skipped: `paused` exactly `paused`, `misfire` what the policy recorded, nothing else; the job's
    `missed` counts the misfires."""
    reasons = Counter(row["reason"] for row in read.rows if row["state"] == "skipped")
    got = set(_instants(read.rows, "skipped", "paused"))
    checks.check(
        got == paused, f"{life.name}: skipped/paused {_offsets(life, got)}, not {_offsets(life, paused)}"
    )
    others = set(reasons) - {"paused", "misfire"}
    checks.check(not others, f"{life.name}: skipped for {sorted(others)}: {dict(reasons)}")
    missed = read.job["missed"]
    checks.check(
        missed == reasons["misfire"], f"{life.name}: missed {missed}, {reasons['misfire']} misfire rows"
    )


def _paused_instants(life: Life, read: Read) -> list[int]:
    """The instants due while the job was paused."""
    return [i for i in _instants(read.rows) if life.paused_ms < i < life.resume_ms]


def _check_during_pause(checks: Checks, life: Life, skipped: set[int]) -> None:
    """Read just before the resume: the instants a resume then passes over show `skipped`/`paused`
    already, the others `waiting`/`paused`."""
    read = life.during_pause
    assert read is not None
    rows = [(_ms(row["scheduled_at"]), row["state"], row["reason"]) for row in read.rows]
    expected = [(i, "skipped" if i in skipped else "waiting", "paused") for i, _, _ in rows]
    checks.check(
        rows == expected,
        f"{life.name}: just before the resume the pause read {_rows_text(life, read.rows)}; "
        f"skipped/paused should be {_offsets(life, skipped)} and the others waiting/paused",
    )


def _summary(life: Life, read: Read) -> str:
    """The figures of one read, in seconds after the job's creation."""
    skipped = Counter(row["reason"] for row in read.rows if row["state"] == "skipped")
    reasons = "; ".join(
        f"skipped/{reason} {_offsets(life, _instants(read.rows, 'skipped', reason))}"
        for reason in sorted(skipped)
    )
    return (
        f"{len(read.rows)} instants {_offsets(life, _instants(read.rows))} read at "
        f"{_offsets(life, [read.at_ms])}; ran {_offsets(life, _instants(read.rows, 'ran'))}; "
        f"{reasons or 'none skipped'}; missed {read.job['missed']}; paused "
        f"{_offsets(life, [life.paused_ms])} to {_offsets(life, [life.resume_ms])}"
    )


# --- 1. every instant of a paused and resumed job -----------------------------------------------------


def test_a_paused_and_resumed_job_lists_every_instant_once_the_ran_ones_as_the_target_saw_them(
    scenario: Scenario,
) -> None:
    life = scenario.long
    read = life.read
    assert read is not None
    checks = Checks("rate(10 seconds), misfire skip: ran 40 s, paused 83 s, resumed 30 s")
    _check_grid(checks, life, read)
    _check_ran_is_seen(checks, life, read)
    in_pause = set(_paused_instants(life, read))
    _check_skips(checks, life, read, in_pause)
    _check_during_pause(checks, life, in_pause)
    checks.check(len(in_pause) == 8, f"{life.name}: instants due while paused {_offsets(life, in_pause)}")
    checks.note(_summary(life, read))
    assert life.during_pause is not None
    checks.note(f"a second before the resume: {_rows_text(life, life.during_pause.rows)}")
    checks.verify()


def test_a_pause_shorter_than_the_misfire_grace_skips_its_instants_as_paused(scenario: Scenario) -> None:
    """Paused 35 s: the resume reads the pause's instants as missed however short the pause, so
    `skip` passes them all over, and none runs late (docs/api.md, `misfire_policy`)."""
    life = scenario.short
    read = life.read
    assert read is not None
    checks = Checks("rate(10 seconds), misfire skip: ran 40 s, paused 35 s, resumed 35 s")
    _check_grid(checks, life, read)
    _check_ran_is_seen(checks, life, read)
    in_pause = _paused_instants(life, read)
    _check_skips(checks, life, read, set(in_pause))
    _check_during_pause(checks, life, set(in_pause))
    checks.check(len(in_pause) == 3, f"{life.name}: instants due while paused {_offsets(life, in_pause)}")
    checks.note(_summary(life, read))
    assert life.during_pause is not None
    checks.note(f"a second before the resume: {_rows_text(life, life.during_pause.rows)}")
    checks.verify()


FIRST_JOBS = 30
HOUR_MS = 3_600_000


def test_a_rate_job_first_runs_one_period_after_its_creation_and_owes_nothing_after_it(
    stack: Stack, listener: Listener
) -> None:
    """A rate counts "from when the schedule becomes active" (docs/schedules.md): its creation. From
    the creation on, the ledger's first row is that first instant, waiting; no instant after the
    creation is `not_owed` (docs/api.md: those are the ones before the job existed)."""
    checks = Checks(f"{FIRST_JOBS} rate(1 hour) jobs: the first instant against created_at")
    late: list[int] = []
    job_ids: list[str] = []
    try:
        for n in range(FIRST_JOBS):
            target = {"type": "http", "url": listener.url(f"ok/first-{n}")}
            job = stack.api.create(name=f"occurrences-first-{n}", schedule="rate(1 hour)", target=target)
            job_ids.append(str(job["id"]))
            created, first = _ms(job["created_at"]), _ms(job["next_run_at"])
            late.append(first - created - HOUR_MS)
            span = {"from": rfc3339((created + 1) / 1000), "to": rfc3339((first + 1) / 1000)}
            rows = _page(stack.api, job["id"], **span)["occurrences"]
            shown = [(_ms(row["scheduled_at"]) - created, row["state"], row["reason"]) for row in rows]
            checks.check(
                shown == [(HOUR_MS, "waiting", None)],
                f"{job['id']} created {job['created_at']}: from then on the ledger reads (ms after "
                f"created_at, state, reason) {shown}",
            )
    finally:
        for job_id in job_ids:
            stack.api.call("DELETE", f"/jobs/{job_id}")
    off = [ms for ms in late if ms]
    checks.check(
        not off, f"{len(off)} of {FIRST_JOBS} first instants not created_at + 1 h exactly: later by {off} ms"
    )
    checks.note(f"first instant less (created_at + 1 h), ms, per job: {late}")
    checks.verify()


# --- 2. overlaps ----------------------------------------------------------------------------------------


def test_overlaps_skipped_by_the_policy_are_listed_and_counted_as_missed(scenario: Scenario) -> None:
    life = scenario.overlap
    read = life.read
    assert read is not None
    checks = Checks(f"rate(10 seconds), calls of {CALL_SECONDS} s, overlap_policy skip")
    _check_grid(checks, life, read)
    _check_ran_is_seen(checks, life, read)
    overlaps = _instants(read.rows, "skipped", "overlap")
    reasons = Counter(row["reason"] for row in read.rows if row["state"] == "skipped")
    checks.check(set(reasons) == {"overlap"}, f"{life.name}: skipped for {dict(reasons)}")
    # Each skipped instant fell due while a call was open (it arrived, and answered CALL_SECONDS later).
    spans = [(call.received_at * 1000, (call.received_at + CALL_SECONDS) * 1000) for call in read.calls]
    outside = [i for i in overlaps if not any(start < i < end for start, end in spans)]
    checks.check(not outside, f"{life.name}: overlaps due while no call ran: {_offsets(life, outside)}")
    ran = _instants(read.rows, "ran")
    checks.check(len(ran) == OVERLAP_RUNS, f"{life.name}: ran {_offsets(life, ran)}")
    missed = read.job["missed"]
    checks.check(missed == len(overlaps) > 0, f"{life.name}: missed {missed}, {len(overlaps)} overlap rows")
    checks.note(
        f"ran {_offsets(life, ran)}; skipped/overlap {_offsets(life, overlaps)}; missed {missed}; "
        f"read at {_offsets(life, [read.at_ms])}"
    )
    checks.verify()


# --- 3. backfill of skipped instants -----------------------------------------------------------------


def test_a_backfill_with_include_skipped_runs_each_paused_instant_once_however_often_asked(
    scenario: Scenario, listener: Listener
) -> None:
    life = scenario.long
    before, after = life.read, life.after_backfill
    assert before is not None and after is not None
    paused = _instants(before.rows, "skipped", "paused")
    checks = Checks("a backfill with include_skipped over the long pause, asked twice")
    [(first_status, first), (again_status, again)] = life.backfills
    taken = [_ms(text) for text in first.get("instants", [])]
    checks.check(
        (first_status, taken, first.get("skipped"), first.get("already")) == (202, paused, [], []),
        f"{life.name}: the first backfill answered {first_status} {first}; "
        f"skipped/paused {_offsets(life, paused)}",
    )
    already = [_ms(text) for text in again.get("already", [])]
    checks.check(
        (again_status, again.get("instants"), already) == (202, [], paused),
        f"{life.name}: the second backfill answered {again_status} {again}",
    )
    calls = listener.calls(life.job_id)
    backfilled_calls = [call for call in calls if round(call.scheduled_at * 1000) in paused]
    seen = sorted(round(call.scheduled_at * 1000) for call in backfilled_calls)
    checks.check(seen == paused, f"{life.name}: the target saw the paused instants {_offsets(life, seen)}")
    checks.check(
        all(call.received_at * 1000 >= life.backfill_ms for call in backfilled_calls),
        f"{life.name}: a paused instant reached the target before the backfill",
    )
    keys = {call.idempotency_key for call in backfilled_calls}
    checks.check(
        keys == {f"{life.job_id}:{format_rfc3339(i)}" for i in paused},
        f"{life.name}: idempotency keys {keys}",
    )
    rows = {_ms(row["scheduled_at"]): row for row in after.rows}
    shown = [
        (rows[i]["state"], rows[i]["backfilled"], rows[i]["attempts"], rows[i]["last_status"])
        for i in paused
        if i in rows
    ]
    checks.check(
        shown == [("ran", True, 1, "succeeded")] * len(paused),
        f"{life.name}: after the backfill the paused instants read {shown}",
    )
    others = [row for row in after.rows if row["backfilled"] and _ms(row["scheduled_at"]) not in paused]
    checks.check(not others, f"{life.name}: other rows backfilled: {others}")
    # The whole life still holds: every instant once, 10 s apart, ran exactly as the target saw.
    _check_grid(checks, life, after)
    _check_ran_is_seen(checks, life, after)
    _check_skips(checks, life, after, set())
    waits = [f"{call.received_at - life.backfill_ms / 1000:.2f} s" for call in backfilled_calls]
    checks.note(
        f"backfilled {_offsets(life, taken)} (already the second time: {_offsets(life, already)}); "
        f"the target saw them {', '.join(waits)} after the first request; "
        f"afterwards {_summary(life, after)}: {_rows_text(life, after.rows)}"
    )
    checks.verify()


# --- 4. paging ------------------------------------------------------------------------------------------


def _walk(api: Api, job_id: str, span: dict[str, str], limit: int) -> tuple[list[Json], list[int]]:
    rows: list[Json] = []
    sizes: list[int] = []
    token: str | None = None
    while True:
        answer = _page(api, job_id, limit=limit, next_token=token, **span)
        rows += answer["occurrences"]
        sizes.append(len(answer["occurrences"]))
        token = answer["next_token"]
        if token is None or len(sizes) > 100:
            return rows, sizes


def test_small_pages_walk_the_whole_range_and_make_the_one_big_page(stack: Stack, scenario: Scenario) -> None:
    life = scenario.long
    assert life.after_backfill is not None
    span = _life_range(life, life.after_backfill.at_ms)
    whole = _page(stack.api, life.job_id, limit=MAX_PAGE, **span)
    checks = Checks("paging the long pause's life")
    checks.check(whole["next_token"] is None and len(whole["occurrences"]) > 10, f"one big page: {whole}")
    for limit in (1, 3, 7):
        rows, sizes = _walk(stack.api, life.job_id, span, limit)
        checks.check(rows == whole["occurrences"], f"limit {limit}: pages {sizes} differ from the big page")
        checks.check(all(0 < size <= limit for size in sizes), f"limit {limit}: page sizes {sizes}")
        checks.note(f"limit {limit}: {len(sizes)} pages of {sizes} rows, {len(rows)} in all")
    checks.verify()


# --- 5. bad input -------------------------------------------------------------------------------------


def _get(base_url: str, path: str) -> tuple[int, str, Any]:
    try:
        with urllib.request.urlopen(f"{base_url}{path}", timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), json.loads(error.read() or b"null")


def _token(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def test_bad_input_is_a_400_naming_the_field_and_an_unknown_job_a_404(
    stack: Stack, listener: Listener
) -> None:
    job = stack.api.create(
        name="occurrences-bad-input",
        schedule="rate(1 hour)",
        target={"type": "http", "url": listener.url("ok/bad")},
    )
    now = time.time()
    day_ago, hour_ago = rfc3339(now - 86_400), rfc3339(now - 3_600)
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("from not RFC 3339", {"from": "yesterday"}, "from"),
        ("from without an offset", {"from": "2026-01-01T00:00:00"}, "from"),
        ("to not RFC 3339", {"to": "2026-13-01T00:00:00Z"}, "to"),
        ("to before from", {"from": hour_ago, "to": day_ago}, "to"),
        ("to equal to from", {"from": hour_ago, "to": hour_ago}, "to"),
        ("limit 0", {"limit": 0}, "limit"),
        ("limit 501", {"limit": 501}, "limit"),
        ("limit not a number", {"limit": "ten"}, "limit"),
        ("a next_token made up", {"next_token": "forged"}, "next_token"),
        ("a next_token of another shape", {"next_token": _token("until:1764935000000")}, "next_token"),
        ("a next_token with no number", {"next_token": _token("from:abc")}, "next_token"),
    ]
    checks = Checks("bad input to GET /jobs/{id}/occurrences")
    try:
        for what, query, field_name in cases:
            status, content_type, body = _get(
                stack.api.base_url, f"/jobs/{job['id']}/occurrences?{_query(**query)}"
            )
            _check_problem(checks, what, (status, content_type, body), 400, field_name)
        unknown = "01JD0000000000000000000000"
        answer = _get(stack.api.base_url, f"/jobs/{unknown}/occurrences")
        _check_problem(checks, "an unknown job", answer, 404, None)
        answer = _get(stack.api.base_url, "/jobs/not-a-job-id/occurrences")
        _check_problem(checks, "a malformed job id", answer, 400, "job_id")
        status, _, page = _get(stack.api.base_url, f"/jobs/{job['id']}/occurrences?{_query(limit=500)}")
        checks.check(status == 200, f"limit 500 answered {status} {page}")
    finally:
        stack.api.call("DELETE", f"/jobs/{job['id']}")
    checks.verify()


def _check_problem(
    checks: Checks, what: str, answer: tuple[int, str, Any], status: int, field_name: str | None
) -> None:
    got, content_type, body = answer
    body = body if isinstance(body, dict) else {}
    checks.note(f"{what}: {got} field={body.get('field')!r} {body.get('message')!r}")
    checks.check(got == status, f"{what}: answered {got}, not {status}: {body}")
    checks.check(content_type == "application/problem+json", f"{what}: Content-Type {content_type!r}")
    checks.check(body.get("status") == status, f"{what}: the problem's status is {body.get('status')}")
    checks.check(body.get("field") == field_name, f"{what}: names {body.get('field')!r}, not {field_name!r}")
    checks.check(bool(body.get("detail")) and body.get("detail") == body.get("message"), f"{what}: {body}")
