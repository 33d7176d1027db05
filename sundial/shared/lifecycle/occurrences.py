"""Every instant of a job's schedule in a range, and what became of it: the occurrence ledger.

Computed, never guessed, from three durable things (docs/design.md, "Every instant accounted for"):
- the job itself: where its series stands (its current occurrence, or where the schedule resumes
  after a triggered run), since when it is paused, when a cancel was asked, since when its schedule
  is its own;
- the stretches of its series that a write passed over without running them (shared.lifecycle.skips),
  each recorded by that very write;
- run history and the backfill ledger: which attempts ran at which instant.

An instant of the series before where it stands, neither passed over nor excluded, ran: the series
only moves past an instant by running it or by a write that records it as passed over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from sundial.contract.vocabulary import JobStatus, OccurrenceState, RunStatus, SkipReason
from sundial.shared.lifecycle.actions import resume_target
from sundial.shared.lifecycle.decide import is_triggered_run, start_of
from sundial.shared.lifecycle.series import owed_from
from sundial.shared.lifecycle.skips import Skip
from sundial.shared.models import Job, RunSummary

ENDLESS = 2**63
ACTIVE = frozenset({JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.FAILED})


@dataclass(frozen=True)
class Occurrence:
    scheduled_at: int
    start_at: int
    state: OccurrenceState
    reason: SkipReason | None = None
    attempts: int = 0
    last_status: RunStatus | None = None
    backfilled: bool = False
    extra: bool = False


@dataclass(frozen=True)
class Records:
    """What the store holds about the instants of a range."""

    runs: Iterable[RunSummary] = ()  # history items, with the job's last run among them or not
    skips: Iterable[Skip] = ()
    backfilled: frozenset[int] = frozenset()  # instants a backfill took
    backfill_skipped: frozenset[int] = frozenset()  # of those, the ones it passed over (policy skip)
    # True when every attempt that did not succeed keeps a history item but a success may not (the
    # `failures` history setting): an instant that ran with no item then succeeded
    successes_unrecorded: bool = False
    excluded: Callable[[int], bool] = field(default=lambda _instant: False)  # by the job's calendar


def occurrences(
    job: Job, instants: Iterable[int], from_ms: int, until_ms: int, records: Records, now_ms: int
) -> list[Occurrence]:
    """A row for each of `instants` (the series' instants in [from, until), or a one-off's one), one
    for each triggered run in the range, and one for each other instant that ran (of a schedule the
    job had before a change), oldest first; a triggered run after the instant it shares."""
    own, triggered = _attempts_by_instant(job, records.runs)
    skips = own_stretches(job, records.skips)
    # While paused, where a resume now would put the series: the instants before it are passed over.
    resumes_at = _resumed_at(job, now_ms) if job.paused else 0
    rows = [_row(job, instant, own.get(instant, []), skips, records, resumes_at) for instant in instants]
    # Instants that ran off the job's schedule now: under one it had before a change of timing, or
    # backfilled from it.
    rows += [
        replace(_ran(instant, instant, own[instant], False), backfilled=instant in records.backfilled)
        for instant in sorted(set(own) - set(instants))
    ]
    extras = set(triggered)
    if is_triggered_run(job) and job.scheduled_at is not None:
        extras.add(job.scheduled_at)
    rows += [_extra_row(job, instant, triggered.get(instant, [])) for instant in sorted(extras)]
    in_range = [row for row in rows if from_ms <= row.scheduled_at < until_ms]
    return sorted(in_range, key=lambda row: (row.scheduled_at, row.extra))


def own_stretches(job: Job, skips: Iterable[Skip]) -> list[Skip]:
    """The stretches recorded of the job's current series, oldest first: one recorded before a change
    of timing passed over instants of the series before it, and says nothing of the new one's."""
    since = owed_from(job)
    return sorted((skip for skip in skips if skip.first_ms >= since), key=lambda skip: skip.first_ms)


def series_position(job: Job) -> int:
    """The first instant of the series not yet run nor passed over: every instant before it is done
    with. Past the end once the schedule has ended."""
    if job.deferred_at is not None:
        return job.deferred_at
    if job.extra_run or job.scheduled_at is None:
        return ENDLESS  # a triggered run on a schedule that had ended
    if job.is_recurring and job.status in (JobStatus.SUCCEEDED, JobStatus.DEAD):
        return ENDLESS
    return job.scheduled_at


def _row(
    job: Job, instant: int, runs: list[RunSummary], skips: list[Skip], records: Records, resumes_at: int
) -> Occurrence:
    start = start_of(job, instant)
    ran = _ran(instant, start, runs, records.successes_unrecorded)
    backfilled = instant in records.backfilled
    current = None if is_triggered_run(job) else _current(job, instant, start, runs, backfilled)
    if current is not None and current.reason is SkipReason.PAUSED and instant < resumes_at:
        return replace(current, state=OccurrenceState.SKIPPED)  # a resume now would pass it over
    if current is not None:
        return current
    if runs:
        return replace(ran, backfilled=backfilled)
    if backfilled:
        return _backfilled(job, instant, start, records)
    if not job.is_recurring:
        return _one_off(job, instant, start, ran)
    skipped = _skipped(job, instant, skips, records)
    if skipped is not None:
        return Occurrence(instant, start, OccurrenceState.SKIPPED, skipped)
    position = series_position(job)
    if instant < position:
        return ran
    return _ahead(job, instant, start, resumes_at)


def _skipped(job: Job, instant: int, skips: list[Skip], records: Records) -> SkipReason | None:
    if instant < owed_from(job):
        return SkipReason.NOT_OWED
    if records.excluded(instant):
        return SkipReason.CALENDAR
    for skip in skips:
        if skip.covers(instant):
            return skip.reason
    return None


