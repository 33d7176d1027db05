"""20. Every instant accounted for (docs/design.md): what the occurrence ledger says of each instant of a
job's schedule, held against what the model's workers ran.

The ledger is computed as GET /jobs/{id}/occurrences computes it (shared.lifecycle.occurrences), from one
read of the table: the job, its history, its skip ledger and its backfill ledger. What ran is the
model's own record: every attempt a worker fenced, by its occurrence, an instant and whether it was a
triggered run (its own row, `extra`). An attempt is counted from its fence, not from its target call:
an attempt whose worker died before the call, and whose lease the tick then took, ended (it is `lost`),
and the ledger rightly shows its instant ran.

Each check is a pure function; it returns the violations it finds, as sentences.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from sundial.contract.vocabulary import JobStatus, OccurrenceState, SkipReason
from sundial.shared import lifecycle
from sundial.shared.lifecycle.job_schedule import job_excludes
from sundial.shared.lifecycle.occurrences import Occurrence, Records, occurrences
from sundial.shared.lifecycle.series import iter_instants, one_off_instant
from sundial.shared.models import Job
from tests.model.checks import Snapshot, short

SECOND = 1000
# The range checked: from a while before the job's creation (a backfill's window starts up to 620 s
# before it) to a little after now (a rate(2 minutes)'s next instant).
MARGIN_MS = 700 * SECOND
AHEAD_MS = 150 * SECOND
# What a backfill asked to include skipped instants may run of them (docs/api.md, "Backfill").
BACKFILLED_WHEN_SKIPPED = frozenset({SkipReason.PAUSED, SkipReason.MISFIRE, SkipReason.CALENDAR})
SHOWN_RUN = (OccurrenceState.RAN, OccurrenceState.RUNNING)
# A backfilled instant that ran, of a job whose schedule no longer holds it (a change of timing since).
OFF_SCHEDULE = "as a backfilled run, off the job's schedule now,"
# An instant shown ran as the schedule's that ran as a triggered run alone.
TRIGGERED_ONLY = "it ran as a triggered run only"
# A job cancelled while its current occurrence was a triggered run that had not started.
CANCELLED_BEHIND_TRIGGER = "the job was cancelled while an unstarted triggered run was its current occurrence"

Key = tuple[int, bool]  # an occurrence: its instant, and whether it is a triggered run


@dataclass
class Ran:
    """What the model's workers ran of one job: each occurrence's attempt numbers, in the order their
    fences took them, and which occurrences ran as backfilled runs."""

    attempts: dict[Key, list[int]] = field(default_factory=dict)
    backfilled: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Ledger:
    """The ledger of one job over [low, high) as it reads now, and the schedule's instants there."""

    low: int
    high: int
    instants: tuple[int, ...]
    rows: tuple[Occurrence, ...]


def ledger_of(job: Job, snap: Snapshot, now: int) -> Ledger:
    low, high = job.created_at - MARGIN_MS, now + AHEAD_MS
    if job.is_recurring:
        instants = tuple(iter_instants(job, low, high))
    else:
        one = one_off_instant(job)
        instants = (one,) if one is not None and low <= one < high else ()
    backfills = snap.backfills[job.id]
    records = Records(
        runs=snap.runs[job.id],
        skips=snap.skips[job.id],
        backfilled=frozenset(backfills),
        backfill_skipped=frozenset(instant for instant, passed in backfills.items() if passed),
        excluded=lambda instant: job_excludes(job, instant),
    )
    return Ledger(low, high, instants, tuple(occurrences(job, instants, low, high, records, now)))


def key_of(job: Job) -> Key:
    """The occurrence a job as fenced runs."""
    return job.scheduled_at or 0, lifecycle.is_triggered_run(job)


def unaccounted(
    job: Job, ledger: Ledger, ran: Ran, snap: Snapshot, now: int, triggered_at: Iterable[int] = ()
) -> list[str]:
    """Every instant once, in one of four states, a skipped one with its reason; what shows as ran or
    running was run, and what was run shows so, each occurrence once. `triggered_at`: when the user
    asked for triggered runs (what a violation says of how the job came there)."""
    rows: dict[Key, Occurrence] = {(row.scheduled_at, row.extra): row for row in ledger.rows}
    found = _shape(job, ledger, now)
    for (instant, extra), row in rows.items():
        if row.state in SHOWN_RUN and not ran.attempts.get((instant, extra)):
            only = f" ({TRIGGERED_ONLY})" if not extra and ran.attempts.get((instant, True)) else ""
            only += (
                f" ({CANCELLED_BEHIND_TRIGGER})" if _cancelled_behind_trigger(job, ran, triggered_at) else ""
            )
            found.append(
                f"{short(job.id)}: the ledger shows {_what(instant, extra)} {row.state.value} "
                f"({_row(row)}), but no worker ever started it{only}"
            )
    recorded = _in_history(job, snap)
    backfilled = set(snap.backfills[job.id])
    for key, numbers in sorted(ran.attempts.items()):
        if ledger.low <= key[0] < ledger.high:
            found += _shown_as_run(job, ledger, rows.get(key), key, numbers, recorded, backfilled)
    return found


def _cancelled_behind_trigger(job: Job, ran: Ran, triggered_at: Iterable[int]) -> bool:
    """The job was cancelled at an occurrence that never started, with a trigger asked before it: its
    triggered run (placed at the trigger, or when what it waited behind ended) is where it stopped."""
    current = job.scheduled_at
    if job.status is not JobStatus.CANCELLED or current is None:
        return False
    if (current, True) in ran.attempts or (current, False) in ran.attempts:
        return False
    return any(asked <= current for asked in triggered_at)


