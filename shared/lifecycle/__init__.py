"""The job's state machine: the transition table, the decisions that pick a row's end state, and the
lease arithmetic. Pure: no I/O, `now` passed in."""

from shared.lifecycle.decide import (
    Placement,
    after_failure,
    after_lost,
    after_success,
    catch_up,
    caught_up,
    is_dead,
    next_occurrence,
    on_cancel,
    on_pause,
    on_resume,
    on_retry,
    on_trigger,
    replaces_occurrence,
    timing_change_refusal,
)
from shared.lifecycle.leases import (
    ahead_lease,
    lease_seconds,
    needs_renewal,
    queued_lease,
    resend_lease,
    running_lease,
    shortest_running_lease,
)
from shared.lifecycle.table import TRANSITIONS, Event, Guard, Transition

__all__ = [
    "TRANSITIONS",
    "Event",
    "Guard",
    "Placement",
    "Transition",
    "after_failure",
    "after_lost",
    "after_success",
    "ahead_lease",
    "catch_up",
    "caught_up",
    "is_dead",
    "lease_seconds",
    "needs_renewal",
    "next_occurrence",
    "on_cancel",
    "on_pause",
    "on_resume",
    "on_retry",
    "on_trigger",
    "queued_lease",
    "replaces_occurrence",
    "resend_lease",
    "running_lease",
    "shortest_running_lease",
    "timing_change_refusal",
]
