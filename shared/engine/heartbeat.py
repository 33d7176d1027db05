"""Keeps a running job's lease ahead of the clock, and notices when the lease was lost."""

from __future__ import annotations

import threading
from types import TracebackType

from shared import constants as c
from shared.clock import Clock
from shared.errors import StaleDelivery
from shared.lifecycle import lease_seconds
from shared.models import Job
from shared.store import JobStore

SECOND_MS = 1000


def needs_extension(lease_until: int | None, now_ms: int, timeout_seconds: int) -> bool:
    """True when less than a full lease minus one heartbeat period is left."""
    if lease_until is None:
        return True
    wanted = (lease_seconds(timeout_seconds) - c.HEARTBEAT_EVERY_SECONDS) * SECOND_MS
    return lease_until - now_ms < wanted


class Heartbeat:
    """A background thread renewing the lease while the target runs (invariant 5)."""

    def __init__(self, store: JobStore, job: Job, token: str, clock: Clock, every_seconds: float) -> None:
        self._store = store
        self._job = job
        self._token = token
        self._clock = clock
        self._every = every_seconds
        self._lease_until = job.lease_until
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{job.id}", daemon=True)
        self.lost = False

    def __enter__(self) -> Heartbeat:
        self.beat()  # a late delivery may have eaten the lease the claim set
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def beat(self) -> None:
        now_ms = self._clock.now_ms()
        if self.lost or not needs_extension(self._lease_until, now_ms, self._job.retry.timeout_seconds):
            return
        lease_until = now_ms + lease_seconds(self._job.retry.timeout_seconds) * SECOND_MS
        try:
            self._store.heartbeat(self._job.id, self._token, lease_until, now_ms)
        except StaleDelivery:
            self.lost = True
            return
        self._lease_until = lease_until

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            self.beat()
