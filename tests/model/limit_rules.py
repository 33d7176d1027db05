"""Steps of the model for limits per key, mixed into EngineMachine, with the invariants that hold the
engine to them (docs/design.md, "Limits per key"):

- no more attempts hold a key's slots at once than its limit allows: counted from the jobs (RUNNING,
  a lease not yet ended, a slot of the key), never from the shard the engine decides on;
- a slot is a lease: every holder whose lease has not ended is a running attempt with that very
  lease (or a settled one whose worker died before the slot's own return), and every running
  attempt with a slot and a live lease is its shard's holder;
- a hold uses no attempt and fails nothing, and happens only when the key is full;
- a held-back occurrence, once it starts, is not started again while that attempt stands;
- starts under a rate keep to it: no more start in any span than its burst and its rate allow.

The steps PUT, change and DELETE a key's limit, PATCH a job's key, and stand in the windows a slot
guards: a worker that vanishes holding a slot (its lease then runs out and another job of its key
arrives), and a delivery that meets its key at its limit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from sundial.contract.jobs import JobUpdate
from sundial.contract.limits import LimitPut
from sundial.contract.vocabulary import JobStatus
from sundial.shared.engine.gate import LIMITED_MEMORY_MS, HeldBack
from sundial.shared.errors import LimitNotFound
from sundial.shared.limits import rank_of
from sundial.shared.models import Job
from sundial.shared.store.limit_shards import parse_slot
from tests.model.checks import Snapshot, short

if TYPE_CHECKING:
    from tests.model.boundary import Sent
    from tests.model.intents import Intent
    from tests.model.test_engine_machine import Attempt

SECOND = 1000
KEYS = ["k1", "k2"]
keys = st.sampled_from(KEYS)
# Small limits, so that two or three jobs fill them: a slot or two, a rate with its burst, or both.
LIMITS: dict[str, dict[str, Any]] = {
    "max 1": {"max_concurrent": 1},
    "max 2": {"max_concurrent": 2},
    "1/s burst 1": {"per_second": 1, "burst": 1},
    "2/s burst 2": {"per_second": 2, "burst": 2},
    "1/s burst 2": {"per_second": 1, "burst": 2},
    "max 1, 1/s burst 2": {"max_concurrent": 1, "per_second": 1, "burst": 2},
}
# A start with job A's attempt holding its key's only slot (or its only token), and job B of the same
# key held back behind it: the windows where a second start, a slot kept past its lease, or one not
# given back shows.
AT_ITS_LIMIT = "at its key's limit, another held back"
AT_ITS_RATE = "at its key's rate, another held back"
# Two starts take a burst of two, and a third job's occurrence is held back with the token it booked:
# its message comes back for the booking's window, where deliveries on time, late and twice meet it.
BOOKED = "at its key's burst, another booked its start"
# Then A's worker vanishes, the clock passes A's lease, and B arrives again: A's slot must be free.
HOLDER_GONE = "at its key's limit, its holder gone past its lease"
LIMIT_STARTS = {
    AT_ITS_LIMIT: "max 1",
    AT_ITS_RATE: "1/s burst 1",
    HOLDER_GONE: "max 1",
    BOOKED: "1/s burst 2",
}
# Slack for the bucket's arithmetic in floats.
EPSILON = 1e-6


@dataclass
class LimitsSeen:
    """What the user was told about limits, and what the model saw start and wait under them."""

    in_force: dict[str, LimitPut] = field(default_factory=dict)  # key → its acknowledged limit
    epochs: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # a key's PUTs and DELETEs
    # (job, token, attempt) → the key's max_concurrent when that attempt fenced with a slot
    bounds: dict[tuple[str, str | None, int], int] = field(default_factory=dict)
    # key → (its epoch, start time) of the attempts that took a token
    rate_starts: dict[str, list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    # an occurrence held back → the model's attempt count then: later attempts are its starts
    held: dict[tuple[str, int], int] = field(default_factory=dict)
    # key → when its limit was deleted
    dropped_at: dict[str, int] = field(default_factory=dict)


class LimitSteps:
    """Rules and invariants of EngineMachine for limits per key (see the module docstring)."""

    # Provided by EngineMachine.
    clock: Any
    env: Any
    step: int
    labels: dict[str, str]
    intents: dict[str, Intent]
    attempts: list[Attempt]
    bag: list[Sent]
    checker: Any
    limit_service: Any
    service: Any
    _snapshot: Any
    _call: Any
    _job: Any
    _labelled: Any
    _violation: Any
    slots_left: set[tuple[str, int]]
    _note: Any
    _begin: Any
    _fence: Any
    _abandon: Any
    create: Any
    crash: Any
    deliver: Any
    advance: Any
    tick: Any
    _a_message: Any

    @property
    def _limits(self) -> LimitsSeen:
        found: LimitsSeen = self.__dict__.setdefault("_limits_seen", LimitsSeen())
        return found

    # --- the API ------------------------------------------------------------------------------------

    @rule(key=keys, limit=st.sampled_from(list(LIMITS)))
    def put_limit(self, key: str, limit: str) -> None:
        """PUT /limits/{key}: a new limit, or a change of one (lowered while attempts run, too)."""
        self._begin(f"api PUT /limits/{key} {limit}")
        request = LimitPut.model_validate(LIMITS[limit])
        view = self.limit_service.put(key, request)
        self._limits.in_force[key] = request
        self._limits.epochs[key] += 1
        self._note(f"  → running {view.running}, waiting {view.waiting}", "limit put")

    @precondition(lambda self: bool(self._limits.in_force))
    @rule(key=keys)
    def drop_limit(self, key: str) -> None:
        """DELETE /limits/{key}: its jobs run unlimited; what still runs gives its slot back."""
        self._begin(f"api DELETE /limits/{key}")
        try:
            self.limit_service.delete(key)
        except LimitNotFound:
            self._note("  → refused: no such limit", "limit delete refused")
            if key in self._limits.in_force:
                self._violation(f"DELETE /limits/{key} said there is no limit, yet one was put")
            return
        self._note("  → deleted", "limit deleted")
        if key not in self._limits.in_force:
            self._violation(f"DELETE /limits/{key} deleted a limit that was never put, or was deleted")
        self._limits.in_force.pop(key, None)
        self._limits.epochs[key] += 1
        self._limits.dropped_at[key] = self.clock.now_ms()

    @precondition(lambda self: bool(self.labels))
    @rule(job=st.sampled_from("ABC"), key=st.sampled_from(["k1", None, "k2"]))
    def rekey(self, job: str, key: str | None) -> None:
        """PATCH /jobs/{id} {"limit_key": ...}: the next fence takes the new key's slot; a running
        attempt keeps (and gives back) the one it took."""
        job_id = self._labelled(job)
        if job_id is None:
            return
        fields = JobUpdate.model_validate({"limit_key": key})
        self._call(f"PATCH limit_key {key}", job_id, lambda _: self.service.update(job_id, fields), None)

    # --- the starts and windows --------------------------------------------------------------------

    def _start_at_limit(self, how: str, kind: str, behaviour: str, max_retries: int, overlap: str) -> bool:
        """Job A's attempt takes its key's only slot (or token), and job B of the same key arrives and
        is held back behind it; False for the starts that are not about limits."""
        limit = LIMIT_STARTS.get(how)
        if limit is None:
            return False
        self.put_limit("k1", limit)
        self.create("A", kind, behaviour, max_retries, (5,), "high", "run_once", overlap, limit_key="k1")
        if not self._a_message():
            self.advance("next due")
            self.tick()
        self.deliver("A")
        if how == BOOKED:
            self.create("C", "one-off now", "ok", 0, (5,), "medium", "run_once", "skip", limit_key="k1")
            self.deliver("C")
        self.create("B", "one-off now", "ok", 0, (5,), "low", "run_once", "skip", limit_key="k1")
        self.deliver("B")
        holder = self._job(self.labels["A"])
        if how == HOLDER_GONE and holder is not None and holder.status is JobStatus.RUNNING:
            self.crash("A")
            self.clock.set(max(self.clock.now_ms(), (holder.lease_until or 0) + 1))
            self.deliver("B")
        return True

    def _live_slots(self, jobs: list[Job], key: str, now: int, other_than: str | None = None) -> list[Job]:
        """The attempts that hold one of the key's slots now, as the jobs say."""
        return [
            job
            for job in jobs
            if job.status is JobStatus.RUNNING
            and job.limit_slot is not None
            and parse_slot(job.limit_slot)[0] == key
            and (job.lease_until or 0) >= now
            and job.id != other_than
        ]

    def _vanishing(self) -> list[tuple[Attempt, Sent]]:
        """Running attempts that hold a live slot, with a message of another job of their key waiting."""
        snap = self._snapshot()
        found = []
        for attempt in self.attempts:
            job = snap.jobs.get(attempt.job.id)
            if attempt.state != "running" or job is None or job.token != attempt.token:
                continue
            if job.status is not JobStatus.RUNNING or job.limit_slot is None:
                continue
            key = parse_slot(job.limit_slot)[0]
            waiting = [
                sent
                for sent in self.bag
                if sent.message.job_id != job.id
                and (other := snap.jobs.get(sent.message.job_id)) is not None
                and other.limit_key == key
            ]
            if waiting:
                found.append((attempt, waiting[-1]))
        return found

    @precondition(lambda self: bool(self._vanishing()))
    @rule(data=st.data())
    def holder_vanishes(self, data: st.DataObject) -> None:
        """A worker vanishes holding its key's slot (no settle, no heartbeat); its lease runs out, and
        another job of the key arrives: the slot must have come back with the lease."""
        found = self._vanishing()
        attempt, sent = found[data.draw(st.integers(0, len(found) - 1), "attempt")]
        job = self._job(attempt.job.id)
        self._begin(f"{attempt}'s worker vanishes holding its slot; its lease runs out")
        self._abandon(attempt, "crashed")
        if job is not None:
            self.clock.set(max(self.clock.now_ms(), (job.lease_until or 0) + 1))
        self._begin(f"deliver {sent} on time, past the vanished holder's lease")
        if sent in self.bag:
            self.bag.remove(sent)
            self._fence(sent, late=False, keep=False)

    def _meeting_limit(self) -> list[Sent]:
        """Messages due now for a job whose key has all its slots taken."""
        snap, now = self._snapshot(), self.clock.now_ms()
        jobs = list(snap.jobs.values())
        found = []
        for sent in self.bag:
            job = snap.jobs.get(sent.message.job_id)
            limit = self._limits.in_force.get(job.limit_key or "") if job is not None else None
            if (
                job is None
                or limit is None
                or limit.max_concurrent is None
                or sent.message.starts_after > now
            ):
                continue
            if len(self._live_slots(jobs, job.limit_key or "", now, job.id)) >= limit.max_concurrent:
                found.append(sent)
        return found

    @precondition(lambda self: bool(self._meeting_limit()))
    @rule(data=st.data())
    def meets_its_limit(self, data: st.DataObject) -> None:
        """A delivery whose key has every slot taken: it must be held back, its attempt unused."""
        found = self._meeting_limit()
        sent = found[data.draw(st.integers(0, len(found) - 1), "message")]
        self._begin(f"deliver {sent} on time, its key at its limit")
        self.bag.remove(sent)
        self._fence(sent, late=False, keep=False)

    # --- checks at a fence and at a hold -----------------------------------------------------------

    def _limit_started(self, attempt: Attempt, before: Job | None) -> None:
        """An attempt started: within its key's limit, with a slot when the key limits concurrency,
        and not a second start of a held-back occurrence whose earlier attempt still stands."""
        job, seen = attempt.job, self._limits
        key = job.limit_key
        limit = seen.in_force.get(key) if key is not None else None
        found = []
        if job.limit_slot is not None:
            if key is None or parse_slot(job.limit_slot)[0] != key:
                found.append(f"{attempt} took slot {job.limit_slot}, yet names key {key}")
            if limit is None or limit.max_concurrent is None:
                found.append(f"{attempt} took slot {job.limit_slot} of a key with no concurrency limit")
        elif limit is not None and limit.max_concurrent is not None:
            found.append(f"{attempt} started without a slot of {key}, limited to {limit.max_concurrent}")
        if key is not None and limit is not None and limit.max_concurrent is not None:
            seen.bounds[(job.id, job.token, job.attempt)] = limit.max_concurrent
            now = self.clock.now_ms()
            jobs = [j for job_id in set(self.labels.values()) if (j := self._job(job_id)) is not None]
            holding = self._live_slots(jobs, key, now)
            if len(holding) > limit.max_concurrent:
                found.append(
                    f"{attempt} started: {len(holding)} attempts of {key} run at once "
                    f"({', '.join(short(j.id) for j in holding)}), its limit {limit.max_concurrent}"
                )
        if key is not None and limit is not None and limit.per_second is not None:
            found += self._within_rate(attempt, key, limit)
        booking = attempt.sent.message.booking
        if booking is not None:
            within = booking.opens_at <= self.clock.now_ms() <= booking.closes_at
            self.env.seen[f"a booked occurrence started, {'in' if within else 'out of'} its window"] += 1
        found += self._held_runs_once(attempt, before)
        self._violation(*found)

    def _within_rate(self, attempt: Attempt, key: str, limit: LimitPut) -> list[str]:
        """No more starts in any span since the key's limit was put than its burst and rate allow."""
        epoch, started = self._limits.epochs[key], attempt.job.started_at or self.clock.now_ms()
        starts = self._limits.rate_starts[key]
        starts.append((epoch, started))
        mine = sorted(t for e, t in starts if e == epoch)
        rate, burst = limit.per_second or 0.0, limit.effective_burst
        for i, since in enumerate(mine):
            count = sum(1 for t in mine[i:] if t <= started)
            allowed = burst + rate * max(0, started - since) / SECOND
            if count > allowed + EPSILON:
                return [
                    f"{attempt} started: {count} starts of {key} in {(started - since) / SECOND:g}s, "
                    f"its rate {rate}/s with a burst of {burst} allows {allowed:g}"
                ]
        return []

    def _held_runs_once(self, attempt: Attempt, before: Job | None) -> list[str]:
        occurrence = attempt.occurrence
        held_at = self._limits.held.get(occurrence)
        if held_at is None:
            return []
        self.env.seen["a held-back occurrence started"] += 1
        earlier = [a for a in self.attempts[held_at:] if a.occurrence == occurrence and a is not attempt]
        found = []
        for other in earlier:
            runs = (
                other.state == "running"
                and before is not None
                and before.status is JobStatus.RUNNING
                and before.token == other.token
            )
            if runs:
                found.append(
                    f"{attempt}: held-back occurrence {occurrence[1]} started again while {other} ran"
                )
            intent = self.intents[occurrence[0]]
            rerun = occurrence[1] in intent.patched_run_at or occurrence[1] in intent.triggered_at
            if other.kept and other.effect and not rerun:
                found.append(
                    f"{attempt}: held-back occurrence {occurrence[1]} started again after {other} succeeded"
                )
        return found

    def _limit_held(self, held: HeldBack, before: Job | None, now: int, faulted: bool) -> None:
        """A hold: the occurrence stays queued, its attempt count and failures as they were, its place
        kept; and the key was full, unless a fault got in the way."""
        message = held.message
        after = self._job(message.job_id)
        if after is None:
            return
        self._limits.held.setdefault((after.id, after.scheduled_at or 0), len(self.attempts))
        found = []
        if before is not None:
            failed = after.status in (JobStatus.FAILED, JobStatus.DEAD) and after.status is not before.status
            last = (before.last_run.scheduled_at, before.last_run.attempt) if before.last_run else None
            now_last = (after.last_run.scheduled_at, after.last_run.attempt) if after.last_run else None
            if (
                after.attempt != before.attempt
                or failed
                or after.consecutive_failures != before.consecutive_failures
            ):
                found.append(
                    f"{short(after.id)}: the hold moved its attempt {before.attempt} → {after.attempt}, "
                    f"{before.status.value} → {after.status.value}, failures {before.consecutive_failures} → "
                    f"{after.consecutive_failures}"
                )
            if now_last != last:
                found.append(f"{short(after.id)}: the hold recorded a run ({last} → {now_last})")
        key = message.limit_key
        limit = self._limits.in_force.get(key) if key is not None else None
        # A worker whose read of the key's shard was refused holds the job without it when it saw the
        # key limited within a minute: a limit deleted since costs that job one hold, no more.
        dropped_at = self._limits.dropped_at.get(key or "")
        refused_read = faulted and dropped_at is not None and now - dropped_at <= LIMITED_MEMORY_MS
        if limit is None and not refused_read:
            found.append(f"{short(after.id)} was held back by {key}, which has no limit")
        elif not faulted and limit.per_second is None and limit.max_concurrent is not None:
            found += self._needless(
                message.job_id,
                key or "",
                limit.max_concurrent,
                rank_of(message.priority, message.due_at, message.job_id),
                now,
            )
        self._violation(*found)

    def _needless(self, job_id: str, key: str, max_concurrent: int, rank: str, now: int) -> list[str]:
        """A hold with a slot free and no better-ranked occurrence waiting for it. A slot a worker died
        holding, between its settle and the slot's return, is not free until its lease ends."""
        jobs = [j for other in set(self.labels.values()) if (j := self._job(other)) is not None]
        holding = self._live_slots(jobs, key, now, job_id)
        unreturned = [
            holder
            for slot, shard in self._snapshot().slots.items()
            if parse_slot(slot)[0] == key
            for holder, end in shard.holders.items()
            if end >= now and (holder, end) in self.slots_left and holder != job_id
        ]
        shard = self.checker.limit_shard(key, 0)
        ahead = [
            other
            for other, waiter in shard.state.waiters.items()
            if other != job_id and waiter.until >= now and waiter.rank < rank
        ]
        if max_concurrent - len(holding) - len(unreturned) <= len(ahead):
            return []
        return [
            f"{short(job_id)} was held back by {key} (limit {max_concurrent}) with {len(holding)} running "
            f"({', '.join(short(j.id) for j in holding) or 'none'}), {len(unreturned)} left unreturned "
            f"and {len(ahead)} waiting ahead"
        ]

    # --- the invariants, after every step -----------------------------------------------------------

    @invariant()
    def slots_within_limits(self) -> None:
        """No more attempts of a key run with a live lease than its limit. A limit lowered while they
        run binds only the attempts that fence after it: the bound is the largest limit in force at
        any of their fences (each fence is also checked against the limit in force at it)."""
        snap, now = self._snapshot(), self.clock.now_ms()
        found = []
        for key in {parse_slot(job.limit_slot)[0] for job in snap.jobs.values() if job.limit_slot}:
            holding = self._live_slots(list(snap.jobs.values()), key, now)
            bounds = [self._limits.bounds.get((job.id, job.token, job.attempt)) for job in holding]
            known = [bound for bound in bounds if bound is not None]
            if known and len(holding) > max(known):
                found.append(
                    f"{len(holding)} attempts of {key} run at once "
                    f"({', '.join(short(job.id) for job in holding)}); the limits at their fences: {bounds}"
                )
        self._violation(*found)

    @invariant()
    def slots_are_leases(self) -> None:
        """No slot held past its lease, none held by an attempt no longer running, and no running
        attempt with a live lease missing from its shard."""
        self._violation(*slot_leases(self._snapshot(), self.clock.now_ms(), self.slots_left))