def _shown_as_run(
    job: Job,
    ledger: Ledger,
    row: Occurrence | None,
    key: Key,
    numbers: list[int],
    recorded: set[Key],
    backfilled: set[int],
) -> list[str]:
    """An occurrence the workers started (its attempts' numbers as fenced) shows so, and ran each once."""
    what = f"{short(job.id)}: {_what(*key)}"
    twice = sorted(n for n, count in Counter(numbers).items() if count > 1)
    found = [f"{what} ran attempt(s) {twice} twice (attempts {numbers})"] if twice else []
    if row is None:
        if not key[1] and key[0] in ledger.instants:
            found.append(f"{what} ran (attempts {numbers}), yet has no row")
        elif key in recorded:
            off = f" {OFF_SCHEDULE}" if key[0] in backfilled else ""
            found.append(f"{what} ran{off} (attempts {numbers}; in history), yet has no row")
        return found
    if row.state in SHOWN_RUN or (row.state is OccurrenceState.WAITING and row.attempts > 0):
        return found  # ran, runs, or its retry waits
    if row.reason is SkipReason.NOT_OWED and key not in recorded:
        return found  # ran under a schedule the job had before, its history item lost with its worker
    shown = f"{row.state.value} ({_row(row)})"
    return [*found, f"{what} ran (attempts {numbers}), yet the ledger shows it {shown}"]


def _shape(job: Job, ledger: Ledger, now: int) -> list[str]:
    name = short(job.id)
    found = []
    own = Counter(row.scheduled_at for row in ledger.rows if not row.extra)
    twice = sorted(instant for instant, count in own.items() if count > 1)
    if twice:
        found.append(f"{name}: instants {twice} have more than one row")
    missing = sorted(set(ledger.instants) - set(own))
    if missing:
        found.append(f"{name}: instants {missing[:5]} of the schedule have no row")
    running = [row for row in ledger.rows if row.state is OccurrenceState.RUNNING]
    for row in ledger.rows:
        what = f"{name}: {_what(row.scheduled_at, row.extra)}"
        if row.state is OccurrenceState.SKIPPED and row.reason is None:
            found.append(f"{what} is skipped with no reason")
        if row.state in SHOWN_RUN and row.reason is not None:
            found.append(f"{what} is {row.state.value} for {row.reason}")
        if row.state is OccurrenceState.RAN and row.scheduled_at > now:
            found.append(f"{what} ran, yet is {row.scheduled_at - now} ms ahead")
    current = (job.scheduled_at, lifecycle.is_triggered_run(job))
    if running and (
        len(running) > 1
        or job.status is not JobStatus.RUNNING
        or (running[0].scheduled_at, running[0].extra) != current
    ):
        shown = [_what(row.scheduled_at, row.extra) for row in running]
        found.append(f"{name} is {job.status.value} at {current}, yet the ledger shows {shown} running")
    return found


def missed_miscounted(job: Job, ledger: Ledger, snap: Snapshot) -> list[str]:
    """`missed` is the number of instants since the job's creation that a misfire or an overlap passed
    over. Exact while the job keeps the series it was created with: the ledger shows each such instant
    skipped for that reason, or, once a backfill took it (include_skipped), backfilled, and then a
    skip record still says why it was passed over. After a change of schedule the instants of the old
    series are no longer listed (nor those of the new one before the change): the ledger's count is
    then at most `missed`."""
    missed_by = [skip for skip in snap.skips[job.id] if skip.reason.is_missed]
    counted = 0
    for row in ledger.rows:
        if row.extra or row.scheduled_at < job.created_at:
            continue
        if row.backfilled:
            counted += any(skip.covers(row.scheduled_at) for skip in missed_by)
        elif row.state is OccurrenceState.SKIPPED and row.reason is not None and row.reason.is_missed:
            counted += 1
    exact = job.schedule_since is None
    if counted == job.missed or (not exact and counted <= job.missed):
        return []
    since = "" if exact else f" (its series since {job.schedule_since})"
    records = [(skip.first_ms, skip.until_ms, skip.reason.value, skip.count) for skip in snap.skips[job.id]]
    return [
        f"{short(job.id)}: missed is {job.missed}, but the ledger shows {counted} instant(s) skipped for "
        f"a misfire or an overlap{since}; skip records {records}"
    ]


def skipped_then_run(
    job_id: str, instant: int, backfill_run: bool, seen: tuple[SkipReason, int] | None, patched: Iterable[int]
) -> list[str]:
    """An instant the ledger showed skipped, for good (not while its job was paused), never runs as an
    occurrence of the schedule; a backfill asked to include skipped instants may run one that a pause
    or a misfire passed over (or the calendar excluded), once (unaccounted checks the once)."""
    if seen is None or instant in patched:
        return []
    reason, step = seen
    if backfill_run and reason in BACKFILLED_WHEN_SKIPPED:
        return []
    how = "a backfilled run" if backfill_run else "an occurrence"
    return [
        f"{short(job_id)}: instant {instant}, shown skipped ({reason.value}) at step {step}, started as {how}"
    ]


def _in_history(job: Job, snap: Snapshot) -> set[Key]:
    runs = [*snap.runs[job.id], *([job.last_run] if job.last_run is not None else [])]
    return {(run.scheduled_at, bool(run.extra)) for run in runs}


def _what(instant: int, extra: bool) -> str:
    return f"{'triggered run' if extra else 'instant'} {instant}"


def _row(row: Occurrence) -> str:
    reason = f" {row.reason.value}" if row.reason is not None else ""
    flags = "".join(f", {flag}" for flag in ("backfilled", "extra") if getattr(row, flag))
    return f"{row.state.value}{reason}, {row.attempts} attempt(s){flags}"
