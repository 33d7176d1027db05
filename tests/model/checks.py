"""The invariants the model checks, as pure functions of one read of the table and what the model saw.

Each returns the violations it finds, as sentences; an empty list means the invariant holds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sundial.contract.vocabulary import JobStatus, MisfirePolicy, RunStatus, SkipReason
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.clock import format_rfc3339
from sundial.shared.lifecycle.skips import Skip
from sundial.shared.models import IN_FLIGHT, WAITING, Job, Run
from sundial.shared.store import DueRow, items
from sundial.shared.store.backfills import BACKFILL_PREFIX
from sundial.shared.store.limit_shards import SHARD_SK, slot_name
from sundial.shared.store.skips import SKIP_PREFIX
from tests.model.spread import spread_misfire_target

SECOND = 1000
GRACE_MS = c.MISFIRE_GRACE_SECONDS * SECOND
LIMIT_SHARD_PREFIX = "LIMIT#"
# Five minutes is far enough for each next occurrence to wait ahead with its token (an ahead row).
RATE_PERIODS_MS = {
    "rate(1 minute)": 60 * SECOND,
    "rate(10 seconds)": 10 * SECOND,
    "rate(2 minutes)": 120 * SECOND,
    "rate(5 minutes)": 300 * SECOND,
}


@dataclass
class SlotShard:
    """A limit key's shard as stored: its holders (job → the end of its lease), its waiters (job →
    rank and the end of its place in line)."""

    holders: dict[str, int]
    waiters: dict[str, tuple[str, int]]


def _slot_shard(item: dict[str, Any]) -> SlotShard:
    holders = {job: int(end["N"]) for job, end in item.get("holders", {}).get("M", {}).items()}
    waiters = {}
    for job, text in item.get("waiters", {}).get("M", {}).items():
        rank, _since, until = text["S"].rsplit("|", 2)
        waiters[job] = (rank, int(until))
    return SlotShard(holders, waiters)


@dataclass
class Snapshot:
    """The whole table, read at once: jobs, history, owed alerts, the due index's rows, and the
    ledgers of the instants a write passed over and of those a backfill took."""

    jobs: dict[str, Job] = field(default_factory=dict)
    runs: dict[str, list[Run]] = field(default_factory=lambda: defaultdict(list))
    owed: dict[str, set[tuple[int, int]]] = field(default_factory=lambda: defaultdict(set))
    index: dict[str, list[DueRow]] = field(default_factory=lambda: defaultdict(list))
    marks: dict[int, int] = field(default_factory=dict)  # how far the tick has sent, per shard
    slots: dict[str, SlotShard] = field(default_factory=dict)  # a limit key's shard, by "<n>#<key>"
    skips: dict[str, list[Skip]] = field(default_factory=lambda: defaultdict(list))
    # instant → whether the backfill passed it over (overlap policy skip), per job
    backfills: dict[str, dict[int, bool]] = field(default_factory=lambda: defaultdict(dict))

    def sent_until(self, job_id: str) -> int:
        """How far the tick has sent the ahead rows of the job's shard."""
        return self.marks.get(items.shard_number(job_id), 0)


def read_table(client: Any, table: str) -> Snapshot:
    """One consistent scan. The due index is sparse: an item is in it iff it has both index keys."""
    snap = Snapshot()
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for item in page["Items"]:
            job_id = item[c.PARTITION_KEY]["S"].removeprefix("JOB#")
            sort_key = item[c.SORT_KEY]["S"]
            if job_id.startswith(LIMIT_SHARD_PREFIX) and sort_key == SHARD_SK:
                key, shard = job_id.removeprefix(LIMIT_SHARD_PREFIX).rsplit("#", 1)
                snap.slots[slot_name(key, int(shard))] = _slot_shard(item)
            elif job_id == c.SENT_UNTIL_KEY:
                shard = sort_key.removeprefix(items.SENT_MARK_PREFIX)
                snap.marks[int(shard)] = int(item["sent_until"]["N"])
            elif sort_key == items.JOB_SK:
                snap.jobs[job_id] = items.item_to_job(item)
            elif sort_key.startswith(items.RUN_PREFIX):
                snap.runs[job_id].append(items.item_to_run(item))
            elif sort_key.startswith(items.ALERT_PREFIX):
                run = items.item_to_alert(item)
                snap.owed[job_id].add((run.scheduled_at, run.attempt))
            else:
                _ledger_item(snap, job_id, sort_key, item)
            if c.DUE_SHARD_ATTRIBUTE in item and c.DUE_KEY_ATTRIBUTE in item:
                snap.index[job_id].append(DueRow(job_id, item[c.DUE_KEY_ATTRIBUTE]["S"], sort_key))
    return snap


def _ledger_item(snap: Snapshot, job_id: str, sort_key: str, item: dict[str, Any]) -> None:
    """A stretch a write passed over, or an instant a backfill took."""
    if sort_key.startswith(SKIP_PREFIX):
        values = items.deserialize(item)
        reason = SkipReason(values["reason"])
        skip = Skip(int(values["first_ms"]), int(values["until_ms"]), reason, int(values["count"]))
        snap.skips[job_id].append(skip)
    elif sort_key.startswith(BACKFILL_PREFIX):
        passed = item.get("passed_over", {}).get("BOOL", False)
        snap.backfills[job_id][int(item["scheduled_at"]["N"])] = passed


