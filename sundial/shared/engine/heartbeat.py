"""Keeps a running job's lease ahead of the clock, and notices when the lease was really lost."""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from botocore.exceptions import BotoCoreError, ClientError

from sundial.shared import lifecycle
from sundial.shared.engine.context import EngineContext
from sundial.shared.errors import LimitChanged, StaleDelivery
from sundial.shared.models import Job

logger = logging.getLogger(__name__)
# After an AWS error the next beat comes this much sooner than a regular one.
RETRY_AFTER_ERROR_SECONDS = 2.0
# The latest leases whose beat failed that a slot's return still recognises as its own.
UNSURE_KEPT = 20


class Heartbeat:
    """A background thread renewing the lease while the target runs (invariant 5).

    A throttle or any other AWS error is retried on the next, earlier beat; the lease counts as lost
    only when a write says another token holds the job. Settling is conditional on the token, so a
    lease that merely ran out on our clock is still ours to settle unless the tick took it.
    """

    def __init__(self, engine: EngineContext, job: Job, token: str, every_seconds: float) -> None:
        self._store = engine.store
        self._job = job
        self._token = token
        self._clock = engine.clock
        self._every = every_seconds
        self._lease_until = job.lease_until
        # Leases a beat tried to write and got an error for: the write may have been made all the
        # same (its answer lost, or the read after it refused), holder and all.
        self._unsure: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{job.id}", daemon=True)
        self.lost = False

    @property
    def lease_until(self) -> int | None:
        """The attempt's lease as this heartbeat last wrote it (the fence's until the first beat)."""
        return self._lease_until

    @property
    def holder_ends(self) -> tuple[int, ...]:
        """The leases the attempt's slot may end at: `lease_until`, and the later ones a beat that
        answered with an error may have written all the same."""
        known = self._lease_until
        unsure = tuple(lease for lease in self._unsure if lease > (known or 0))
        return unsure if known is None else (known, *unsure)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def beat(self) -> bool:
        """Renews the lease when it runs short. Returns False after an AWS error (retry soon)."""
        now_ms = self._clock.now_ms()
        timeout = self._job.retry.timeout_seconds
        if self.lost or not lifecycle.needs_renewal(self._lease_until, now_ms, timeout):
            return True
        lease_until = lifecycle.running_lease(now_ms, timeout)
        try:
            self._store.heartbeat(self._job.id, self._token, lease_until, now_ms, self._job.limit_slot)
        except (StaleDelivery, LimitChanged):
            self.lost = True
            return True
        except (ClientError, BotoCoreError):
            logger.warning("heartbeat of job %s failed; trying again", self._job.id, exc_info=True)
            self._unsure = [*self._unsure, lease_until][-UNSURE_KEPT:]
            return False
        self._lease_until = lease_until
        return True

    def _loop(self) -> None:
        wait = self._every
        while not self._stop.wait(wait):
            try:
                beaten = self.beat()
            except Exception:
                # A thread that died here would leave the lease to lapse unseen while the call runs.
                logger.exception("heartbeat of job %s failed unexpectedly; trying again", self._job.id)
                beaten = False
            wait = self._every if beaten else min(self._every, RETRY_AFTER_ERROR_SECONDS)
