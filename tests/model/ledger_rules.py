"""Steps of the model that pass instants over, mixed into EngineMachine, with the invariant that holds
the occurrence ledger to what the workers ran (docs/design.md, "Every instant accounted for", invariant
20; the checks themselves are in tests/model/accounted.py):

- every instant of a job's schedule, from a while before its creation to a little after now, has one
  row, ran, running, waiting or skipped with a reason; a ran one is not in the future;
- what shows as ran or running was started by a worker, and every occurrence a worker started shows as
  ran, running, or waiting for its retry, each attempt once;
- an instant once shown skipped never runs after as an occurrence of the schedule, and as a backfilled
  run only when a pause or a misfire passed it over (a paused job's rows are predictions of what a
  resume now would pass over: they are held to this once it is resumed);
- `missed` counts the instants since the creation that a misfire or an overlap passed over.

The steps: a downtime (nothing runs for 20 minutes or an hour, then a tick catches up what fell due),
a pause that lasts a while before its resume, a target call that outlasts the job's period, its
heartbeat beating meanwhile (an overlap), and a backfill with `include_skipped` over the latest
instants of a stretch a pause or a misfire passed over (backfill_rules.py's backfills draw it too).

At the end of each example the API's reader (OccurrenceReader: the store's own queries, page by page)
must answer what the ledger computed from the table says.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from sundial.contract.vocabulary import JobStatus, OccurrenceState, SkipReason
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.clock import format_rfc3339
from sundial.shared.lifecycle.skips import Skip
from sundial.shared.service.occurrences import OccurrenceReader
from tests.model.accounted import (
    Ledger,
    Ran,
    key_of,
    ledger_of,
    missed_miscounted,
    skipped_then_run,
    unaccounted,
)
from tests.model.checks import short

if TYPE_CHECKING:
    from tests.model.intents import Intent
    from tests.model.test_engine_machine import Attempt

SECOND = 1000
LABELS = "ABC"
labels = st.sampled_from(LABELS)
DOWNTIMES = {"20 min": 20 * 60, "1 h": 3600}
# How long a pause lasts: a few minutes, within the misfire grace (nothing passed over), a while.
PAUSES = {"5 min": 300, "45 s": 45, "20 min": 20 * 60}
CALLS_S = [95, 25, 250]  # past a minute's instant; past ten seconds' two; past two minutes'
READER_PAGE = 200
RERUN_AT_ONCE = 20


@dataclass
class LedgerState:
    """What the ledger check remembers between steps."""

    computed: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # what each job's was read from
    skipped: dict[str, dict[int, tuple[SkipReason, int]]] = field(default_factory=dict)  # for good
    checked: set[int] = field(default_factory=set)  # attempts checked against `skipped`


class LedgerSteps:
    """Rules and the invariant of EngineMachine for the occurrence ledger (see the module docstring)."""

    # Provided by EngineMachine.
    clock: Any
    env: Any
    step: int
    labels: dict[str, str]
    intents: dict[str, Intent]
    attempts: list[Attempt]
    checker: Any
    _snapshot: Any
    _violation: Any
    _note: Any
    _begin: Any
    _running: Any
    _labelled: Any
    _user_action: Any
    _target_call: Any
    _backfill: Any
    _settle: Any
    _tick_has_work: Any
    tick: Any

    @property
    def _ledger(self) -> LedgerState:
        found: LedgerState = self.__dict__.setdefault("_ledger_state", LedgerState())
        return found

    # --- steps ------------------------------------------------------------------------------------

    @precondition(lambda self: bool(self.labels))
    @rule(by=st.sampled_from(list(DOWNTIMES)), then=st.sampled_from(["a tick", "nothing"]))
    def downtime(self, by: str, then: str = "a tick") -> None:
        """Nothing runs for a while (the scheduler and the workers are down): the clock moves far, and
        the first tick after it catches up what fell due meanwhile, as the misfire policy says."""
        self.clock.advance(DOWNTIMES[by])
        self._begin(f"clock +{DOWNTIMES[by]}s (downtime {by}), then {then}")
        if then == "a tick" and self._tick_has_work():
            self.tick()

    @precondition(lambda self: bool(self.labels))
    @rule(job=labels, lasting=st.sampled_from(list(PAUSES)))
    def paused_a_while(self, job: str, lasting: str = "5 min") -> None:
        """A user pauses a job, and resumes it a while later: the resume passes over what fell due
        meanwhile, as its misfire policy says, and records it."""
        job_id = self._labelled(job)
        if job_id is None:
            return
        self.env.seen[f"paused for {lasting}"] += 1
        self._user_action(job_id, "pause", None)
        self.clock.advance(PAUSES[lasting])
        self._user_action(job_id, "resume", None)

    def _rerunnable(self) -> list[tuple[str, Skip]]:
        """Stretches a pause or a misfire passed over, of recurring jobs neither cancelled nor paused,
        whose first instant no backfill took yet: what include_skipped may run."""
        snap = self._snapshot()
        found = []
        for job_id, skips in snap.skips.items():
            job = snap.jobs.get(job_id)
            if job is None or not job.is_recurring or job.paused or job.status is JobStatus.CANCELLED:
                continue
            taken = snap.backfills[job_id]
            found += [
                (job_id, skip)
                for skip in skips
                if skip.reason in (SkipReason.PAUSED, SkipReason.MISFIRE) and skip.first_ms not in taken
            ]
        return found

    @precondition(lambda self: bool(self._rerunnable()))
    @rule(data=st.data(), dry_run=st.sampled_from([False, True]))
    def rerun_skipped(self, data: st.DataObject, dry_run: bool = False) -> None:
        """POST /jobs/{id}/backfill with include_skipped over the latest instants of a stretch that a
        pause or a misfire passed over: each runs once, however often asked."""
        found = self._rerunnable()
        job_id, skip = found[data.draw(st.integers(0, len(found) - 1), "stretch")]
        # At most RERUN_AT_ONCE of its instants, its latest (a request runs at most 50).
        span = (skip.until_ms - skip.first_ms) * RERUN_AT_ONCE // max(skip.count, 1)
        start = max(skip.first_ms, skip.until_ms - span)
        what = f"{start}-{skip.until_ms}, the latest of a {skip.reason.value} stretch"
        self._backfill(job_id, (start, skip.until_ms), what, dry_run, None, None, include_skipped=True)

    def _calls_to_make(self) -> bool:
        return any(a.state == "running" and a.effect is None for a in self.attempts)

    @precondition(lambda self: self._calls_to_make())
    @rule(job=labels, seconds=st.sampled_from(CALLS_S))
    def long_call(self, job: str, seconds: int = 95) -> None:
        """An attempt's target call lasts longer than its job's period (within its timeout), its
        heartbeat beating every period meanwhile, and then it settles: the instants that fell due
        while it ran are overlaps."""
        attempt = self._running(job, "newest")
        if attempt is None or attempt.effect is not None:
            return
        seconds = min(seconds, attempt.job.retry.timeout_seconds - 1)
        self._begin(f"target call {attempt}, {seconds} s long, then its settle")
        self.env.seen["long call"] += 1
        left = seconds
        while left > 0:
            period = min(left, c.HEARTBEAT_EVERY_SECONDS)
            self.clock.advance(period)
            left -= period
            attempt.heartbeat.beat()
            if attempt.heartbeat.lost:
                attempt.state = "lost"
                self._note("  → lease lost during the call: the attempt records nothing", "heartbeat lost")
                return
        self._target_call(attempt)
        if attempt.state == "running":
            self._settle(attempt, None)

    # --- the invariant ----------------------------------------------------------------------------

    @invariant()
    def instants_accounted(self) -> None:
        """20. Every instant accounted for (see the module docstring). A job's ledger is computed again
        when anything it is computed from changed: the job, its records, what ran of it, and the clock
        while it is paused."""
        began = time.perf_counter()
        state = self._ledger
        snap = self._snapshot()
        now = self.clock.now_ms()
        found: list[str] = []
        for attempt in self.attempts:  # started since the last check, against what showed skipped then
            if attempt.n in state.checked:
                continue
            state.checked.add(attempt.n)
            instant, extra = key_of(attempt.job)
            if not extra:
                seen = state.skipped.get(attempt.job.id, {}).get(instant)
                patched = self.intents[attempt.job.id].patched_run_at
                found += skipped_then_run(
                    attempt.job.id, instant, lifecycle.is_backfill_run(attempt.job), seen, patched
                )
        ran = self._ran()
        for job_id, job in snap.jobs.items():
            mine = ran.get(job_id, Ran())
            inputs = (
                job.version,
                len(snap.runs[job_id]),
                len(snap.skips[job_id]),
                len(snap.backfills[job_id]),
                sum(len(numbers) for numbers in mine.attempts.values()),
                now if job.paused else None,
            )
            if state.computed.get(job_id) == inputs:
                continue
            state.computed[job_id] = inputs
            ledger = ledger_of(job, snap, now)
            found += unaccounted(job, ledger, mine, snap, now, self.intents[job_id].triggered_at)
            found += missed_miscounted(job, ledger, snap)
            if not job.paused:
                self._remember_skipped(job_id, ledger)
        self.env.ledger_seconds += time.perf_counter() - began
        self._violation(*found)

    def _ran(self) -> dict[str, Ran]:
        ran: dict[str, Ran] = {}
        for attempt in self.attempts:
            mine = ran.setdefault(attempt.job.id, Ran())
            mine.attempts.setdefault(key_of(attempt.job), []).append(attempt.job.attempt)
            if lifecycle.is_backfill_run(attempt.job):
                mine.backfilled.add(attempt.job.scheduled_at or 0)
        return ran

    def _remember_skipped(self, job_id: str, ledger: Ledger) -> None:
        seen = self._ledger.skipped.setdefault(job_id, {})
        for row in ledger.rows:
            if row.extra or row.state is not OccurrenceState.SKIPPED or row.reason is None:
                continue
            if row.reason is SkipReason.NOT_OWED or row.scheduled_at in seen:
                continue  # a backfill may take an instant before the job's creation
            seen[row.scheduled_at] = (row.reason, self.step)
            self.env.seen[f"ledger: skipped {row.reason.value}"] += 1

    # --- at the end of each example -----------------------------------------------------------------

    def reader_agrees(self) -> None:
        """The API's reader answers each job's ledger, page by page, as computed from the table. Not
        checked after a failure: that one is the example's."""
        if sys.exc_info()[0] is not None:
            return
        began = time.perf_counter()
        snap = self._snapshot()
        now = self.clock.now_ms()
        reader = OccurrenceReader(self.checker, self.clock)
        found = []
        for job in snap.jobs.values():
            ledger = ledger_of(job, snap, now)
            want = [_shown(row) for row in ledger.rows]
            got: list[tuple[Any, ...]] = []
            token = None
            while True:
                page = reader.page(
                    job.id, format_rfc3339(ledger.low), format_rfc3339(ledger.high), READER_PAGE, token
                )
                got += [_viewed(view) for view in page.occurrences]
                token = page.next_token
                if token is None:
                    break
            if got != want:
                first = next((n for n, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
                where = min(len(got), len(want)) if first is None else first
                found.append(
                    f"{short(job.id)}: the reader answers {len(got)} rows, the ledger of the table "
                    f"{len(want)}; row {where}: {got[where : where + 1]} against {want[where : where + 1]}"
                )
        self.env.ledger_seconds += time.perf_counter() - began
        self._violation(*found)


def _shown(row: Any) -> tuple[Any, ...]:
    status = None if row.last_status is None else row.last_status.value
    reason = None if row.reason is None else row.reason.value
    fields = (row.attempts, status, row.backfilled, row.extra)
    return (format_rfc3339(row.scheduled_at), row.state.value, reason, *fields)


def _viewed(view: Any) -> tuple[Any, ...]:
    reason = None if view.reason is None else view.reason.value
    fields = (view.attempts, view.last_status, view.backfilled, view.extra)
    return (view.scheduled_at, view.state.value, reason, *fields)
