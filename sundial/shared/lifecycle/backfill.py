"""Backfill: the occurrences a job's schedule had before the job existed, run now, each once.

Only instants before the job's creation are backfilled: from its creation on, the schedule's
instants are the job's own, run or passed over by its misfire and overlap policies, and running
one of them again would run an occurrence twice. Each backfilled instant is recorded in the store
(one item per instant, written only if absent), so asking again, or for an overlapping window,
runs none of them a second time. docs/design.md, "Backfill".
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from sundial.contract.vocabulary import JobStatus, OverlapPolicy, SkipReason
from sundial.shared.errors import Conflict, InvalidInput
from sundial.shared.lifecycle.actions import unstarted_extra, waiting_triggers
from sundial.shared.lifecycle.decide import Placement, is_backfill_run
from sundial.shared.lifecycle.job_schedule import job_excludes
from sundial.shared.lifecycle.occurrences import own_stretches, series_position
from sundial.shared.lifecycle.series import iter_instants, owed_from, series_point
from sundial.shared.lifecycle.skips import Skip
from sundial.shared.models import Job
from sundial.shared.schedules import parse_schedule
from sundial.shared.schedules.rate import RateRule

# One request records at most this many instants: with the job's write they fit in one
# DynamoDB transaction (100 items), and a mistyped year cannot start a flood.
MAX_BACKFILL_OCCURRENCES = 50
# Backfilled runs waiting on one job at once, however many requests placed them.
MAX_WAITING_BACKFILL = 100
# What a backfill asked to include skipped instants runs: not an overlap (the policy chose to drop it)
# and not a cancelled or not owed one.
RUN_WHEN_SKIPPED = frozenset({SkipReason.PAUSED, SkipReason.MISFIRE})
# A backfill that includes skipped instants searches at most this many of the window's instants for
# those its calendar excluded (about 65 us each for a cron schedule).
CALENDAR_SEARCH_LIMIT = 20_000
# Counting the occurrences of an oversized window stops here; the refusal says "at least".
_COUNT_LIMIT = 100_000


@dataclass(frozen=True)
class BackfillPlan:
    """What a backfill over a window does: `runs` start one after another, oldest first; `skipped`
    are recorded without a run (overlap_policy skip runs only the latest); `already` were
    backfilled before and run no more."""

    runs: tuple[int, ...]
    skipped: tuple[int, ...]
    already: tuple[int, ...]
    until: int  # the window's end as used: `to`, or the job's creation when that comes first

    @property
    def recorded(self) -> tuple[int, ...]:
        return tuple(sorted(self.runs + self.skipped))


def window_instants(
    job: Job, from_ms: int, to_ms: int, skipped: tuple[int, ...] | None = None
) -> tuple[list[int], int]:
    """The schedule's instants in [from, min(to, created)), and `skipped` (instants of the window the
    job skipped while it existed, `include_skipped`: the window then ends at `to`), and that end.
    Raises Conflict for a job that cannot be backfilled, InvalidInput (field "to") for an empty or
    oversized window."""
    refusal = backfill_refusal(job)
    if refusal is not None:
        raise Conflict(refusal)
    if to_ms <= from_ms:
        raise InvalidInput("to must be after from", field="to")
    until = min(to_ms, job.created_at)
    # The schedule's own instants, less those its calendar excludes: they were never occurrences.
    instants = [i for i in _instants_between(job, from_ms, until) if not job_excludes(job, i)]
    if skipped is not None:
        instants, until = sorted({*instants, *skipped}), to_ms
    if len(instants) > MAX_BACKFILL_OCCURRENCES:
        counted = f"at least {_COUNT_LIMIT}" if len(instants) >= _COUNT_LIMIT else str(len(instants))
        raise InvalidInput(
            f"the window holds {counted} occurrences; a backfill runs at most "
            f"{MAX_BACKFILL_OCCURRENCES}: ask for a shorter window",
            field="to",
        )
    return instants, until


def skipped_to_run(job: Job, skips: list[Skip], from_ms: int, to_ms: int, now_ms: int) -> tuple[int, ...]:
    """The instants of [from, to) that the job skipped while it existed, and that a backfill asked to
    `include_skipped` runs: those a pause or a misfire passed over, as recorded by the write that did,
    and those its calendar excluded. Only those behind where its series stands and before now: the
    rest may still run by themselves (a resume under `run_once` runs the latest paused one)."""
    low = max(from_ms, owed_from(job))
    high = min(to_ms, now_ms, series_position(job))
    if high <= low:
        return ()
    chosen: set[int] = set()
    # More than a request may run is enough to know: the count check then refuses the window.
    enough = MAX_BACKFILL_OCCURRENCES + 1
    for skip in own_stretches(job, skips):
        if skip.reason in RUN_WHEN_SKIPPED:
            stretch = iter_instants(job, max(low, skip.first_ms), min(high, skip.until_ms))
            chosen.update(itertools.islice(stretch, enough - len(chosen)))
    if job.calendar is not None:
        chosen.update(_excluded_between(job, low, high, enough))
    return tuple(sorted(chosen)[:enough])


def _excluded_between(job: Job, low: int, high: int, enough: int) -> list[int]:
    """The instants of [low, high) that the job's calendar excluded. Raises InvalidInput (field
    "to") when the window holds too many instants to search."""
    excluded: list[int] = []
    for searched, instant in enumerate(iter_instants(job, low, high)):
        if searched >= CALENDAR_SEARCH_LIMIT:
            raise InvalidInput(
                f"the window holds more than {CALENDAR_SEARCH_LIMIT} instants to search for those the "
                "calendar excluded: ask for a shorter window",
                field="to",
            )
        if job_excludes(job, instant):
            excluded.append(instant)
            if len(excluded) >= enough:
                break
    return excluded


def plan(job: Job, instants: list[int], until: int, recorded: set[int]) -> BackfillPlan:
    """Which of `instants` run, which are passed over, which ran before. Raises Conflict when more
    than MAX_WAITING_BACKFILL would wait."""
    new = [instant for instant in instants if instant not in recorded]
    runs = new if job.overlap_policy is OverlapPolicy.BUFFER else new[-1:]
    waiting = len(job.backfill) + len(runs)
    if waiting > MAX_WAITING_BACKFILL:
        raise Conflict(
            f"job '{job.id}' would have {waiting} backfilled runs waiting; at most "
            f"{MAX_WAITING_BACKFILL} wait at once: backfill again once some have run"
        )
    skipped = new[:-1] if job.overlap_policy is not OverlapPolicy.BUFFER else []
    already = [instant for instant in instants if instant in recorded]
    return BackfillPlan(tuple(runs), tuple(skipped), tuple(already), until)


def on_backfill(job: Job, runs: tuple[int, ...], now_ms: int) -> Placement | None:
    """The first run starts now when nothing runs or waits before it, and the schedule resumes
    where it was; else every run waits its turn behind the current occurrence (None: the store
    only adds them to those waiting)."""
    if not runs:
        return None
    starts_now = (
        job.status in (JobStatus.PENDING, JobStatus.QUEUED)
        and job.attempt == 0
        and not job.paused
        and not job.backfill
        and not unstarted_extra(job)
        and not waiting_triggers(job)
    )
    if not starts_now:
        return None
    first, *rest = runs
    resume_at = job.deferred_at if job.deferred_at is not None else job.scheduled_at
    return Placement(
        JobStatus.PENDING,
        first,
        now_ms,
        0,
        defer_to=resume_at,
        extra=True,
        backfilled=True,
        backfill=tuple(rest),
    )


def waiting_after(job: Job, runs: tuple[int, ...]) -> tuple[int, ...]:
    """The backfilled instants waiting once `runs` are added behind those already waiting."""
    return tuple(sorted(set(job.backfill) | set(runs)))


def backfill_refusal(job: Job) -> str | None:
    """Why `job` cannot be backfilled, or None."""
    if job.status is JobStatus.CANCELLED or job.cancel_requested:
        return f"job '{job.id}' is cancelled; create a new job instead"
    if not job.is_recurring:
        return f"job '{job.id}' is a one-off job: it has no schedule to backfill"
    if job.status in (JobStatus.SUCCEEDED, JobStatus.DEAD) or (job.extra_run and job.deferred_at is None):
        return f"job '{job.id}' has finished its schedule; create a new job to backfill it"
    return None


def _instants_between(job: Job, from_ms: int, until_ms: int) -> list[int]:
    assert job.schedule is not None
    rule = parse_schedule(job.schedule, job.timezone).rule
    if isinstance(rule, RateRule):
        return _rate_instants(job, rule.period_ms, from_ms, until_ms)
    instants: list[int] = []
    instant = rule.next_after(from_ms - 1)
    while instant is not None and instant < until_ms and len(instants) < _COUNT_LIMIT:
        instants.append(instant)
        instant = rule.next_after(instant)
    return instants


def _rate_instants(job: Job, period_ms: int, from_ms: int, until_ms: int) -> list[int]:
    """A rate counts from its job's series: the instants a whole number of periods before it."""
    anchor = series_point(job)
    first = anchor - ((anchor - from_ms) // period_ms) * period_ms
    count = max(0, -(-(until_ms - first) // period_ms))
    return [first + n * period_ms for n in range(min(count, _COUNT_LIMIT))]


__all__ = ["MAX_BACKFILL_OCCURRENCES", "BackfillPlan", "is_backfill_run", "on_backfill", "plan"]
