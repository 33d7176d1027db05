"""The worker's writes of a job: the fence (with its limit's slot and token when the job names a
key), a hold its key asks for, the heartbeat and the settle. Each is a row of the transition table,
conditional on the delivery's token (shared.store.transitions)."""

from __future__ import annotations

from typing import Any

from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.errors import StaleDelivery
from sundial.shared.lifecycle import Event, Placement
from sundial.shared.models import Job, RunSummary
from sundial.shared.store import expressions as x
from sundial.shared.store import items
from sundial.shared.store.limit_shards import slot_name
from sundial.shared.store.transitions import FENCED_FROM, SlotTake, Transitions


class WorkerWrites(Transitions):
    def fence(
        self,
        job_id: str,
        token: str,
        worker: str,
        now_ms: int,
        timeout_seconds: int = c.LEASE_CHUNK_SECONDS,
        delivery_id: str | None = None,
        limit_key: str | None = None,
        take: SlotTake | None = None,
        queued_lease: int | None = None,
    ) -> Job:
        """QUEUED+token → RUNNING before anything runs; counts the attempt (a job waiting with its
        token, whose message the tick sent without a claim, starts from PENDING or FAILED alike; its
        index row stays where it is, its implied lease now the lease). A late delivery whose
        lease ran short gets a fresh one (and its index row moves), so no tick reclaims an attempt
        that has just started. Raises StaleDelivery for a duplicate or stale delivery.

        `delivery_id` names this delivery: a worker repeating the fence after an error passes the
        same one, so the repeat recognises its own applied fence instead of taking it for a
        duplicate's (each copy of a message has its own).

        The fence holds only for a job that names `limit_key` (None: no key); a job that names
        another raises StaleDelivery carrying it. With `take`, the key's slot and token are taken in
        the same transaction (LimitChanged when the key's shard no longer has room); the slot
        then ends with `queued_lease` when the job still has that lease, which the attempt keeps."""
        write_id = delivery_id or x.new_write_id()
        key_is = _limit_key_is(limit_key)
        if take is not None:
            attempt = (job_id, token, worker, now_ms, timeout_seconds, write_id, key_is, take)
            if queued_lease is None:
                return self._fence_taking(*attempt)
            try:
                return self._fence_taking(*attempt, kept_lease=queued_lease)
            except StaleDelivery as exc:
                current = exc.current
                if current is None or current.status not in FENCED_FROM or current.token != token:
                    raise
                if current.limit_key != take.shard.key:
                    raise
            return self._fence_taking(*attempt)  # its lease is another: the attempt gets a fresh one
        needed = lifecycle.shortest_running_lease(now_ms, timeout_seconds)
        change = self._fence_change(worker, now_ms, needed, write_id, limit_key)
        try:
            return self._transition(Event.FENCE, job_id, change, x.LEASE_LASTS, key_is, token=token)
        except StaleDelivery as exc:
            current = exc.current
            if current is None or current.status not in FENCED_FROM or current.token != token:
                raise
            if current.limit_key != limit_key:
                raise  # the job names another key than the message: the caller fences by its key
        lease_until = lifecycle.running_lease(now_ms, current.retry.timeout_seconds)
        change = self._fence_change(worker, now_ms, None, write_id, limit_key).set(lease_until=lease_until)
        change.set(**{c.DUE_KEY_ATTRIBUTE: items.due_key(JobStatus.RUNNING, lease_until)})
        return self._transition(Event.FENCE, job_id, change, key_is, token=token)

    def _fence_taking(
        self,
        job_id: str,
        token: str,
        worker: str,
        now_ms: int,
        timeout_seconds: int,
        write_id: str,
        key_is: str,
        take: SlotTake,
        kept_lease: int | None = None,
    ) -> Job:
        """The fence and its key's slot and token in one transaction: the holder's lease is the
        attempt's, written by both, so the slot ends when the lease does. With `kept_lease`, that is
        the job's lease as it stands, conditional on it, so that its index row stays where it is (a
        move is two index writes, doubled in a transaction); otherwise a fresh one. Raises
        LimitChanged when the shard no longer has what the take needs, StaleDelivery when the job
        moved on."""
        change = self._fence_change(worker, now_ms, None, write_id, take.shard.key)
        extra = [key_is]
        if kept_lease is None:
            lease_until = lifecycle.running_lease(now_ms, timeout_seconds)
            change.set(lease_until=lease_until)
            change.set(**{c.DUE_KEY_ATTRIBUTE: items.due_key(JobStatus.RUNNING, lease_until)})
        else:
            lease_until = kept_lease
            change.condition_values[":kept_lease"] = kept_lease
            extra.append(x.LEASE_IS_KEPT)
        change.set(limit_wait_ms=take.waited_ms)
        if take.holds_slot:
            change.set(limit_slot=slot_name(take.shard.key, take.shard.number))
        holder_lease = lease_until if take.holds_slot else None
        shard = self.shard_take(
            take.shard, job_id, holder_lease, take.needed, now_ms, take.expired, take.booked
        )
        return self._transition(Event.FENCE, job_id, change, *extra, token=token, partners=[shard])

    def hold(
        self, job_id: str, token: str, limit_key: str, priority: str, lease_until: int, held_since: int
    ) -> Job:
        """A delivery its key holds back: the occurrence stays queued under its token, its lease
        past the instant it looks again, so that no tick takes the wait for a lost message. Raises
        StaleDelivery when the job moved on, or names another key now."""
        change = x.Change(condition_values={":limit_key": limit_key})
        change.set(status=JobStatus.QUEUED, lease_until=lease_until, updated_at=self._now())
        change.set(limit_held_since=held_since)
        change.set(**items.due_attributes(priority, job_id, JobStatus.QUEUED, lease_until, self._written))
        return self._transition(Event.HOLD, job_id, change, _limit_key_is(limit_key), token=token)

    @staticmethod
    def _fence_change(
        worker: str, now_ms: int, lease_needed: int | None, write_id: str, limit_key: str | None
    ) -> x.Change:
        values: dict[str, Any] = {":lease_needed": lease_needed} if lease_needed is not None else {}
        if limit_key is not None:
            values[":limit_key"] = limit_key
        change = x.Change(condition_values=values, write_id=write_id).increment("attempt").remove("resent")
        change.remove("limit_held_since")
        return change.set(status=JobStatus.RUNNING, worker=worker, started_at=now_ms, updated_at=now_ms)

    def heartbeat(
        self, job_id: str, token: str, lease_until: int, now_ms: int, slot: str | None = None
    ) -> Job:
        """RUNNING+token → lease extended, with its limit's slot (`slot`) when it holds one. Raises
        StaleDelivery when the lease was lost, LimitChanged when the slot was (its lease ended and
        another attempt took it)."""
        change = x.Change().set(lease_until=lease_until, updated_at=now_ms)
        change.set(**{c.DUE_KEY_ATTRIBUTE: items.due_key(JobStatus.RUNNING, lease_until)})
        partners = [self.shard_keep(slot, job_id, lease_until)] if slot is not None else None
        return self._transition(Event.HEARTBEAT, job_id, change, token=token, partners=partners)

    def complete(
        self, job: Job, token: str, placement: Placement, run: RunSummary, next_token: str | None
    ) -> Job:
        """RUNNING+token+revision → the placement after success. Raises StaleDelivery."""
        return self._finish(Event.SUCCEED, job, token, placement, run, next_token)

    def fail(
        self, job: Job, token: str, placement: Placement, run: RunSummary, next_token: str | None
    ) -> Job:
        """RUNNING+token+revision → a retry, or the end of the occurrence. Raises StaleDelivery."""
        return self._finish(Event.FAIL, job, token, placement, run, next_token)


def _limit_key_is(limit_key: str | None) -> str:
    """The fence's condition on the job's limit key: the key its message names, or none."""
    return "attribute_not_exists(#limit_key)" if limit_key is None else "#limit_key = :limit_key"


__all__ = ["WorkerWrites"]
