"""What a write that moves a job's series past instants it did not run records about them.

A recurring job's current occurrence is where its series stands: every instant before it either ran
or was passed over, and only a few writes pass instants over (the settle's next occurrence under the
overlap and misfire policies, the tick's catch-up of a missed occurrence, a resume). Each records the
stretch it passed over as one item in the same write, with its reason and how many instants it held,
so the ledger (shared.lifecycle.occurrences) tells a skipped instant from one that ran at the cost of
one item per stretch, not one per instant: a week's pause of a job that runs every minute is one item.
docs/design.md, "Every instant accounted for".
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from sundial.contract.bounds import LATEST_MS
from sundial.contract.vocabulary import SkipReason
from sundial.shared.lifecycle.series import count_occurrences, first_occurrence_in, owed_from
from sundial.shared.models import Job


@dataclass(frozen=True)
class Skip:
    """The instants of the series in [first_ms, until_ms), `count` of them, all passed over for `reason`."""

    first_ms: int
    until_ms: int
    reason: SkipReason
    count: int

    def covers(self, instant_ms: int) -> bool:
        return self.first_ms <= instant_ms < self.until_ms


def passed_over(
    job: Job,
    from_ms: int,
    until_ms: int | None,
    reason: SkipReason,
    split_ms: int | None = None,
    early: SkipReason | None = None,
) -> tuple[Skip, ...]:
    """The stretches of the series in [from, until) (until None: to the schedule's end), for `reason`;
    with `split_ms`, the instants before it are passed over for `early` instead. Whatever the write,
    the instants that fell due while the job was paused (its latest pause, or the one it is in) were
    passed over for the pause: a settle after a resume may pass over what the pause held back."""
    end = _end(job, until_ms)
    # Instants before the job's series began were never its own: nothing passes them over.
    from_ms = max(from_ms, owed_from(job))
    if from_ms >= end:
        return ()
    cuts = {from_ms, end}
    if split_ms is not None and early is not None:
        cuts.add(split_ms)
    pause = _pause_window(job)
    if pause is not None:
        cuts.update(pause)
    bounds = sorted(cut for cut in cuts if from_ms <= cut <= end)
    stretches: list[Skip] = []
    for low, high in itertools.pairwise(bounds):
        why = _reason_at(low, reason, split_ms, early, pause)
        for skip in _stretch(job, low, high, why):
            last = stretches[-1] if stretches else None
            if last is not None and last.reason is why:  # one record for one reason
                stretches[-1] = Skip(last.first_ms, skip.until_ms, why, last.count + skip.count)
            else:
                stretches.append(skip)
    return tuple(stretches)


def _pause_window(job: Job) -> tuple[int, int] | None:
    """[paused_at, resumed_at) of the job's latest pause; open-ended while it lasts."""
    if job.paused_at is None:
        return None
    if job.paused or job.resumed_at is None:
        return job.paused_at, _end(job, None)
    return job.paused_at, job.resumed_at


def _reason_at(
    instant: int,
    reason: SkipReason,
    split_ms: int | None,
    early: SkipReason | None,
    pause: tuple[int, int] | None,
) -> SkipReason:
    if pause is not None and pause[0] <= instant < pause[1]:
        return SkipReason.PAUSED
    if split_ms is not None and early is not None and instant < split_ms:
        return early
    return reason


def missed_count(skips: tuple[Skip, ...]) -> int:
    """The instants among `skips` that the user did not choose to skip (misfire, overlap)."""
    return sum(skip.count for skip in skips if skip.reason.is_missed)


def _stretch(job: Job, from_ms: int, until_ms: int, reason: SkipReason) -> tuple[Skip, ...]:
    first = first_occurrence_in(job, from_ms, until_ms)
    if first is None:
        return ()
    return (Skip(first, until_ms, reason, count_occurrences(job, first, until_ms)),)


def _end(job: Job, until_ms: int | None) -> int:
    if until_ms is not None:
        return until_ms
    return LATEST_MS + 1 if job.end_at is None else job.end_at