def short(job_id: str) -> str:
    """The model's ids are 01K, the job's label, then how many jobs had that label: `job A`, `job A2`."""
    n = int(job_id[4:]) if job_id[4:].isdigit() else 0
    return f"job {job_id[3]}{n if n > 1 else ''}" if job_id.startswith("01K") and n else f"job {job_id}"


# --- 2. no orphans: the index holds a job iff something must happen to it --------------------------


def orphans(snap: Snapshot) -> list[str]:
    found = []
    for job in snap.jobs.values():
        rows = [row for row in snap.index[job.id] if row.sort_key == items.JOB_SK]
        want = _expected_rows(job)
        have = [row.due_key for row in rows]
        if job.paused and not job.is_recurring and job.status in WAITING:
            # Only a recurring job resumes: a paused one-off never runs its occurrence.
            found.append(f"{short(job.id)} is a one-off {_state(job)}, and nothing can resume it")
        if not want and have:
            found.append(f"{short(job.id)} is {_state(job)} yet still in the due index at {have}")
        elif want and (len(have) != 1 or have[0] not in want):
            found.append(f"{short(job.id)} is {_state(job)}: due index has {have or 'nothing'}, needs {want}")
    return found


def _expected_rows(job: Job) -> list[str]:
    """The index rows the job may have (one of them); none when nothing must happen to it."""
    if job.status in IN_FLIGHT:
        if job.lease_until is None:
            return ["a lease row"]
        rows = [items.due_key(job.status, job.lease_until)]
        # Fenced from an ahead row whose implied lease it kept: the row stays where it was.
        started_ahead = job.due_at is not None and job.lease_until == lifecycle.ahead_lease(job.due_at)
        if job.status is JobStatus.RUNNING and job.token is not None and started_ahead:
            rows.append(items.ahead_key(job.due_at or 0, job.token))
        return rows
    if job.status in WAITING and not job.paused:
        if job.due_at is None:
            return ["a run row"]
        if job.token is not None:  # waiting ahead, with its token and the lease its row implies
            ahead = job.lease_until == lifecycle.ahead_lease(job.due_at)
            return [items.ahead_key(job.due_at, job.token)] if ahead else ["an ahead row and its lease"]
        return [items.due_key(job.status, job.due_at)]
    return []


def _state(job: Job) -> str:
    flags = [name for name in ("paused", "cancel_requested") if getattr(job, name)]
    return job.status.value + "".join(f"+{flag}" for flag in flags)


# --- 4. a dead occurrence's alert is sent or owed, unless the job was cancelled since ---------------


def unalerted(snap: Snapshot, dead_letters: list[dict[str, Any]]) -> list[str]:
    sent = {(d["job_id"], d["scheduled_at"], d["attempts"]) for d in dead_letters}
    found = []
    for job in snap.jobs.values():
        if job.status is JobStatus.CANCELLED or job.cancel_requested:
            continue  # a cancel says the job needs no attention: an alert it still owed is dropped
        dead = {(r.scheduled_at, r.attempt) for r in snap.runs[job.id] if r.status is RunStatus.DEAD}
        if job.last_run is not None and job.last_run.status is RunStatus.DEAD:
            dead.add((job.last_run.scheduled_at, job.last_run.attempt))
        for scheduled, attempt in sorted(dead):
            if (job.id, format_rfc3339(scheduled), attempt) in sent or (scheduled, attempt) in snap.owed[
                job.id
            ]:
                continue
            found.append(
                f"{short(job.id)}: occurrence {scheduled} died at attempt {attempt}, no alert sent or owed"
            )
    return found


# --- 5. history never says `lost` for an attempt whose success the job kept -----------------------


def lost_but_kept(snap: Snapshot, kept: set[tuple[str, int, int]]) -> list[str]:
    found = []
    for job in snap.jobs.values():
        last = job.last_run
        for run in snap.runs[job.id]:
            if run.status is not RunStatus.LOST:
                continue
            mine = (job.id, run.scheduled_at, run.attempt)
            kept_by_job = (
                last is not None
                and last.status is RunStatus.SUCCEEDED
                and (last.scheduled_at, last.attempt) == (run.scheduled_at, run.attempt)
            )
            if mine in kept or kept_by_job:
                found.append(
                    f"{short(job.id)}: history says attempt {run.attempt} of {run.scheduled_at} was lost, "
                    "but its success was kept"
                )
    return found


# --- 7. misfire: a claim runs the occurrence the job's policy picks ------------------------------


def misfire_target(job: Job, now_ms: int) -> int | None:
    """The occurrence a tick at `now_ms` must run for a waiting rate job, or None when not checked."""
    period = RATE_PERIODS_MS.get(job.schedule or "")
    scheduled = job.scheduled_at
    if period is None or scheduled is None or job.attempt or job.deferred_at is not None:
        return None
    if job.end_at is not None or job.start_at is not None:
        return None
    if job.window_seconds:
        return spread_misfire_target(job, period, now_ms)
    policy = MisfirePolicy(job.misfire_policy)
    if scheduled >= now_ms - GRACE_MS or policy is MisfirePolicy.RUN_ALL:
        return scheduled
    if policy is MisfirePolicy.RUN_ONCE:  # the latest one due by now
        return scheduled + (now_ms - scheduled) // period * period
    return scheduled + -(-(now_ms - GRACE_MS - scheduled) // period) * period  # the first not missed
