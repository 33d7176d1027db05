"""A limit key's shard items (`LIMIT#<key>#<n>` / `SLOTS`): each with its share of the limit and
its state, holders, waiters and the rate's `rate_at` (sundial/shared/limits/gate.py); and beside each,
in a partition of its own, its queue of looks (`LOOKS#<key>#<n>` / `LOOKS`).
These are the worker's reads and writes: the fence's take and the heartbeat's keep are partners of
the job's own write, made in the same transaction; the return after a settle, a hold's place in line
and its instant to look again are writes of their own.

A shard item is never deleted (a deleted limit deactivates its shards), so an attempt that took a
slot always finds its shard to return it to.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from sundial.shared import constants as c
from sundial.shared.limits import ShardShare, ShardState, Waiter
from sundial.shared.limits.gate import rate_ceiling, start_interval_ms
from sundial.shared.store import items
from sundial.shared.store.writes import Item, StoreWrites, is_condition_failure

SHARD_SK = "SLOTS"
LOOKS_SK = "LOOKS"


def shard_key(key: str, shard: int) -> Item:
    return {c.PARTITION_KEY: {"S": f"LIMIT#{key}#{shard}"}, c.SORT_KEY: {"S": SHARD_SK}}


def looks_key(key: str, shard: int) -> Item:
    """The item of a shard's queue of looks: a partition of its own, so that a burst of arrivals
    each taking an instant does not spend the shard's partition, which its starts need."""
    return {c.PARTITION_KEY: {"S": f"LOOKS#{key}#{shard}"}, c.SORT_KEY: {"S": LOOKS_SK}}


def slot_name(key: str, shard: int) -> str:
    """What a job that took a slot records: its key and shard, to return the slot to."""
    return f"{shard}#{key}"


def parse_slot(slot: str) -> tuple[str, int]:
    shard, key = slot.split("#", 1)
    return key, int(shard)


@dataclass(frozen=True)
class Shard:
    """One shard as read: its share of the limit (None once its key's limit is gone) and state."""

    key: str
    number: int
    shards: int
    share: ShardShare | None
    state: ShardState
    share_text: str | None = None  # the share as stored: a start is conditional on it


def _waiter_text(job_id: str, waiter: Waiter) -> str:
    """A waiter as stored: its rank without the job id that ends it (the entry's name already is the
    id), to keep a full line within a kilobyte, a write unit."""
    return f"{waiter.rank.removesuffix(job_id)}|{waiter.since}|{waiter.until}"


def _waiter(job_id: str, text: str) -> Waiter:
    rank, since, until = text.rsplit("|", 2)
    return Waiter(rank + job_id, int(since), int(until))


def _number(value: float | int) -> dict[str, str]:
    """A number as DynamoDB gives it back: a whole one without a fraction."""
    if isinstance(value, float) and not value.is_integer():
        return {"N": repr(value)}
    return {"N": str(int(value))}


