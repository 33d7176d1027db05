"""Steps of the model for spread windows and backfill, mixed into EngineMachine, with the
invariants that hold the engine to them: an acknowledged backfill runs each of its instants once
(unless a cancel drops it, or the job stops being recurring), no two backfills take the same
instant, none of them starts while the job is paused, and no occurrence starts before the point
of its window (docs/design.md, "Spread windows" and "Backfill")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from sundial.contract.jobs import BackfillRequest, BackfillView, JobUpdate
from sundial.contract.vocabulary import JobStatus
from sundial.shared import lifecycle
from sundial.shared.clock import format_rfc3339, to_epoch_ms
from tests.model.checks import short

if TYPE_CHECKING:
    from tests.model.intents import Intent
    from tests.model.test_engine_machine import Attempt

SECOND = 1000
LABELS = "ABC"
WINDOWS = [0, 45, 300, 3600]
# How far before the job's creation a window starts: a few of a rate's instants, a handful, and
# (for rate(10 seconds)) more than one request may take.
SPANS_S = [25, 130, 620]
# Where a window ends: at the job's creation, after now (it reaches past the creation), before the
# creation; or it is the last `span` seconds before now (with include_skipped, the instants since the
# creation that a pause or a misfire passed over run too).
WHERE = ["ends at creation", "ends later", "ends before", "the last"]
labels = st.sampled_from(LABELS)
faults = st.one_of(
    st.none(), st.sampled_from(["throttled", "conflict", "answer lost", "2nd write's answer lost"])
)
races = st.one_of(st.none(), st.sampled_from(["the attempt settles", "a tick"]))


@dataclass
class Backfills:
    """What backfills the user was told took: instant → the step that acknowledged it, per job."""

    taken: dict[str, dict[int, int]] = field(default_factory=dict)  # those that run
    recorded: dict[str, dict[int, int]] = field(default_factory=dict)  # those that run or were skipped
    checked: set[int] = field(default_factory=set)  # attempts checked at their start


class BackfillSteps:
    """Rules of EngineMachine for windows and backfill (see the module docstring)."""

    # Provided by EngineMachine.
    clock: Any
    env: Any
    step: int
    labels: dict[str, str]
    intents: dict[str, Intent]
    attempts: list[Attempt]
    _snapshot: Any
    _call: Any
    _job: Any
    _labelled: Any
    _violation: Any
    _note: Any
    service: Any

    @property
    def _backfills(self) -> Backfills:
        found: Backfills = self.__dict__.setdefault("_backfill_state", Backfills())
        return found

    @precondition(lambda self: bool(self.labels))
    @rule(job=labels, window=st.sampled_from(WINDOWS), fault=faults, race=races)
    def spread(self, job: str, window: int, fault: str | None = None, race: str | None = None) -> None:
        """PATCH /jobs/{id} {"window_seconds": N}: the occurrence not yet run moves to its start."""
        job_id = self._labelled(job)
        if job_id is None:
            return
        patch = JobUpdate(window_seconds=window)
        self._call(
            f"PATCH window_seconds {window}",
            job_id,
            lambda _: self.service.update(job_id, patch),
            fault,
            race,
        )

    @precondition(lambda self: bool(self.labels))
    @rule(
        job=labels,
        span=st.sampled_from(SPANS_S),
        where=st.sampled_from(WHERE),
        dry_run=st.sampled_from([False, False, True]),
        fault=faults,
        race=races,
        include_skipped=st.sampled_from([True, False]),
    )
    def backfill(
        self,
        job: str,
        span: int,
        where: str = "ends at creation",
        dry_run: bool = False,
        fault: str | None = None,
        race: str | None = None,
        include_skipped: bool = False,
    ) -> None:
        """POST /jobs/{id}/backfill over a window before (or reaching past) the job's creation, or over
        the last minutes; with `include_skipped`, the window's instants that the job skipped while it
        existed (paused, missed) run too, each once however often asked."""
        # A recurring job that is not cancelled when there is one: the others are only refused.
        job_id = self._labelled(job, self._backfillable) or self._labelled(job)
        current = self._job(job_id) if job_id is not None else None
        if job_id is None or current is None:
            return
        created, now = current.created_at, self.clock.now_ms()
        start = now - span * SECOND if where == "the last" else created - span * SECOND
        end = {"ends at creation": created, "ends later": now + 60 * SECOND, "the last": now}.get(
            where, created - span * SECOND // 2
        )
        self._backfill(job_id, (start, end), f"{span}s, {where}", dry_run, fault, race, include_skipped)

    def _backfill(
        self,
        job_id: str,
        window: tuple[int, int],
        what: str,
        dry_run: bool = False,
        fault: str | None = None,
        race: str | None = None,
        include_skipped: bool = False,
    ) -> None:
        """POST /jobs/{id}/backfill over [from, to), and what its answer says it took."""
        request = BackfillRequest.model_validate(
            {
                "from": format_rfc3339(window[0]),
                "to": format_rfc3339(window[1]),
                "dry_run": dry_run,
                "include_skipped": include_skipped,
            }
        )
        answers: list[BackfillView] = []

        def call(_: str) -> Any:
            answers.append(self.service.backfill(job_id, request))
            return answers[-1].job or self.service.get(job_id)

        before = self._job(job_id)
        how = f"{what}{', skipped too' if include_skipped else ''}{' (dry run)' if dry_run else ''}"
        answer = self._call(f"backfill {how}", job_id, call, fault, race)
        if include_skipped:
            self.env.seen[f"backfill including skipped ({what.rsplit(', ', maxsplit=1)[-1]}): {answer}"] += 1
        if answer != "ack":
            return
        done = answers[-1]
        self._note(f"  → runs {done.instants}, skipped {len(done.skipped)}, already {len(done.already)}")
        if dry_run:
            after = self._job(job_id)
            if race is None and before is not None and after is not None and after.version != before.version:
                self._violation(f"{short(job_id)}: a dry-run backfill changed the job")
            return
        created = before.created_at if before is not None else 0
        if include_skipped and any(_ms(text) >= created for text in [*done.instants, *done.skipped]):
            self.env.seen["backfill took instants the job skipped"] += 1
        self._take(job_id, [*done.instants, *done.skipped], [*done.instants])

    def _backfillable(self, job_id: str) -> bool:
        job = self._snapshot().jobs.get(job_id)
        return job is not None and job.is_recurring and job.status is not JobStatus.CANCELLED

    def _take(self, job_id: str, recorded: list[str], runs: list[str]) -> None:
        """No instant is taken by two backfills: the ledger's conditional writes decide a race."""
        seen = self._backfills.recorded.setdefault(job_id, {})
        instants = [_ms(text) for text in recorded]
        twice = [instant for instant in instants if instant in seen]
        if twice:
            steps = [seen[instant] for instant in twice]
            self._violation(f"{short(job_id)}: a backfill took {twice} again (taken at steps {steps})")
        seen.update(dict.fromkeys(instants, self.step))
        taken = self._backfills.taken.setdefault(job_id, {})
        taken.update(dict.fromkeys((_ms(text) for text in runs), self.step))

    # --- invariants -------------------------------------------------------------------------------

    @invariant()
    def backfills_kept(self) -> None:
        """An acknowledged backfill's instants each run (an attempt started), or still wait, unless a
        cancel dropped them or the job stopped being recurring (its schedule ended)."""
        snap = self._snapshot()
        started = {attempt.occurrence for attempt in self.attempts}
        found = []
        for job_id, taken in self._backfills.taken.items():
            job = snap.jobs.get(job_id)
            if job is None:
                continue
            dropped = job.status is JobStatus.CANCELLED or job.cancel_requested or not job.is_recurring
            idle = (
                job.status in (JobStatus.PENDING, JobStatus.QUEUED)
                and job.attempt == 0
                and not job.extra_run
                and not job.paused
            )
            if job.backfill and idle:
                found.append(
                    f"{short(job_id)}: backfilled runs {job.backfill} wait behind nothing: the occurrence at "
                    f"{job.scheduled_at} has not started and nothing runs"
                )
            for instant, step in taken.items():
                waits = instant in job.backfill or job.scheduled_at == instant
                if not (waits or dropped or (job_id, instant) in started):
                    found.append(
                        f"{short(job_id)}: backfilled instant {instant} (acknowledged at step {step}) "
                        f"neither ran nor waits ({job.status.value} at {job.scheduled_at}, "
                        f"waiting {job.backfill})"
                    )
        self._violation(*found)

    @invariant()
    def starts_in_their_window(self) -> None:
        """Never early: an occurrence's first attempt starts at or after the point of its window; a
        backfilled run never starts while its job is paused."""
        found = []
        for attempt in self.attempts:
            if attempt.n in self._backfills.checked:
                continue
            self._backfills.checked.add(attempt.n)
            job = attempt.job
            if job.attempt != 1 or job.retried_after or job.scheduled_at is None or job.started_at is None:
                continue
            if lifecycle.is_backfill_run(job):
                paused = self.intents[job.id].paused_since
                if paused is not None:
                    found.append(f"{attempt}: a backfilled run started while paused (since {paused})")
                continue
            if job.extra_run:
                continue
            start = lifecycle.start_of(job, job.scheduled_at)
            if job.started_at < start:
                found.append(
                    f"{attempt} started at {job.started_at}, {start - job.started_at} ms before its start "
                    f"{start} (window {job.window_seconds} s)"
                )
        self._violation(*found)


def _ms(text: str) -> int:
    return to_epoch_ms(datetime.fromisoformat(text))
