"""The scheduler's tick: claim what is due before the next tick, reclaim expired leases, dispatch.

Index rows are hints (the index is eventually consistent); each claim's condition decides. Two ticks
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
from shared.engine.settle import settle
from shared.errors import StaleDelivery
from shared.models import IN_FLIGHT, Job, JobStatus, Run, RunStatus, RunSummary
from shared.schedules import MisfirePolicy
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
    reclaimed: int = 0
    dispatched: int = 0
    send_failures: int = 0
    lost_races: int = 0
    errors: int = 0  # AWS errors after the SDK's own retries: the job stays due for the next tick
    skipped_misfires: int = 0
    dead: int = 0
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
            for send in sends:
                send.result()
        return report

    def _send(self, messages: list[JobMessage], report: TickReport) -> None:
        failed = self._dispatcher.send(messages)
        report.count("dispatched", len(messages) - len(failed))
        report.count("send_failures", len(failed))

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
            if row.is_lease:
                return self._reclaim(row, now_ms, report) if row.due_at < now_ms else None
            return self._claim(row, now_ms, report)
        except StaleDelivery:
            report.count("lost_races")
            return None
        except (ClientError, BotoCoreError):
            logger.warning("tick left job %s for the next tick", row.job_id, exc_info=True)
            report.count("errors")
            return None

    def _claim(self, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        job = self._store.claim(row, new_token(), now_ms)
        report.count("claimed")
        if lifecycle.is_skipped_misfire(job, now_ms):
            return self._skip_misfire(job, now_ms, report)
        return JobMessage.for_job(job)

    def _skip_misfire(self, job: Job, now_ms: int, report: TickReport) -> JobMessage | None:
        report.count("skipped_misfires")
        following = lifecycle.next_occurrence(job, now_ms, MisfirePolicy.SKIP)
        status = JobStatus.PENDING if following is not None else JobStatus.SUCCEEDED
        placement = lifecycle.Placement(status, following or job.scheduled_at, following, 0)
        next_token = new_token() if placement.dispatches_now(now_ms) else None
        assert job.token is not None
        updated = self._store.skip(job, job.token, placement, next_token)
        return JobMessage.for_job(updated) if next_token else None

    def _reclaim(self, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        job = self._store.get(row.job_id)
        if job.status not in IN_FLIGHT or job.lease_until is None or job.lease_until >= now_ms:
            raise StaleDelivery(f"job '{job.id}' is no longer waiting for a reclaim")
        if job.status is JobStatus.RUNNING:
            self._record_lost(job, now_ms)
        if job.status is JobStatus.RUNNING and lifecycle.is_dead(job):
            self._kill_lost(job, now_ms, report)
            return None
        reclaimed = self._store.reclaim(job, row.due_key, new_token(), now_ms)
        report.count("reclaimed")
        return JobMessage.for_job(reclaimed)

    def _record_lost(self, job: Job, now_ms: int) -> None:
        self._store.put_run(Run.of(job.id, _lost_run(job, now_ms)))

    def _kill_lost(self, job: Job, now_ms: int, report: TickReport) -> None:
        assert job.token is not None
        placement = lifecycle.after_death(job, now_ms)
        run = _lost_run(job, now_ms).model_copy(update={"status": RunStatus.DEAD})
        settle(self._store.kill, job, job.token, placement, run, self._dispatcher, self._clock)
        self._dispatcher.send_dead(job, run.error)
        report.count("dead")
        with _report_lock:
            report.dead_jobs.append(job.id)


def _lost_run(job: Job, now_ms: int) -> RunSummary:
    return RunSummary(
        scheduled_at=job.scheduled_at or 0,
        attempt=job.attempt,
        status=RunStatus.LOST,
        started_at=job.started_at,
        finished_at=now_ms,
        error=f"lease expired: worker {job.worker or '?'} stopped answering",
        worker=job.worker,
    )


def _lateness(rows: Iterable[DueRow], now_ms: int) -> list[int]:
    return [now_ms - row.due_at for row in rows if not row.is_lease and row.due_at <= now_ms]