class LimitShards(StoreWrites):
    """The shards' reads and writes, for the worker's gate."""

    def limit_shard(self, key: str, shard: int) -> Shard:
        """One shard of a key, read consistently; a key without a limit reads as a shard with no share."""
        found = self._client.get_item(TableName=self._table, Key=shard_key(key, shard), ConsistentRead=True)
        return load_shard(key, shard, found.get("Item"))

    def shard_take(
        self,
        shard: Shard,
        job_id: str,
        lease_until: int | None,
        needed: int,
        now_ms: int,
        expired: tuple[str, ...],
        booked: bool = False,
    ) -> dict[str, Any]:
        """The shard's part of a fence that takes a slot (`lease_until`) and a token: conditional on
        the limit being the one read, and on `needed` slots and tokens being there still (the arrival
        and the live waiters ranked before it). Not on the shard being as read: starts side by side
        on a shard with room each find their slot and token, where a condition on its version let
        one of them through and sent the others to read and write again. A `booked` start took its
        token when it was held back: its part is a check that the limit is still the one it booked
        under."""
        if booked:
            return self._booked_take(shard)
        share = shard.share
        assert share is not None and shard.share_text is not None
        names = {"#share": "share", "#waiters": "waiters", "#job": job_id}
        values: dict[str, Any] = {":share": {"S": shard.share_text}}
        conditions = ["#share = :share"]
        sets: list[str] = []
        removes = ["#waiters.#job"]
        gone = _remove_expired(shard, expired, job_id, names, values, removes, conditions)
        if lease_until is not None:
            assert share.max_concurrent is not None
            names["#holders"] = "holders"
            sets.append("#holders.#job = :lease")
            values[":lease"] = {"N": str(lease_until)}
            # size() counts what the item holds before this write: the holders it removes (each
            # conditional on being there as read, see _remove_expired) and this job's own old entry.
            mine = job_id in shard.state.holders
            conditions.append(f"{'attribute_exists' if mine else 'attribute_not_exists'}(#holders.#job)")
            conditions.append("size(#holders) <= :most")
            values[":most"] = {"N": str(share.max_concurrent - needed + gone + int(mine))}
        interval = start_interval_ms(share)
        if interval is not None:
            names["#rate_at"] = "rate_at"
            seen = shard.state.rate_at
            if seen is not None and seen >= now_ms:
                # The bucket is in use: the start's time goes on the end of what is taken.
                sets.append("#rate_at = #rate_at + :interval")
                conditions.append("#rate_at BETWEEN :now AND :ceiling")
                values[":now"] = {"N": str(now_ms)}
                values[":interval"] = _number(interval)
                values[":ceiling"] = _number(rate_ceiling(share, now_ms, needed))
            else:
                # A full bucket: from now, if it still is.
                sets.append("#rate_at = :restart")
                values[":restart"] = _number(now_ms + interval)
                if seen is not None:
                    conditions.append("#rate_at < :now")
                    values[":now"] = {"N": str(now_ms)}
                else:
                    conditions.append("attribute_not_exists(#rate_at)")
        update = f"REMOVE {', '.join(removes)}"
        if sets:
            update = f"SET {', '.join(sets)} {update}"
        return {
            "Update": {
                "TableName": self._table,
                "Key": shard_key(shard.key, shard.number),
                "UpdateExpression": update,
                "ConditionExpression": " AND ".join(conditions),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }

    def _booked_take(self, shard: Shard) -> dict[str, Any]:
        assert shard.share_text is not None
        return {
            "ConditionCheck": {
                "TableName": self._table,
                "Key": shard_key(shard.key, shard.number),
                "ConditionExpression": "#share = :share",
                "ExpressionAttributeNames": {"#share": "share"},
                "ExpressionAttributeValues": {":share": {"S": shard.share_text}},
            }
        }

    def shard_keep(self, slot: str, job_id: str, lease_until: int) -> dict[str, Any]:
        """The shard's part of a heartbeat: the holder's lease moves with the job's, as long as the
        holder is still there (a holder removed after its lease ended has lost its slot)."""
        key, shard = parse_slot(slot)
        return {
            "Update": {
                "TableName": self._table,
                "Key": shard_key(key, shard),
                "UpdateExpression": "SET #holders.#job = :lease",
                "ConditionExpression": "attribute_exists(#holders.#job)",
                "ExpressionAttributeNames": {"#holders": "holders", "#job": job_id},
                "ExpressionAttributeValues": {":lease": {"N": str(lease_until)}},
            }
        }

    def return_slot(
        self,
        slot: str,
        job_id: str,
        holder_ends: tuple[int, ...],
        last_attempt_ms: int | None,
    ) -> bool:
        """Gives a settled attempt's slot back, with the time the attempt took (it sizes waits).

        Its own write after the settle, conditional on the holder's end being the attempt's lease
        (one of `holder_ends`: the lease it last wrote, or one a beat that failed may have written): a later
        attempt of the job that took a slot of the shard since holds it under its own lease, and
        keeps it. False when the holder is no longer this attempt's."""
        key, shard = parse_slot(slot)
        update = "REMOVE #holders.#job"
        names = {"#holders": "holders", "#job": job_id}
        values: dict[str, Any] = {f":until{n}": {"N": str(end)} for n, end in enumerate(holder_ends)}
        if last_attempt_ms is not None:
            update = f"SET #last = :last {update}"
            names["#last"] = "last_attempt_ms"
            values[":last"] = {"N": str(last_attempt_ms)}
        try:
            self._client.update_item(
                TableName=self._table,
                Key=shard_key(key, shard),
                UpdateExpression=update,
                ConditionExpression=f"#holders.#job IN ({', '.join(values)})",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return False
        return True

    def wait_in_line(
        self,
        shard: Shard,
        job_id: str,
        waiter: Waiter | None,
        drop: tuple[str, ...],
        leaving: bool = False,
    ) -> None:
        """Keeps a held-back occurrence's place in its shard's line (or only drops the waiters and
        holders whose time is over, and those its place pushed out); `leaving` gives its place up."""
        names: dict[str, str] = {"#waiters": "waiters"}
        values: dict[str, Any] = {}
        removes: list[str] = []
        conditions = ["attribute_exists(#waiters)"]
        _remove_expired(shard, drop, job_id, names, values, removes, conditions)
        if leaving:
            names["#job"] = job_id
            removes.append("#waiters.#job")
        parts = []
        if waiter is not None:
            names["#job"] = job_id
            values[":waiter"] = {"S": _waiter_text(job_id, waiter)}
            parts.append("SET #waiters.#job = :waiter")
        if removes:
            parts.append(f"REMOVE {', '.join(removes)}")
        if not parts:
            return
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": shard_key(shard.key, shard.number),
            "UpdateExpression": " ".join(parts),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
        }
        if values:
            request["ExpressionAttributeValues"] = values
        try:
            self._client.update_item(**request)
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def book_token(self, shard: Shard, job_id: str, ceiling: float, now_ms: int) -> float | None:
        """Books a token for a held-back occurrence (sundial/shared/limits/gate.py, `Booking`): moves
        `rate_at` on one start's time, conditional on the share being the one read and on `rate_at`
        being in use and no later than `ceiling`; gives up the occurrence's place in line in the same
        write. Answers the token's time (`rate_at` before the write), or None when the condition
        failed: the horizon is booked, or the limit changed."""
        share = shard.share
        interval = start_interval_ms(share) if share is not None else None
        assert interval is not None and shard.share_text is not None
        names = {"#share": "share", "#rate_at": "rate_at"}
        update = "SET #rate_at = #rate_at + :interval"
        if job_id in shard.state.waiters:
            names.update({"#waiters": "waiters", "#job": job_id})
            update += " REMOVE #waiters.#job"
        try:
            answer = self._client.update_item(
                TableName=self._table,
                Key=shard_key(shard.key, shard.number),
                UpdateExpression=update,
                ConditionExpression="#share = :share AND #rate_at BETWEEN :now AND :ceiling",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={
                    ":share": {"S": shard.share_text},
                    ":interval": _number(interval),
                    ":now": {"N": str(now_ms)},
                    ":ceiling": _number(ceiling),
                },
                ReturnValues="ALL_OLD",
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return None
        return float(answer["Attributes"]["rate_at"]["N"])

    def reserve_look(self, shard: Shard, spacing_ms: int, floor_ms: int) -> int:
        """The next instant of the shard's queue of looks: `spacing_ms` after the last one given, and
        after `floor_ms`. An atomic add, so that many held back at once each get their own instant;
        a queue whose last instant has passed starts again from the floor."""
        key = looks_key(shard.key, shard.number)
        names = {"#next": "next_look"}

        def add() -> int:
            answer = self._client.update_item(
                TableName=self._table,
                Key=key,
                UpdateExpression="ADD #next :spacing",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={":spacing": {"N": str(spacing_ms)}},
                ReturnValues="ALL_NEW",
            )
            return int(answer["Attributes"]["next_look"]["N"])

        given = add()
        if given >= floor_ms:
            return given
        try:
            self._client.update_item(
                TableName=self._table,
                Key=key,
                UpdateExpression="SET #next = :restart",
                ConditionExpression="#next < :floor",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={
                    ":restart": {"N": str(floor_ms + spacing_ms)},
                    ":floor": {"N": str(floor_ms)},
                },
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return max(add(), floor_ms)  # another arrival restarted it first: take the next after
        return floor_ms + spacing_ms

    def leave_line(self, shard: Shard, job_id: str) -> None:
        """Gives up a waiter's place: its occurrence was cancelled, paused or moved on."""
        if job_id not in shard.state.waiters:
            return
        self.wait_in_line(shard, job_id, None, (), leaving=True)


def _remove_expired(
    shard: Shard,
    expired: tuple[str, ...],
    job_id: str,
    names: dict[str, str],
    values: dict[str, Any],
    removes: list[str],
    conditions: list[str],
) -> int:
    """Removes the holders and waiters whose time was over when the shard was read; a holder only
    while its entry is the one read (the same job may have taken a slot again since, under a live
    lease). Answers how many holders it removes."""
    holders = 0
    for n, other in enumerate(expired):
        if other == job_id:
            continue
        names[f"#x{n}"] = other
        if other in shard.state.holders:
            names["#holders"] = "holders"
            removes.append(f"#holders.#x{n}")
            conditions.append(f"#holders.#x{n} = :x{n}")
            values[f":x{n}"] = {"N": str(shard.state.holders[other])}
            holders += 1
        if other in shard.state.waiters:
            names["#waiters"] = "waiters"
            removes.append(f"#waiters.#x{n}")
    return holders


def load_shard(key: str, number: int, item: Item | None) -> Shard:
    if not item:
        return Shard(key, number, 1, None, ShardState())
    values = items.deserialize(item)
    share = None
    share_text = None
    if values.get("active") and "share" in values:
        share_text = str(values["share"])
        raw = json.loads(share_text)
        share = ShardShare(raw["max_concurrent"], raw["per_second"], int(raw["burst"]))
    state = ShardState(
        holders={job: int(end) for job, end in dict(values.get("holders", {})).items()},
        waiters={job: _waiter(job, str(text)) for job, text in dict(values.get("waiters", {})).items()},
        rate_at=float(values["rate_at"]) if "rate_at" in values else None,
        last_attempt_ms=int(values["last_attempt_ms"]) if "last_attempt_ms" in values else None,
    )
    return Shard(key, number, int(values.get("shards", 1)), share, state, share_text)


__all__ = ["SHARD_SK", "LimitShards", "Shard", "load_shard", "parse_slot", "shard_key", "slot_name"]
