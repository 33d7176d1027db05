"""The instants of one job's own series, in its active window: what the occurrence ledger lists,
what a backfill takes, and what a write that passes instants over counts.

A rate counts from its job's series (an instant of it, `series_point`), so its instants are the grid
through that point; cron and its kin are a fixed set of instants. The ledger lists the instants its
calendar excludes too, with their reason; what a write passes over counts only the others
(`occurrences_only`), since the engine never places an excluded one.
"""

from __future__ import annotations

from collections.abc import Iterator

from sundial.contract.bounds import EARLIEST_MS, LATEST_MS
from sundial.shared.lifecycle.job_schedule import job_excludes
from sundial.shared.models import Job
from sundial.shared.schedules import parse_schedule
from sundial.shared.schedules.rate import RateRule

# Counting the instants of a long stretch of a cron schedule (or of a rate with a calendar) walks
# them, about 65 us each, inside the write that passes them over (a tick's catch-up, a resume): it
# stops here, so a count this high reads "at least". A rate without a calendar is counted exactly.
COUNT_LIMIT = 1_000


def series_point(job: Job) -> int:
    """An instant of the job's own series (not a triggered or backfilled run's)."""
    if job.deferred_at is not None:
        return job.deferred_at
    if job.scheduled_at is not None and not job.extra_run:
        return job.scheduled_at
    return job.created_at if job.last_run is None else job.last_run.scheduled_at


def owed_from(job: Job) -> int:
    """Instants of the series before this were never the job's: it or its schedule did not exist
    (a rate's first instant is one period after it starts)."""
    since = max(job.created_at, job.schedule_since or 0)
    if job.schedule is None or not job.is_recurring:
        return since
    first = parse_schedule(job.schedule, job.timezone).rule.first_when_active(since)
    return LATEST_MS + 1 if first is None else first


def one_off_instant(job: Job) -> int | None:
    """A one-off's own instant: the time it was asked to run at. Not `scheduled_at`, which a
    triggered run's end leaves at that run's instant."""
    return job.run_at if job.run_at is not None else job.scheduled_at


def iter_instants(job: Job, from_ms: int, until_ms: int, occurrences_only: bool = False) -> Iterator[int]:
    """The series' instants in [from, until) and inside the job's active window, oldest first;
    `occurrences_only`: less those the job's calendar excludes."""
    instants = _instants(job, from_ms, until_ms)
    if occurrences_only and job.calendar is not None:
        return (instant for instant in instants if not job_excludes(job, instant))
    return instants


def _instants(job: Job, from_ms: int, until_ms: int) -> Iterator[int]:
    if job.schedule is None:
        return
    # Data stored before the range was checked may hold an instant outside it: the series has none there.
    low = max(from_ms, EARLIEST_MS) if job.start_at is None else max(from_ms, job.start_at, EARLIEST_MS)
    high = min(until_ms, LATEST_MS + 1) if job.end_at is None else min(until_ms, job.end_at)
    if high <= low:
        return
    rule = parse_schedule(job.schedule, job.timezone).rule
    if isinstance(rule, RateRule):
        if job.start_at is not None:
            low = max(low, job.start_at + 1)  # a rate first runs one period after it becomes active
        period = rule.period_ms
        anchor = series_point(job)
        instant = anchor - ((anchor - low) // period) * period
        while instant < high:
            yield instant
            instant += period
        return
    upcoming = rule.next_after(low - 1)
    while upcoming is not None and upcoming < high:
        yield upcoming
        upcoming = rule.next_after(upcoming)


def first_occurrence_in(job: Job, from_ms: int, until_ms: int) -> int | None:
    """The first instant in [from, until) that the job's calendar does not exclude."""
    return next(iter_instants(job, from_ms, until_ms, occurrences_only=True), None)


def count_occurrences(job: Job, from_ms: int, until_ms: int) -> int:
    """How many instants in [from, until) the job's calendar does not exclude: exact for a rate
    without a calendar, at most COUNT_LIMIT otherwise."""
    first = first_occurrence_in(job, from_ms, until_ms)
    if first is None:
        return 0
    assert job.schedule is not None
    rule = parse_schedule(job.schedule, job.timezone).rule
    if isinstance(rule, RateRule) and job.calendar is None:
        high = until_ms if job.end_at is None else min(until_ms, job.end_at)
        return -(-(high - first) // rule.period_ms)
    count = 0
    for _ in iter_instants(job, first, until_ms, occurrences_only=True):
        count += 1
        if count >= COUNT_LIMIT:
            break
    return count
