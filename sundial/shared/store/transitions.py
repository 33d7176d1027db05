"""The job store's one way to write a state change: a row of the transition table (shared.lifecycle.table)
made into a conditional write, with what a placement, a settle or a user action sets on the job,
and the writes that go in the same transaction (an owed alert, a ledger item, a limit's shard).
The named writes are in sundial/shared/store/jobs.py, the worker's in sundial/shared/store/worker_writes.py.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.lifecycle import TRANSITIONS, Event, Placement
from sundial.shared.models import Job, RunSummary
from sundial.shared.store import expressions as x
from sundial.shared.store import items, routes
from sundial.shared.store.backfills import BackfillLedger
from sundial.shared.store.limit_shards import Shard
from sundial.shared.store.limits import LimitStore
from sundial.shared.store.operations import OperationStore
from sundial.shared.store.routes import RouteAlerts
from sundial.shared.store.skips import SkipLedger, skip_item
from sundial.shared.store.writes import Item

SECOND_MS = 1000
# An owed alert waits this long for the writer that owes it before the tick sends it instead.
ALERT_GRACE_MS = 60 * SECOND_MS
FENCED_FROM = TRANSITIONS[Event.FENCE].sources
ENDED = frozenset({JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED})
# What items written before triggers were counted hold instead of `triggers` (read as one): every
# write of `triggers` removes it.
LEGACY_TRIGGER_FLAG = "trigger_requested"


@dataclass(frozen=True)
class SlotTake:
    """What a fence takes from its key's shard with the job: a slot (when the shard limits
    concurrency) and a token (when it limits the rate), `needed` of each being there still when it
    is written; and the time over of other holders and waiters (`expired`), cleared by the same
    write."""

    shard: Shard
    needed: int
    expired: tuple[str, ...] = ()
    waited_ms: int | None = None
    booked: bool = False  # its token was booked when it was held back: nothing more is taken

    @property
    def holds_slot(self) -> bool:
        return self.shard.share is not None and self.shard.share.max_concurrent is not None


def new_token() -> str:
    return secrets.token_hex(8)


class Transitions(BackfillLedger, SkipLedger, OperationStore, RouteAlerts, LimitStore):
    """Builds and makes each transition's write; marks user actions with the bulk operation and the
    trace they belong to."""

    _operation: str | None = None
    _trace: str | None = None

    def _finish(
        self,
        event: Event,
        job: Job,
        token: str,
        placement: Placement,
        run: RunSummary,
        next_token: str | None,
    ) -> Job:
        change = self._placement_change(job, placement, next_token)
        last_run = run.model_dump_json(exclude_none=True)
        change.set(last_run=last_run)
        change.condition_values[":token"] = token
        # The worker repeats this write after a throttle or a fault: the repeat must know it.
        change.write_id = x.repeatable_write_id(event.value, token, next_token or "", last_run)
        return self._settle(event, job, placement, run, change)

    def _settle(self, event: Event, job: Job, placement: Placement, run: RunSummary, change: x.Change) -> Job:
        change.condition_values.setdefault(":token", job.token)
        change.condition_values[":revision"] = job.revision
        # The attempt's last run names this settle alone, and only the next settle replaces it.
        change.proof["last_run"] = change.sets["last_run"]
        if placement.status is JobStatus.CANCELLED:
            change.remove("cancel_requested")
        change.set(**lifecycle.health_after(job, placement, run.status))
        # The attempt's slot is not given back here but by its own write after this one
        # (LimitShards.return_slot): in this transaction it would double the units of the job's write
        # and of its index moves. Until then the slot is held, as it would be by a running attempt.
        if not placement.alert:
            return self._transition(event, job.id, change)
        due_at = self._now() + ALERT_GRACE_MS
        alert = items.alert_item(job, run, due_at, self._written)
        in_a_row = lifecycle.route_owed(job, placement)
        if in_a_row is None:
            return self._transition(event, job.id, change, put=alert)
        # The job's own route is owed in the same write, as the stack's alert is.
        route = routes.route_alert_item(job, run, in_a_row, due_at, self._written)
        return self._transition(event, job.id, change, put=alert, also=route)

    def _user_change(
        self,
        event: Event,
        job: Job,
        placement: Placement | None,
        next_token: str | None,
        put: Item | None = None,
        new_items: list[Item] | None = None,
        **fields: Any,
    ) -> Job:
        change = x.Change() if placement is None else self._placement_change(job, placement, next_token)
        change.set(updated_at=self._now(), **fields).increment("revision")
        if self._operation is not None:
            change.set(operation=self._operation)
        if self._trace is not None and _schedules(event, placement):
            change.set(traceparent=self._trace)
        change.condition_values[":version"] = job.version
        return self._transition(event, job.id, change, put=put, new_items=new_items)

    def _transition(
        self,
        event: Event,
        job_id: str,
        change: x.Change,
        *extra: str,
        token: str | None = None,
        put: Item | None = None,
        also: Item | None = None,
        new_items: list[Item] | None = None,
        partners: list[dict[str, Any]] | None = None,
    ) -> Job:
        """One write of the table's row for `event`: its sources and guards as the condition, with
        `put` (and `also`) and the `partners` (a limit's shard) written in the same transaction."""
        row = TRANSITIONS[event]
        status = change.sets.get("status")
        if status is not None and JobStatus(status) not in row.targets:
            raise AssertionError(f"{event.value} cannot end in {status}")
        sources, values = x.status_in(row.sources)
        change.condition_values.update(values)
        if token is not None:
            change.condition_values[":token"] = token
        condition = x.all_of(sources, *(x.GUARDS[guard] for guard in row.guards), *extra)
        change.set(**items.index_moves(job_id, change.sets, change.removes))
        if new_items:
            if put is not None or also is not None:
                raise AssertionError(f"{event.value} records ledger items and puts no other item")
            return self._write_recording(job_id, change, condition, new_items)
        puts = [{"Item": item} for item in (put, also, *change.records) if item is not None]
        if not puts and not partners:
            return self._write(job_id, change, condition)
        return self._transact(job_id, change, condition, puts, partners)

    def _placement_change(self, job: Job, placement: Placement, next_token: str | None) -> x.Change:
        """The fields of a placement. Dispatched in the same write (`next_token`), it is QUEUED under
        that token with a queued lease; otherwise it waits in the index at its due time, or leaves it."""
        now_ms = self._now()
        change = x.Change().set(
            status=placement.status,
            attempt=placement.attempt,
            scheduled_at=placement.scheduled_at,
            due_at=placement.due_at,
            updated_at=now_ms,
            worker=None,
            started_at=None,
        )
        change.remove("resent", "limit_slot", "limit_wait_ms", "limit_held_since")
        _occurrence_fields(change, job, placement)
        self._record_skipped(change, job, placement)
        if next_token is not None:
            assert placement.due_at is not None and placement.dispatches_now(now_ms)
            lease_until = lifecycle.queued_lease(placement.due_at, now_ms, job.retry.timeout_seconds)
            change.set(status=JobStatus.QUEUED, token=next_token, lease_until=lease_until)
            change.set(
                **items.due_attributes(job.priority, job.id, JobStatus.QUEUED, lease_until, self._written)
            )
        elif placement.due_at is not None and placement.waits_ahead(now_ms):
            # Far enough ahead that the tick sends its message without a claim: the token and the
            # lease it will start under are written now, in the write that places it anyway.
            token = new_token()
            change.set(token=token, lease_until=lifecycle.ahead_lease(placement.due_at))
            ahead = items.ahead_attributes(job.priority, job.id, placement.due_at, token, self._written)
            change.set(**ahead)
        elif placement.due_at is not None:
            change.set(token=None, lease_until=None)
            due = items.due_attributes(
                job.priority, job.id, placement.status, placement.due_at, self._written
            )
            change.set(**due)
        else:
            change.remove("token", "lease_until", c.DUE_SHARD_ATTRIBUTE, c.DUE_KEY_ATTRIBUTE)
        return change

    def _record_skipped(self, change: x.Change, job: Job, placement: Placement) -> None:
        """The stretches the placement passes over, recorded in its write, and the instants among
        them that the user did not choose to skip, counted on the job."""
        change.records += [skip_item(job.id, skip, self.retention_seconds) for skip in placement.skipped]
        missed = lifecycle.missed_count(placement.skipped)
        if missed:
            change.set(missed=job.missed + missed)
        if missed and job.alert_on_missed and job.on_dead is not None:
            # Owed to the job's route in the same write, as a dead occurrence's notice is.
            now_ms = self._now()
            change.records += [
                routes.missed_route_item(job, skip, now_ms, self._written)
                for skip in placement.skipped
                if skip.reason.is_missed
            ]

    def _now(self) -> int:
        return self._clock.now_ms()


def _occurrence_fields(change: x.Change, job: Job, placement: Placement) -> None:
    """What a placement says about its occurrence: the retries counted, the triggered run and where
    the schedule resumes after it, the triggers left waiting."""
    if placement.attempt == 0:
        change.remove("retried_after")
    elif placement.retried_after is not None:
        change.set(retried_after=placement.retried_after)
    if placement.clear_deferred:
        change.remove("deferred_at")
    if placement.defer_to is not None:
        change.set(deferred_at=placement.defer_to)
    if placement.triggers is not None:
        change.set(triggers=placement.triggers or None).remove(LEGACY_TRIGGER_FLAG)
    if placement.backfill is not None:
        change.set(backfill=list(placement.backfill) or None)
    if placement.extra:
        change.set(extra_run=True, backfill_run=placement.backfilled or None)
    elif placement.scheduled_at != job.scheduled_at or placement.status in ENDED or placement.clear_deferred:
        # Another occurrence, this one over, or the schedule resuming after a triggered run: even
        # at the same instant (a run moved to it), the occurrence resumed is not the triggered one.
        change.remove("extra_run", "backfill_run")


def _schedules(event: Event, placement: Placement | None) -> bool:
    """Whether a user action schedules a run: its trace goes with that run (sundial/shared/tracing.py)."""
    return event in (Event.TRIGGER, Event.RETRY) or (
        placement is not None and placement.due_at is not None and event in (Event.RESUME, Event.UPDATE)
    )


__all__ = ["ENDED", "FENCED_FROM", "LEGACY_TRIGGER_FLAG", "SlotTake", "Transitions", "new_token"]