def _current(
    job: Job, instant: int, start: int, runs: list[RunSummary], backfilled: bool
) -> Occurrence | None:
    """The row of the job's current occurrence while it is still to run or running."""
    if job.scheduled_at != instant or job.status not in ACTIVE:
        return None
    extra = is_triggered_run(job)
    attempts = max(job.attempt, len(runs))
    last = runs[-1].status if runs else None
    state = OccurrenceState.RUNNING if job.status is JobStatus.RUNNING else OccurrenceState.WAITING
    reason = SkipReason.PAUSED if job.paused and state is OccurrenceState.WAITING else None
    return Occurrence(instant, start, state, reason, attempts, last, backfilled, extra)


def _ahead(job: Job, instant: int, start: int, resumes_at: int) -> Occurrence:
    """An instant at or after where the series stands, not the current occurrence."""
    if job.status is JobStatus.CANCELLED or job.cancel_requested:
        return Occurrence(instant, start, OccurrenceState.SKIPPED, _before_cancel(job, instant))
    if job.paused:
        if instant < resumes_at:
            return Occurrence(instant, start, OccurrenceState.SKIPPED, SkipReason.PAUSED)
        return Occurrence(instant, start, OccurrenceState.WAITING, SkipReason.PAUSED)
    return Occurrence(instant, start, OccurrenceState.WAITING)


def _before_cancel(job: Job, instant: int) -> SkipReason:
    """Why an instant of a cancelled job did not run: the pause it fell in, if the cancel came after
    it began; else the cancel."""
    cancelled = job.cancelled_at if job.cancelled_at is not None else ENDLESS
    if job.paused_at is None or job.paused_at > instant or instant >= cancelled:
        return SkipReason.CANCELLED
    resumed = ENDLESS if job.paused or job.resumed_at is None else job.resumed_at
    return SkipReason.PAUSED if instant < resumed else SkipReason.CANCELLED


def _resumed_at(job: Job, now_ms: int) -> int:
    """Where a resume now would put the series: the instants before it are passed over for the pause.
    While an attempt runs or waits to retry, the settle decides, so nothing is passed over yet."""
    if job.status is not JobStatus.PENDING or job.scheduled_at is None:
        return 0
    target = resume_target(job, now_ms)
    return ENDLESS if target is None else target


def _one_off(job: Job, instant: int, start: int, ran: Occurrence) -> Occurrence:
    if job.status is JobStatus.CANCELLED:
        return Occurrence(instant, start, OccurrenceState.SKIPPED, SkipReason.CANCELLED)
    if job.status in (JobStatus.SUCCEEDED, JobStatus.DEAD):
        return ran
    return Occurrence(instant, start, OccurrenceState.WAITING)


def _backfilled(job: Job, instant: int, start: int, records: Records) -> Occurrence:
    """A backfilled instant with no attempt of its own in history."""
    if instant in records.backfill_skipped:
        return Occurrence(instant, start, OccurrenceState.SKIPPED, SkipReason.OVERLAP, backfilled=True)
    if instant in job.backfill:
        reason = SkipReason.PAUSED if job.paused else None
        return Occurrence(instant, start, OccurrenceState.WAITING, reason, backfilled=True)
    if job.cancel_requested or job.status is JobStatus.CANCELLED:
        return Occurrence(instant, start, OccurrenceState.SKIPPED, SkipReason.CANCELLED, backfilled=True)
    last = RunStatus.SUCCEEDED if records.successes_unrecorded else None
    return Occurrence(instant, start, OccurrenceState.RAN, None, 1, last, backfilled=True)


def _extra_row(job: Job, instant: int, runs: list[RunSummary]) -> Occurrence:
    current = _current(job, instant, instant, runs, False) if is_triggered_run(job) else None
    if current is not None:
        return current
    if job.scheduled_at == instant and job.status is JobStatus.CANCELLED and not runs:
        return Occurrence(instant, instant, OccurrenceState.SKIPPED, SkipReason.CANCELLED, extra=True)
    last = runs[-1].status if runs else None
    return Occurrence(instant, instant, OccurrenceState.RAN, None, len(runs), last, extra=True)


def _ran(instant: int, start: int, runs: list[RunSummary], successes_unrecorded: bool) -> Occurrence:
    """An instant that ran. With no history of it (a success under the `failures` setting, or a history
    item lost with its worker), its attempts and status are what can be known."""
    if runs:
        return Occurrence(instant, start, OccurrenceState.RAN, None, len(runs), runs[-1].status)
    last = RunStatus.SUCCEEDED if successes_unrecorded else None
    return Occurrence(instant, start, OccurrenceState.RAN, None, 1, last)


def _attempts_by_instant(
    job: Job, runs: Iterable[RunSummary]
) -> tuple[dict[int, list[RunSummary]], dict[int, list[RunSummary]]]:
    """Each instant's attempts, oldest first, one per attempt number (the job's last run may be among
    the history items or not yet): the schedule's own, and the triggered runs'."""
    by_attempt: dict[tuple[bool, int, int], RunSummary] = {}
    for run in (*runs, *([job.last_run] if job.last_run is not None else [])):
        by_attempt[(bool(run.extra), run.scheduled_at, run.attempt)] = run
    own: dict[int, list[RunSummary]] = {}
    triggered: dict[int, list[RunSummary]] = {}
    for (extra, instant, _attempt), run in sorted(by_attempt.items()):
        (triggered if extra else own).setdefault(instant, []).append(run)
    return own, triggered
