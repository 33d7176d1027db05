"""A job's schedule as the engine reads it: its expression in its time zone, without the occurrences
its calendar excludes. Every placement of one of the schedule's occurrences (create, PATCH, the next
occurrence after a settle, a catch-up, a resume, a backfill's window) reads it here, so no path can
forget the calendar. The occurrence ledger lists the instants without it (parse_schedule alone) and
asks `job_excludes` why one did not run."""

from __future__ import annotations

from sundial.shared.errors import InvalidInput
from sundial.shared.models import Job
from sundial.shared.schedules import Schedule, first_occurrence, parse_schedule
from sundial.shared.schedules.calendars import calendar_excludes, calendar_refusal


def job_schedule(job: Job) -> Schedule:
    """The job's schedule with its calendar (cached: jobs that share both share one)."""
    assert job.schedule is not None
    return parse_schedule(job.schedule, job.timezone, job.calendar)


def job_excludes(job: Job, instant_ms: int) -> bool:
    """True when the job's calendar excludes the occurrence at `instant_ms` (its date in the job's zone)."""
    return job.is_recurring and calendar_excludes(job.calendar, job.timezone, instant_ms)


def no_occurrence_left(job: Job, now_ms: int) -> InvalidInput:
    """The refusal of new timing that leaves the job no occurrence after now: naming `calendar` when
    the schedule has one that the calendar excludes, else `schedule`."""
    assert job.schedule is not None
    if job.calendar is not None:
        unfiltered = parse_schedule(job.schedule, job.timezone)
        if first_occurrence(unfiltered, now_ms, job.start_at, job.end_at) is not None:
            return calendar_refusal(job.schedule, job.timezone)
    return InvalidInput(f"schedule '{job.schedule}' has no occurrence after now", field="schedule")
