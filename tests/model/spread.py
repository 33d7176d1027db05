"""The occurrence a claim must run for a rate job with a spread window, worked out by brute force
over the rate's grid: each instant's start is its point of the window, and "missed" is counted from
that start (docs/schedules.md, "Spread windows"). checks.misfire_target hands window jobs here."""

from __future__ import annotations

from sundial.contract.vocabulary import MisfirePolicy
from sundial.shared import constants as c
from sundial.shared.models import Job
from sundial.shared.schedules import parse_schedule, start_instant

GRACE_MS = c.MISFIRE_GRACE_SECONDS * 1000


def spread_misfire_target(job: Job, period_ms: int, now_ms: int) -> int:
    assert job.schedule is not None and job.scheduled_at is not None
    schedule = parse_schedule(job.schedule, job.timezone)

    def start(instant: int) -> int:
        return start_instant(job.id, instant, job.window_seconds, schedule)

    scheduled = job.scheduled_at
    policy = MisfirePolicy(job.misfire_policy)
    if start(scheduled) >= now_ms - GRACE_MS or policy is MisfirePolicy.RUN_ALL:
        return scheduled
    later = range(scheduled + period_ms, now_ms + period_ms + 1, period_ms)
    if policy is MisfirePolicy.SKIP:  # the first whose start is not missed
        return next(i for i in later if start(i) >= now_ms - GRACE_MS)
    started = [i for i in later if start(i) < now_ms]  # the latest one due by now
    if not started and start(later[0]) == now_ms:
        return later[0]  # starting on this very millisecond
    return started[-1] if started else scheduled
