"""Lease arithmetic, in one place: how long a claim, a fence, a heartbeat and a re-send hold a job.

A lease is the instant after which the tick may act on an in-flight job. It must cover what it
guards: a queued job's wait in its queue, a running attempt until its next heartbeat.
"""

from __future__ import annotations

from sundial.shared import constants as c

SECOND_MS = 1000
# A re-sent message's lease doubles each time, so a long backlog costs a few re-sends per job, not
# one per lease period; the cap keeps a truly lost message from waiting longer than this.
MAX_RESEND_DOUBLINGS = 2


def lease_seconds(timeout_seconds: int) -> int:
    """How long a running attempt holds its job between heartbeats (long jobs heartbeat)."""
    return min(timeout_seconds, c.LEASE_CHUNK_SECONDS) + c.LEASE_MARGIN_SECONDS


def queued_lease(due_at: int, now_ms: int, timeout_seconds: int = c.LEASE_CHUNK_SECONDS) -> int:
    """A queued job's lease: its due time plus a running lease, so it covers the attempt's start.

    A writer that knows the job uses its timeout (a crash is noticed sooner for short jobs); the
    tick's claim reads only the index row, which carries no timeout, and uses the longest chunk.
    A lease too short for a backlog costs a resend with the same token, never a second run.
    """
    return max(due_at, now_ms) + lease_seconds(timeout_seconds) * SECOND_MS


def ahead_lease(due_at: int) -> int:
    """The lease of a job waiting with its token: its message may leave without a write, so the lease
    is implied by the due time alone, as long as a claim's."""
    return due_at + lease_seconds(c.LEASE_CHUNK_SECONDS) * SECOND_MS


def resend_lease(now_ms: int, resent: int) -> int:
    """The lease of a queued job whose message is sent again, after `resent` earlier re-sends."""
    doublings = min(resent, MAX_RESEND_DOUBLINGS)
    return now_ms + lease_seconds(c.LEASE_CHUNK_SECONDS) * SECOND_MS * (1 << doublings)


def running_lease(now_ms: int, timeout_seconds: int) -> int:
    """The lease a fence or a heartbeat writes for a running attempt."""
    return now_ms + lease_seconds(timeout_seconds) * SECOND_MS


def shortest_running_lease(now_ms: int, timeout_seconds: int) -> int:
    """A running attempt's lease must last at least until this; less and it is renewed.

    One heartbeat period short of a full lease, so a fence on time never rewrites the claim's lease
    and a heartbeat renews once a period.
    """
    return now_ms + (lease_seconds(timeout_seconds) - c.HEARTBEAT_EVERY_SECONDS) * SECOND_MS


def needs_renewal(lease_until: int | None, now_ms: int, timeout_seconds: int) -> bool:
    return lease_until is None or lease_until < shortest_running_lease(now_ms, timeout_seconds)
