"""POST /schedules/preview: a schedule's next runs in its time zone, as the scheduler computes them,
without the occurrences a calendar excludes; with `explain`, which ones it excluded on the way."""

from __future__ import annotations

from sundial.contract.bounds import in_range
from sundial.contract.jobs import PreviewRequest, PreviewResponse
from sundial.shared.clock import format_rfc3339, to_epoch_ms
from sundial.shared.schedules import MAX_COUNT, Schedule, next_runs, parse_schedule, start_instant
from sundial.shared.schedules.calendars import calendar_on_one_off, calendar_refusal, check_calendar

# `excluded` lists at most this many: a rate(1 second) passes 86,400 of them on one holiday.
MAX_EXCLUDED_SHOWN = MAX_COUNT


def preview_schedule(request: PreviewRequest, now_ms: int) -> PreviewResponse:
    """Raises InvalidInput naming the field at fault: `calendar` for a calendar on a one-off schedule,
    or one that leaves the schedule no occurrence; `calendar.holidays` for an unknown code."""
    unfiltered = parse_schedule(request.schedule, request.timezone)
    if request.calendar is not None:
        check_calendar(request.calendar)
        if not unfiltered.is_recurring:
            raise calendar_on_one_off()
    schedule = parse_schedule(request.schedule, request.timezone, request.calendar)
    after = to_epoch_ms(request.after) if request.after else now_ms
    instants = next_runs(schedule, after, request.count)
    if not instants and request.calendar is not None and next_runs(unfiltered, after, 1):
        raise calendar_refusal(request.schedule, request.timezone)
    starts: list[int] | None = instants
    if request.window_seconds:
        job_id, window = request.job_id, request.window_seconds
        starts = None
        if job_id is not None:
            starts = [start_instant(job_id, instant, window, schedule) for instant in instants]
    excluded = _excluded(unfiltered, schedule, after, instants, request.count) if request.explain else None
    return PreviewResponse(
        next_runs=[format_rfc3339(instant) for instant in instants],
        starts=None if starts is None else [format_rfc3339(instant) for instant in starts],
        excluded=None if excluded is None else [format_rfc3339(instant) for instant in excluded],
    )


def _excluded(
    unfiltered: Schedule, schedule: Schedule, after_ms: int, runs: list[int], count: int
) -> list[int]:
    """The occurrences after `after_ms` that the calendar excluded before the last run (or, when the
    runs ended early, before the schedule did): the unfiltered schedule's instants that are not runs."""
    full = len(runs) == count
    kept = set(runs)
    found: list[int] = []
    instant = unfiltered.rule.next_after(after_ms)
    while instant is not None and in_range(instant) and len(found) < MAX_EXCLUDED_SHOWN:
        if full and instant >= runs[-1]:
            break
        if schedule.excludes(instant):
            found.append(instant)
        elif instant not in kept:
            break  # the runs ended here: the calendar's search gave up
        instant = unfiltered.rule.next_after(instant)
    return found
