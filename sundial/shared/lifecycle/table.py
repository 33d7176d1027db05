"""The state machine as one table: for each event, the statuses it may start from, what its write
is conditional on, the statuses it may end in, what happens to the due index and what is sent.

The store builds every job write's condition from its row and refuses an end status the row does not
list, so nothing outside this table can decide a transition. docs/design.md shows the same table,
and a test checks the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sundial.contract.vocabulary import JobStatus

P, Q, R = JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING
S, F, D, X = JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.DEAD, JobStatus.CANCELLED
ANY_BUT_CANCELLED = frozenset({P, Q, R, S, F, D})
ANY_BUT_RUNNING = frozenset({P, Q, S, F, D, X})


class Event(StrEnum):
    CREATE = "create"
    CLAIM = "claim"
    CATCH_UP = "catch_up"
    RESEND = "resend"
    RELEASE = "release"
    RECLAIM = "reclaim"
    FENCE = "fence"
    HOLD = "hold"
    HEARTBEAT = "heartbeat"
    SUCCEED = "succeed"
    FAIL = "fail"
    CANCEL = "cancel"
    PAUSE = "pause"
    RESUME = "resume"
    TRIGGER = "trigger"
    RETRY = "retry"
    UPDATE = "update"
    BACKFILL = "backfill"


class Guard(StrEnum):
    """What a write is conditional on, besides the status it starts from."""

    ABSENT = "absent"  # no item yet
    DUE_UNCHANGED = "due_unchanged"  # the index row is the one the tick read
    LEASE_EXPIRED = "lease_expired"  # the lease is still past, as the tick saw it
    TOKEN = "token"  # the attempt token of the delivery or claim
    REVISION = "revision"  # no user action since the state it was computed from
    VERSION = "version"  # nothing at all changed since it was read


@dataclass(frozen=True)
class Transition:
    event: Event
    actor: str
    sources: frozenset[JobStatus]
    guards: tuple[Guard, ...]
    targets: frozenset[JobStatus]
    index: str
    sends: str


def _row(
    event: Event,
    actor: str,
    sources: set[JobStatus] | frozenset[JobStatus],
    guards: tuple[Guard, ...],
    targets: set[JobStatus],
    index: str,
    sends: str,
) -> Transition:
    return Transition(event, actor, frozenset(sources), guards, frozenset(targets), index, sends)


G = Guard
TRANSITIONS: dict[Event, Transition] = {
    row.event: row
    for row in (
        _row(
            Event.CREATE,
            "api",
            set(),
            (G.ABSENT,),
            {P, Q},
            "run row at the first occurrence; lease row when dispatched",
            "the message, when due soon",
        ),
        _row(
            Event.CLAIM,
            "tick",
            {P, F},
            (G.DUE_UNCHANGED,),
            {Q},
            "lease row at the queued lease",
            "the message (batched)",
        ),
        _row(
            Event.CATCH_UP,
            "tick",
            {Q},
            (G.TOKEN,),
            {Q, P, S},
            "lease row, run row at a later occurrence, or removed",
            "the message, when due soon",
        ),
        _row(
            Event.RESEND,
            "tick",
            {Q},
            (G.TOKEN, G.DUE_UNCHANGED, G.LEASE_EXPIRED),
            {Q},
            "lease row at a doubled lease",
            "the same message again",
        ),
        _row(
            Event.RELEASE,
            "any sender",
            {Q},
            (G.TOKEN,),
            {Q},
            "lease row due now",
            "nothing: the next tick sends it again",
        ),
        _row(
            Event.RECLAIM,
            "tick",
            {R},
            (G.TOKEN, G.REVISION, G.DUE_UNCHANGED, G.LEASE_EXPIRED),
            {Q, F, D, X, P},
            "lease row (retry now), run row at the next occurrence, or removed",
            "the retry's message; a dead job's alerts (and its route's when owed); `lost` history after "
            "the write",
        ),
        _row(
            Event.FENCE,
            "worker",
            {Q, P, F},
            (G.TOKEN,),
            {R},
            "unchanged (an ahead row's implied lease is the lease), or lease row moved when the delivery "
            "came late",
            "nothing",
        ),
        _row(
            Event.HOLD,
            "worker",
            {Q, P, F},
            (G.TOKEN,),
            {Q},
            "lease row moved past the instant the held-back occurrence looks again",
            "its message again, delayed until then",
        ),
        _row(Event.HEARTBEAT, "worker", {R}, (G.TOKEN,), {R}, "lease row moved", "nothing"),
        _row(
            Event.SUCCEED,
            "worker",
            {R},
            (G.TOKEN, G.REVISION),
            {S, P, Q, X},
            "run row at the next occurrence, lease row when dispatched, or removed",
            "the next occurrence's message, when due soon; history after the write",
        ),
        _row(
            Event.FAIL,
            "worker",
            {R},
            (G.TOKEN, G.REVISION),
            {F, Q, D, X, P},
            "run row at the retry or next occurrence, lease row when dispatched, or removed",
            "the retry's message, when due soon; a dead job's alerts (and its route's when owed); "
            "history after the write",
        ),
        _row(
            Event.CANCEL,
            "api",
            ANY_BUT_CANCELLED,
            (G.VERSION,),
            {X},
            "removed; a running attempt only gets the cancel flag and keeps its lease row",
            "nothing; a queued message is dropped at its fence",
        ),
        _row(
            Event.PAUSE,
            "api",
            ANY_BUT_CANCELLED,
            (G.VERSION,),
            {P, F, R, S, D},
            "removed (a running attempt keeps its lease row)",
            "nothing",
        ),
        _row(
            Event.RESUME,
            "api",
            ANY_BUT_CANCELLED,
            (G.VERSION,),
            {P, Q, F, R, S, D},
            "run row at the occurrence the misfire policy picks, lease row when dispatched",
            "the message, when due soon",
        ),
        _row(
            Event.TRIGGER,
            "api",
            ANY_BUT_CANCELLED,
            (G.VERSION,),
            {P, Q, F},
            "run row now, lease row when dispatched; a trigger that must wait (an attempt runs, a triggered "
            "run or a retry is due before it) is only counted",
            "the message (for a counted trigger, the settle that ends what is before it sends it)",
        ),
        _row(
            Event.RETRY,
            "api",
            {D},
            (G.VERSION,),
            {P, Q},
            "run row now, lease row when dispatched",
            "the message",
        ),
        _row(
            Event.BACKFILL,
            "api",
            ANY_BUT_CANCELLED,
            (G.VERSION,),
            {P, Q},
            "run row now at the first backfilled instant, lease row when dispatched; behind what runs or "
            "waits, the instants are only added to those waiting",
            "the message, when the first starts now",
        ),
        _row(
            Event.UPDATE,
            "api",
            ANY_BUT_RUNNING,
            (G.VERSION,),
            {P, Q, F, S, D, X},
            "run row at the new first occurrence when timing changed on an occurrence not yet run",
            "the message, when due soon",
        ),
    )
}
