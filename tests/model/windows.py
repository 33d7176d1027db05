"""Steps of the model that stand in the narrow windows the engine's guards protect.

Each is a rule of EngineMachine (mixed in) whose precondition holds only while its window is open,
so that the search crosses it whenever it stands there, instead of waiting for an even pick among
all the rules to land in it: a PATCH of timing on a finished one-off; a tick's claim or reclaim with
a user's call landing between its read and its write; a user's call on a running attempt's job
with that attempt's settle landing between the call's read and its write; a zombie attempt's settle
after its successor started. docs/testing.md says why each window matters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c

if TYPE_CHECKING:
    from tests.model.intents import Intent
    from tests.model.test_engine_machine import Attempt

SECOND = 1000
FINISHED_ONE_OFF = (JobStatus.SUCCEEDED, JobStatus.DEAD)
# What a user asks of a finished one-off: new timing must not bring it back.
REVISITS = ["run_at now", "run_at in 2 min", "run_at now", "run_at in 2 min", "run_at = its last run"]
# A user's call that lands between a tick's read of a job and its claim or reclaim.
# A pause is what a claim must not overwrite (a cancel is refused by the claim's statuses anyway).
TICK_MEETS = ["pause", "cancel", "pause", "pause", "cancel", "trigger", "PATCH run_at in 2 min"]
# A user's call whose read is of a running attempt, and whose write comes after that attempt settled.
SETTLE_MEETS = ["cancel", "pause", "cancel", "pause", "trigger"]
SETTLES = "the attempt settles"
# How a start with a zombie beside its retry ends: left to the steps after it, or with the zombie's
# settle, its successor having called its target first or not. Left to an even pick among the rules,
# a user's call, the successor's settle or the zombie's heartbeat mostly comes first, and the zombie
# stops or is refused for a reason other than its token.
SUCCESSOR_CALLED = "its settle after its successor's target call"
ZOMBIE_ENDS = [SUCCESSOR_CALLED, SUCCESSOR_CALLED, "its settle", None]
# A start: a create whose first try froze between reserving its Idempotency-Key and writing its job.
FROZEN_CREATE = "its create's first try frozen"


class WindowSteps:
    """Rules of EngineMachine, gated on the window each crosses (see the module docstring)."""

    # Provided by EngineMachine.
    clock: Any
    env: Any
    step: int
    intents: dict[str, Intent]
    attempts: list[Attempt]
    _snapshot: Any
    _patch_action: Any
    _user_action: Any
    _settle_attempt: Any
    tick: Any

    create: Any
    deliver: Any
    work: Any
    advance: Any
    bag: list[Any]
    _fence: Any
    _target_call: Any
    _begin: Any
    frozen_creates: dict[str, int]

    def _start_at_window(
        self, how: str, behaviour: str, max_retries: int, overlap: str, meets: str | None = None
    ) -> bool:
        """The starts (EngineMachine.start) that put job A right before a window; False for the others."""
        if how == "a finished one-off":
            # Run to its end, succeeded (or dead): what new timing must never bring back.
            ends = "fails" if behaviour == "fails" else "ok"
            self.create("A", "one-off now", ends, 0, (5,), "high", "run_once", overlap)
            self.work("A")
            return True
        if how == FROZEN_CREATE:
            # The client's retry makes the job, whose first attempt starts: the first try's write
            # lands from the next step on (frozen_create_lands), where a create that overwrote
            # would bring back the job's start.
            self.create(
                "A",
                "one-off now",
                behaviour,
                max_retries,
                (5,),
                "high",
                "run_once",
                overlap,
                frozen_first_try=True,
            )
            self.deliver("A")
            return True
        if how == "due for its claim":
            # Its run row falls within the tick's horizon a minute before its occurrence: the tick
            # claims it, conditional on the row it read, and a user's call may land in between.
            self.create("A", "rate(2 minutes)", behaviour, max_retries, (5,), "high", "run_once", overlap)
            self.advance("61s")
            self.tick(None, meets)
            return True
        return False

    # --- a finished one-off meets new timing -------------------------------------------------------

    def _finished_one_offs(self) -> list[str]:
        """One-offs seen finished and not yet given new timing since: once each, so that a finished
        one-off does not hold the search at this rule (Hypothesis favours the first rule it may run)."""
        jobs = self._snapshot().jobs.values()
        return [
            job.id
            for job in jobs
            if not job.is_recurring
            and job.status in FINISHED_ONE_OFF
            and (intent := self.intents[job.id]).finished_at_step is not None
            and (intent.revisited_at_step or -1) < intent.finished_at_step
        ]

    @precondition(lambda self: bool(self._finished_one_offs()))
    @rule(data=st.data())
    def revisit(self, data: st.DataObject) -> None:
        """A user PATCHes the timing of a one-off that finished (a finished one-off has no next
        occurrence to move: it must never run again)."""
        found = self._finished_one_offs()
        job_id = found[data.draw(st.integers(0, len(found) - 1), "job")]
        self.intents[job_id].revisited_at_step = self.step
        self._patch_action(job_id, data.draw(st.sampled_from(REVISITS), "change"), None)

    # --- a create's frozen first try lands on the job its retry made ---------------------------------

    def _frozen_create_behind(self) -> bool:
        """A create's first try holds its job's write back, and the job has been written since."""
        jobs = self._snapshot().jobs
        return bool(self.env.faults["api"].held) and any(
            (job := jobs.get(job_id)) is not None and job.version > version
            for job_id, version in self.frozen_creates.items()
        )

    @precondition(lambda self: self._frozen_create_behind())
    @rule()
    def frozen_create_lands(self) -> None:
        """The frozen first try of a create wakes, after its client's retry made the job and the job
        moved on, and its job's write lands: the create's condition must refuse it."""
        self._begin("api: a create's frozen first try wakes, and its job's write lands")
        status = self.env.faults["api"].land_held()
        self.frozen_creates.clear()
        self._note(f"  → HTTP {status}", f"frozen create's write answered {status}")

    # --- a tick's claim or reclaim meets a user ----------------------------------------------------

    def _tick_takes(self) -> bool:
        """A tick now would claim a job from its run row, or reclaim a running attempt whose lease
        ran out: the writes conditional on the row (and the revision) the tick read."""
        now = self.clock.now_ms()
        snap = self._snapshot()
        horizon = now + c.DISPATCH_HORIZON_SECONDS * SECOND
        for job_id, rows in snap.index.items():
            job = snap.jobs.get(job_id)
            for row in rows:
                if row.is_alert or row.ahead_token is not None or job is None:
                    continue
                if row.is_lease and job.status is JobStatus.RUNNING and (row.expires_at or now) < now:
                    return True
                if not row.is_lease and row.due_at <= horizon:
                    return True
        return False

    @precondition(lambda self: self._tick_takes())
    @rule(data=st.data())
    def tick_meets(self, data: st.DataObject) -> None:
        """A tick claims or reclaims a job, and a user's call on that job lands between the tick's
        read and its write."""
        self.tick(None, data.draw(st.sampled_from(TICK_MEETS), "race"))

    # --- a user's call meets the settle of the attempt it read --------------------------------------

    def _settling(self) -> list[Attempt]:
        """Running attempts whose job is still theirs: their settle lands."""
        jobs = self._snapshot().jobs
        return [
            attempt
            for attempt in self.attempts
            if attempt.state == "running"
            and (job := jobs.get(attempt.job.id)) is not None
            and job.status is JobStatus.RUNNING
            and job.token == attempt.token
        ]

    @precondition(lambda self: bool(self._settling()))
    @rule(data=st.data())
    def settle_meets(self, data: st.DataObject) -> None:
        """A user's call decided on a running attempt (a cancel or pause that only sets its flag, a
        trigger that waits behind it) writes after that attempt settled."""
        found = self._settling()
        attempt = found[data.draw(st.integers(0, len(found) - 1), "attempt")]
        action = data.draw(st.sampled_from(SETTLE_MEETS), "action")
        self._user_action(attempt.job.id, action, None, SETTLES)

    # --- a zombie settles after its successor started ------------------------------------------------

    def _zombies(self) -> list[Attempt]:
        """Running attempts whose job moved on to another token: their worker has not heard."""
        jobs = self._snapshot().jobs
        return [
            attempt
            for attempt in self.attempts
            if attempt.state == "running"
            and (job := jobs.get(attempt.job.id)) is not None
            and job.token != attempt.token
        ]

    def _zombie_ends(self, end: str | None) -> None:
        """The end of a start (or a step) that left a zombie beside its successor (see ZOMBIE_ENDS)."""
        zombies = self._zombies()
        if end is None or not zombies:
            return
        zombie = zombies[-1]
        successors = [a for a in self._settling() if a.job.id == zombie.job.id]
        if end == SUCCESSOR_CALLED and successors and successors[0].effect is None:
            self._begin(f"target call {successors[0]}")
            self._target_call(successors[0])
        self._settle_attempt(zombie)
        self.env.seen[f"start: a zombie, then {end}"] += 1

    @precondition(lambda self: bool(self._settling()))
    @rule(data=st.data())
    def outlives_its_lease(self, data: st.DataObject) -> None:
        """A running attempt's worker stalls past its lease: the tick reclaims it, its retry (or the
        next occurrence) starts, and the stalled attempt, a zombie now, ends as a start's zombie does."""
        found = self._settling()
        attempt = found[data.draw(st.integers(0, len(found) - 1), "attempt")]
        self._begin(f"{attempt}'s worker stalls past its lease")
        self.clock.set(max(self.clock.now_ms(), (attempt.job.lease_until or 0) + 1))
        self.tick()
        successor = [sent for sent in self.bag if sent.message.job_id == attempt.job.id]
        if successor:
            self._begin(f"deliver {successor[-1]} on time, beside a zombie")
            self.bag.remove(successor[-1])
            self._fence(successor[-1], late=False, keep=False)
            self._zombie_ends(data.draw(st.sampled_from(ZOMBIE_ENDS), "zombie"))

    @precondition(lambda self: bool(self._zombies()))
    @rule(data=st.data())
    def zombie_settles(self, data: st.DataObject) -> None:
        """An attempt whose lease was reclaimed settles: its settle must change nothing."""
        found = self._zombies()
        attempt = found[data.draw(st.integers(0, len(found) - 1), "attempt")]
        self._settle_attempt(attempt)
