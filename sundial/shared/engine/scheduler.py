"""The scheduler's tick: claim what is due before the next tick, send what waits ahead, act on
expired leases, send owed alerts, dispatch.

Index rows are hints (the index is eventually consistent); each write's condition decides. Two ticks
at once are harmless: the loser of every race gets a failed condition and moves on.

A job placed far ahead waits with its token in an ahead row (shared.lifecycle.Placement.waits_ahead):
the tick sends its message from the row alone, writing nothing to the job, and records as it goes
how far it has sent, a mark per shard number (a few writes a second for every job). The worker's fence starts
it from its waiting status, under the lease the row implies. The row stays until a write moves it,
so it is also the backstop: once its implied lease has passed, the tick looks at the job as it does
at any expired lease.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from botocore.exceptions import BotoCoreError, ClientError

from sundial.contract.vocabulary import JobStatus, Priority, RunStatus
from sundial.shared import constants as c
from sundial.shared import lifecycle, tracing
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.alerts import hand_on_route, send_alert
from sundial.shared.engine.claimers import WORK_PER_INVOCATION, HandOff, hand_off
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.tick_report import TickReport
from sundial.shared.engine.tick_sends import SECOND_MS, Due, Marks, Outgoing, Senders, Taken, lateness
from sundial.shared.errors import StaleDelivery
from sundial.shared.models import WAITING, Job, Run, RunSummary
from sundial.shared.store import DueRow, SentMark, SentMarks, new_token, routes

logger = logging.getLogger(__name__)
# Rows claimed together before their messages go to the senders, which send while the next are claimed.
CLAIM_CHUNK = 4 * c.SEND_BATCH_SIZE
# Sender threads: each SendMessageBatch waits on the network, so a few in parallel multiply the rate.
SENDERS = 8
# How often a tick records how far it has sent while it sends: a tick killed mid-send costs the
# next one only the rows sent since (copies), a few mark writes a second.
MARK_EVERY_MS = 500


class Scheduler:
    def __init__(
        self,
        engine: EngineContext,
        parallelism: int = 8,
        senders: int = SENDERS,
        claimers: HandOff | None = None,
        capacity: int = WORK_PER_INVOCATION,
    ) -> None:
        self._engine = engine
        self._parallelism = parallelism
        self._senders = senders
        self._claimers = claimers
        self._capacity = capacity

    def tick(self, deadline_ms: int | None = None, shards: Sequence[int] | None = None) -> TickReport:
        """One pass over every shard's rows (or, for a claimer, over `shards` alone), merged by due
        time. When they are more than one invocation can take by its deadline, shares of the shards
        go to parallel claimers. At `deadline_ms` it stops claiming and sending; what is left stays
        due for the next tick."""
        report = TickReport()
        now_ms = self._engine.clock.now_ms()
        horizon_ms = now_ms + c.DISPATCH_HORIZON_SECONDS * SECOND_MS
        own = list(self._engine.store.shards.read if shards is None else shards)
        marks = Marks(self._sent_marks(report), horizon_ms, own)
        with ThreadPoolExecutor(self._parallelism) as pool, ThreadPoolExecutor(self._senders) as sending:
            rows = self._due_rows(pool, own, horizon_ms, marks, report)
            report.rows_read = len(rows)
            report.oldest_lateness_ms = max([0, *lateness(rows, now_ms, marks)])
            if shards is None and self._claimers is not None:
                rows = hand_off(self._claimers, rows, own, marks, now_ms, self._capacity, report)
            marks.expect(rows)
            with Senders(sending, self._senders, self._engine, deadline_ms, marks, report) as senders:
                self._take_all(pool, rows, marks, senders, report, deadline_ms)
            self._mark_sent(pool, marks, report)
        return report

    def _take_all(
        self,
        pool: ThreadPoolExecutor,
        rows: list[Due],
        marks: Marks,
        senders: Senders,
        report: TickReport,
        deadline_ms: int | None,
    ) -> None:

        def take(due: Due) -> Taken | None:
            taken = self._take(due, marks, report, deadline_ms)
            if taken is None or taken.claimed:
                marks.done(due)  # nothing to send, or claimed: the job's row has moved (unless held)
            return taken

        marked_at = self._engine.clock.now_ms()
        for start in range(0, len(rows), CLAIM_CHUNK):
            if deadline_ms is not None and self._engine.clock.now_ms() >= deadline_ms:
                report.out_of_time = True
                return  # the rows not taken keep their shards' marks below them
            chunk = rows[start : start + CLAIM_CHUNK]
            outgoing = [
                Outgoing(taken, due)
                for due, taken in zip(chunk, pool.map(take, chunk), strict=True)
                if taken is not None
            ]
            senders.send(outgoing)
            if self._engine.clock.now_ms() - marked_at >= MARK_EVERY_MS:
                self._mark_sent(pool, marks, report)
                marked_at = self._engine.clock.now_ms()

    def _sent_marks(self, report: TickReport) -> SentMarks | None:
        """How far earlier ticks sent ahead rows; None (ahead rows left to the next tick) when unread."""
        try:
            return self._engine.store.sent_marks()
        except (ClientError, BotoCoreError):
            logger.warning("tick leaves ahead rows for the next tick", exc_info=True)
            report.count("errors")
            return None

    def _mark_sent(self, pool: ThreadPoolExecutor, marks: Marks, report: TickReport) -> None:
        """Moves each shard's mark as far as this tick sent every ahead row of it; a mark not written
        costs copies (the next tick sends those rows again), never a skipped row."""

        def mark(shard: int, sent: SentMark) -> None:
            try:
                self._engine.store.mark_sent(shard, sent)
            except (ClientError, BotoCoreError):
                logger.warning("tick could not record shard %s's sends; the next sends them again", shard)
                report.count("errors")

        moved = marks.moved()
        list(pool.map(mark, moved.keys(), moved.values()))

    def _due_rows(
        self, pool: ThreadPoolExecutor, shards: list[int], horizon_ms: int, marks: Marks, report: TickReport
    ) -> list[Due]:
        """Every shard's rows, each shard read in due order, merged into one order."""

        def read(priority: Priority, shard: int) -> list[Due]:
            try:
                found = self._engine.store.due_rows(priority, shard, horizon_ms)
                return [Due(row, priority, shard) for row in found]
            except (ClientError, BotoCoreError):
                logger.warning("tick skipped shard %s#%s for the next tick", priority, shard, exc_info=True)
                report.count("errors")
                report.count("unread_shards")
                marks.unread(shard)
                return []

        priorities = [priority for priority in c.PRIORITIES for _ in shards]
        per_shard = pool.map(read, priorities, [shard for _ in c.PRIORITIES for shard in shards])
        return list(heapq.merge(*per_shard, key=lambda due: due.order))

    def _take(self, due: Due, marks: Marks, report: TickReport, deadline_ms: int | None) -> Taken | None:
        row, now_ms = due.row, self._engine.clock.now_ms()
        if deadline_ms is not None and now_ms >= deadline_ms:
            report.out_of_time = True
            marks.hold(due)
            return None
        try:
            if row.ahead_token is not None:
                return self._ahead(due, now_ms, marks.of(due.shard), report)
            if (row.is_lease or row.is_alert) and row.due_at >= now_ms:
                return None
            return _claimed(self._act(row, due.priority, now_ms, report))
        except StaleDelivery:
            report.count("lost_races")
            return None
        except (ClientError, BotoCoreError):
            logger.warning("tick left job %s for the next tick", row.job_id, exc_info=True)
            report.count("errors")
            marks.hold(due)
            return None

    def _ahead(self, due: Due, now_ms: int, sent: SentMark | None, report: TickReport) -> Taken | None:
        """An ahead row: its message is sent once, without a write, before its due time; once its
        implied lease has passed, the job is looked at. A row due already and never sent (a tick
        was killed, or the ticks stopped for a while) is sent as it is while within the misfire
        grace, as it would have been; later it is claimed, so that the misfire policy decides."""
        row = due.row
        token, expires_at = row.ahead_token, row.expires_at
        assert token is not None and expires_at is not None
        if sent is None:
            return None
        was_sent = sent.covers(row.due_at, due.position)
        if expires_at < now_ms:
            return _claimed(self._ahead_expired(row, now_ms, was_sent, report))
        if was_sent:
            return None  # sent by an earlier tick
        if row.due_at < now_ms - c.MISFIRE_GRACE_SECONDS * SECOND_MS:
            return _claimed(self._claim(row, now_ms, report))
        message = JobMessage(job_id=row.job_id, token=token, due_at=row.due_at, priority=due.priority)
        return Taken(message, claimed=False)

    def _ahead_expired(self, row: DueRow, now_ms: int, sent: bool, report: TickReport) -> JobMessage | None:
        """No fence took the job under its ahead row's lease. Still waiting, it is claimed: with the
        same token when its message was sent (a copy may be in a backlog, and either may start it;
        the occurrence is not a misfire, as a queued job's resend is not), or afresh when it never
        was. Running or queued, it is an expired lease like any other."""
        job = self._engine.store.get(row.job_id)
        if job.status not in WAITING:
            return self._lease_expired(job, row, now_ms, report)
        if not sent or job.token is None:
            return self._claim(row, now_ms, report)
        claimed = self._engine.store.claim(row, job.token, now_ms)
        report.count("resent")
        return JobMessage.for_job(claimed)

    def _act(self, row: DueRow, priority: Priority, now_ms: int, report: TickReport) -> JobMessage | None:
        if row.is_alert and routes.is_route_key(row.sort_key):
            self._hand_on_route(row.job_id, row.sort_key, priority, now_ms, report)
            return None
        if row.is_alert:
            self._send_owed_alert(row, report)
            return None
        if row.is_lease:
            return self._lease_expired(self._engine.store.get(row.job_id), row, now_ms, report)
        return self._claim(row, now_ms, report)

    def _claim(self, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        job = self._engine.store.claim(row, new_token(), now_ms)
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
        moved = self._engine.store.catch_up(job, job.token, placement, next_token)
        report.count("missed", lifecycle.missed_count(placement.skipped))
        return JobMessage.for_job(moved) if next_token else None

    def _lease_expired(self, job: Job, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        if job.lease_until is None or job.lease_until >= now_ms:
            raise StaleDelivery(f"job '{job.id}' is no longer waiting for a reclaim")
        if job.status is JobStatus.QUEUED:
            report.count("resent")
            return self._caught_up(self._engine.store.resend(job, row.due_key, now_ms), now_ms, report)
        if job.status is not JobStatus.RUNNING:
            raise StaleDelivery(f"job '{job.id}' is no longer in flight")
        return self._reclaim(job, row, now_ms, report)

    def _reclaim(self, job: Job, row: DueRow, now_ms: int, report: TickReport) -> JobMessage | None:
        """The worker is gone: its attempt counts as lost, written only after the write that makes
        it true, and the job retries now or ends its occurrence as its policy says."""
        placement = lifecycle.after_lost(job, now_ms)
        run = _lost_run(job, now_ms, RunStatus.DEAD if placement.alert else RunStatus.LOST)
        next_token = new_token() if placement.dispatches_now(now_ms) else None
        self._engine.store.reclaim(job, row.due_key, placement, run, next_token)
        report.count("reclaimed")
        report.count("missed", lifecycle.missed_count(placement.skipped))
        try:
            self._engine.store.put_run(Run.of(job.id, run))
            if placement.alert:
                self._alert(job.id, run, report)
            if placement.alert and job.on_dead is not None:
                route_key = routes.route_sk(run.scheduled_at, run.attempt)
                self._hand_on_route(job.id, route_key, job.priority, now_ms, report)
        except (ClientError, BotoCoreError, StaleDelivery):
            # The job is settled; an alert left owed is sent, or handed on, by a later tick.
            logger.warning("tick could not record job %s's lost attempt or alert it", job.id, exc_info=True)
        if next_token is None or placement.due_at is None:
            return None
        return JobMessage.placed(job, next_token, placement.due_at)

    def _hand_on_route(
        self, job_id: str, sort_key: str, priority: Priority, now_ms: int, report: TickReport
    ) -> None:
        if hand_on_route(self._engine, job_id, sort_key, priority, now_ms):
            report.count("routes_handed_on")

    def _send_owed_alert(self, row: DueRow, report: TickReport) -> None:
        run = self._engine.store.owed_alert(row.job_id, row.sort_key)
        if run is not None and self._alert(row.job_id, run, report):
            report.count("alerts_sent")

    def _alert(self, job_id: str, run: RunSummary, report: TickReport) -> bool:
        if not send_alert(self._engine, job_id, run):
            return False
        report.count("dead")
        report.note_dead(job_id)
        return True


def _lost_run(job: Job, now_ms: int, status: RunStatus) -> RunSummary:
    return RunSummary(
        scheduled_at=job.scheduled_at or 0,
        attempt=job.attempt,
        status=status,
        started_at=job.started_at,
        finished_at=now_ms,
        error=f"lease expired: worker {job.worker or '?'} stopped answering",
        worker=job.worker,
        trace_id=tracing.of_attempt(job).trace_id,
        extra=lifecycle.is_triggered_run(job) or None,
    )


def _claimed(message: JobMessage | None) -> Taken | None:
    return None if message is None else Taken(message)
