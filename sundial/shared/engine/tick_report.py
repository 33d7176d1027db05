"""What one tick did, counted by every part of it: the claims, the sends and the hand-off to
claimers, each on its own threads."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from sundial.shared import tracing
from sundial.shared.dispatch import JobMessage

# How many sent messages a report names (an X-Ray annotation is a bounded string).
NOTED_SENDS = 20


@dataclass
class TickReport:
    rows_read: int = 0
    claimed: int = 0
    resent: int = 0  # queued jobs whose lease ran out: their message sent again, same token
    reclaimed: int = 0  # running jobs whose worker vanished
    dispatched: int = 0
    sent_ahead: int = 0  # messages of ahead rows, sent without a write
    send_failures: int = 0
    unsent: int = 0  # messages left at the deadline: released, or their shard's mark held
    lost_races: int = 0
    errors: int = 0  # AWS errors after the SDK's own retries: the job stays due for the next tick
    caught_up: int = 0  # missed occurrences moved by their misfire policy
    missed: int = 0  # instants its writes passed over for a reason nobody chose (misfire, overlap)
    dead: int = 0
    alerts_sent: int = 0  # owed dead-job alerts the tick sent
    routes_handed_on: int = 0  # owed alerts of jobs' own routes handed to a worker to send
    oldest_lateness_ms: int = 0
    out_of_time: bool = False
    unread_shards: int = 0
    claimers: int = 0  # shares of the shards handed to parallel claimers
    dead_jobs: list[str] = field(default_factory=list)
    # The first messages sent, for the tick's X-Ray segment: their jobs, and the traces they carry.
    sent_jobs: list[str] = field(default_factory=list)
    sent_traces: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Claims and sends run in pools: counting must not lose an update. Not a field, so that the
        # fields alone are what the tick logs and what its readers sum.
        self._lock = threading.Lock()

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def note_dead(self, job_id: str) -> None:
        with self._lock:
            self.dead_jobs.append(job_id)

    def note_sent(self, messages: Iterable[JobMessage]) -> None:
        with self._lock:
            for message in messages:
                if len(self.sent_jobs) >= NOTED_SENDS:
                    return
                self.sent_jobs.append(message.job_id)
                trace_id = tracing.trace_id_of(message.traceparent)
                if trace_id is not None:
                    self.sent_traces.append(trace_id)