def slot_leases(snap: Snapshot, now: int, left: set[tuple[str, int]]) -> list[str]:
    """`left`: the holders of workers that died between a settle and the slot's return."""
    found = []
    for slot, shard in snap.slots.items():
        for job_id, end in shard.holders.items():
            if end < now or (job_id, end) in left:
                continue  # its lease ended, or ends unreturned: the slot counts for nothing after
            job = snap.jobs.get(job_id)
            if (
                job is None
                or job.status is not JobStatus.RUNNING
                or job.limit_slot != slot
                or job.lease_until != end
            ):
                state = (
                    "gone"
                    if job is None
                    else f"{job.status.value}, lease {job.lease_until}, slot {job.limit_slot}"
                )
                found.append(f"{short(job_id)} holds slot {slot} until {end} (now {now}), yet is {state}")
    for job in snap.jobs.values():
        if job.status is not JobStatus.RUNNING or job.limit_slot is None or (job.lease_until or 0) < now:
            continue
        shard_of = snap.slots.get(job.limit_slot)
        holds_until = shard_of.holders.get(job.id) if shard_of is not None else None
        if holds_until != job.lease_until:
            found.append(
                f"{short(job.id)} runs on slot {job.limit_slot} until {job.lease_until}, "
                f"yet its shard holds it until {holds_until}"
            )
    return found
