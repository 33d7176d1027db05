"""The scheduler's tick: claim what is due before the next tick, act on expired leases, send owed
alerts, dispatch.

Index rows are hints (the index is eventually consistent); each write's condition decides. Two ticks
at once are harmless: the loser of every race gets a failed condition and moves on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from botocore.exceptions import BotoCoreError, ClientError

from shared import constants as c
from shared import lifecycle
from shared.clock import Clock
from shared.dispatch import Dispatcher, JobMessage
from shared.engine.settle import send
from shared.errors import StaleDelivery
from shared.models import Job, JobStatus, Run, RunStatus, RunSummary
from shared.store import DueRow, JobStore, new_token

logger = logging.getLogger(__name__)
SECOND_MS = 1000
# Rows claimed together before their messages go to the sender, which sends while the next are claimed.
CLAIM_CHUNK = 4 * c.SEND_BATCH_SIZE
_report_lock = threading.Lock()  # claims run in a pool: counting must not lose an update


@dataclass
class TickReport:
    rows_read: int = 0
    claimed: int = 0
    resent: int = 0  # queued jobs whose lease ran out: their message sent again, same token
    reclaimed: int = 0  # running jobs whose worker vanished
    dispatched: int = 0
    send_failures: int = 0
    lost_races: int = 0
    errors: int = 0  # AWS errors after the SDK's own retries: the job stays due for the next tick
    caught_up: int = 0  # missed occurrences moved by their misfire policy
    dead: int = 0
    alerts_sent: int = 0  # owed dead-job alerts the tick sent
    oldest_lateness_ms: int = 0
    out_of_time: bool = False
    dead_jobs: list[str] = field(default_factory=list)

    def count(self, name: str, n: int = 1) -> None:
        with _report_lock:
            setattr(self, name, getattr(self, name) + n)


class Scheduler:
    def __init__(self, store: JobStore, dispatcher: Dispatcher, clock: Clock, parallelism: int = 8) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._clock = clock
        self._parallelism = parallelism

    def tick(self, deadline_ms: int | None = None) -> TickReport:
        """One pass over every shard, high priority first. Stops claiming at `deadline_ms`; what is
        left stays in the index for the next tick."""
        report = TickReport()
        now_ms = self._clock.now_ms()
        horizon_ms = now_ms + c.DISPATCH_HORIZON_SECONDS * SECOND_MS
        with ThreadPoolExecutor(self._parallelism) as pool, ThreadPoolExecutor(1) as sender:
            sends: list[Future[None]] = []
            for priority in c.PRIORITIES:
                rows = self._due_rows(pool, priority, horizon_ms, report)
                report.rows_read += len(rows)
                report.oldest_lateness_ms = max([report.oldest_lateness_ms, *_lateness(rows, now_ms)])
                for start in range(0, len(rows), CLAIM_CHUNK):
                    if deadline_ms is not None and self._clock.now_ms() >= deadline_ms:
                        report.out_of_time = True
                        break
                    chunk = rows[start : start + CLAIM_CHUNK]
                    taken = pool.map(lambda row: self._take(row, report, deadline_ms), chunk)
                    # One sender thread keeps the order: high's messages leave before medium's.
                    sends.append(sender.submit(self._send, [m for m in taken if m is not None], report))
            for pending in sends:
                pending.result()
        return report

    def _send(self, messages: list[JobMessage], report: TickReport) -> None:
        failed = send(self._store, self._dispatcher, self._clock, messages)
        report.count("dispatched", len(messages) - failed)
        report.count("send_failures", failed)

    def _due_rows(
        self, pool: ThreadPoolExecutor, priority: str, horizon_ms: int, report: TickReport
    ) -> list[DueRow]:
        def read(shard: int) -> list[DueRow]:
            try:
                return list(self._store.due_rows(priority, shard, horizon_ms))
            except (ClientError, BotoCoreError):
                logger.warning("tick skipped shard %s#%s for the next tick", priority, shard, exc_info=True)
                report.count("errors")
                return []

        return [row for shard_rows in pool.map(read, range(c.DUE_SHARDS)) for row in shard_rows]

    def _take(self, row: DueRow, report: TickReport, deadline_ms: int | None) -> JobMessage | None:
        now_ms = self._clock.now_ms()
        if deadline_ms is not None and now_ms >= deadline_ms:
            report.out_of_time = True
            return None
        try:
            if (row.is_lease or row.is_alert) and row.due_at >= now_ms:
                return None
            return self._act(row, now_ms, report)
        except StaleDelivery:
            report.count("lost_races")
            return None
        except (ClientError, BotoCoreError):
            logger.warning("tick left job %s for the next tick", row.job_id, exc_info=True)
            report.count("errors")
            return None

    def _act(self, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        if row.is_alert:
            self._send_owed_alert(row, report)
            return None
        if row.is_lease:
            return self._lease_expired(row, now_ms, report)
        return self._claim(row, now_ms, report)

    def _claim(self, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        job = self._store.claim(row, new_token(), now_ms)
        report.count("claimed")
        return self._caught_up(job, now_ms, report)

    def _caught_up(self, job: Job, now_ms: int, report: TickReport) -> JobMessage | None:
        """A queued occurrence missed by more than the grace is replaced by the one its misfire
        policy runs; anything else goes as it is."""
        placement = lifecycle.caught_up(job, now_ms)
        if placement is None:
            return JobMessage.for_job(job)
        report.count("caught_up")
        next_token = new_token() if placement.dispatches_now(now_ms) else None
        assert job.token is not None
        moved = self._store.catch_up(job, job.token, placement, next_token)
        return JobMessage.for_job(moved) if next_token else None

    def _lease_expired(self, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        job = self._store.get(row.job_id)
        if job.lease_until is None or job.lease_until >= now_ms:
            raise StaleDelivery(f"job '{job.id}' is no longer waiting for a reclaim")
        if job.status is JobStatus.QUEUED:
            report.count("resent")
            return self._caught_up(self._store.resend(job, row.due_key, now_ms), now_ms, report)
        if job.status is not JobStatus.RUNNING:
            raise StaleDelivery(f"job '{job.id}' is no longer in flight")
        return self._reclaim(job, row, now_ms, report)

    def _reclaim(self, job: Job, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        """The worker is gone: its attempt counts as lost, written only after the write that makes
        it true, and the job retries now or ends its occurrence as its policy says."""
        placement = lifecycle.after_lost(job, now_ms)
        run = _lost_run(job, now_ms, RunStatus.DEAD if placement.alert else RunStatus.LOST)
        next_token = new_token() if placement.dispatches_now(now_ms) else None
        reclaimed = self._store.reclaim(job, row.due_key, placement, run, next_token)
        report.count("reclaimed")
        try:
            self._store.put_run(Run.of(job.id, run))
            if placement.alert:
                self._alert(job, run, report)
        except (ClientError, BotoCoreError):
            # The job is settled; an alert left owed is sent by a later tick.
            logger.warning("tick could not record job %s's lost attempt", job.id, exc_info=True)
        return JobMessage.for_job(reclaimed) if next_token else None

    def _send_owed_alert(self, row: DueRow, report: TickReport) -> None:
        run = self._store.owed_alert(row.job_id, row.sort_key)
        if run is None:
            return
        self._alert(self._store.get(row.job_id), run, report)
        report.count("alerts_sent")

    def _alert(self, job: Job, run: RunSummary, report: TickReport) -> None:
        self._dispatcher.send_dead(job, run)
        self._store.alert_sent(job.id, run)
        report.count("dead")
        with _report_lock:
            report.dead_jobs.append(job.id)


def _lost_run(job: Job, now_ms: int, status: RunStatus) -> RunSummary:
    return RunSummary(
        scheduled_at=job.scheduled_at or 0,
        attempt=job.attempt,
        status=status,
        started_at=job.started_at,
        finished_at=now_ms,
        error=f"lease expired: worker {job.worker or '?'} stopped answering",
        worker=job.worker,
    )


def _lateness(rows: Iterable[DueRow], now_ms: int) -> list[int]:
    return [
        now_ms - row.due_at for row in rows if not (row.is_lease or row.is_alert) and row.due_at <= now_ms
    ]
