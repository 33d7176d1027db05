"""Limits per key in the job table: one registry item per key (`LIMITS` / key), for listing and
reading, and the key's shard items (`LIMIT#<key>#<n>` / `SLOTS`), each with its share of the limit
and its state: holders, waiters and a token bucket (sundial/shared/limits/gate.py).

A shard item is never deleted: deleting a limit deactivates its shards, so an attempt that took a
slot still finds its shard to return it to, and a later PUT takes over what still runs. Every change
of a shard's holders or tokens by a fence is conditional on the shard's version; the settle and the
heartbeat change only their own holder, in the same transaction as the job's write.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from sundial.shared import constants as c
from sundial.shared.errors import InvalidInput, LimitNotFound
from sundial.shared.limits import LimitConfig, ShardShare, ShardState, Waiter, shard_count, share_of
from sundial.shared.store import items
from sundial.shared.store.writes import Item, StoreWrites, retry_conflicts

REGISTRY_PK = "LIMITS"
SHARD_SK = "SLOTS"
# TransactWriteItems takes 100 items: the registry item and every shard of a key fit in one.
MAX_LIMIT_WRITE_ITEMS = 100


def shard_key(key: str, shard: int) -> Item:
    return {c.PARTITION_KEY: {"S": f"LIMIT#{key}#{shard}"}, c.SORT_KEY: {"S": SHARD_SK}}


def registry_key(key: str) -> Item:
    return {c.PARTITION_KEY: {"S": REGISTRY_PK}, c.SORT_KEY: {"S": key}}


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


def _waiter_text(waiter: Waiter) -> str:
    return f"{waiter.rank}|{waiter.since}|{waiter.until}"


def _waiter(text: str) -> Waiter:
    rank, since, until = text.rsplit("|", 2)
    return Waiter(rank, int(since), int(until))


def _number(value: float | int) -> dict[str, str]:
    return {"N": repr(float(value)) if isinstance(value, float) else str(value)}


class LimitStore(StoreWrites):
    """The limits' registry and shards: PUT, GET, list and DELETE, and the shard reads the worker's
    gate decides on. The writes that take, keep and return slots are the job writes' partners
    (shard_take, shard_keep, shard_return), made in the same transaction as the job's."""

    # --- the API ----------------------------------------------------------------------------------

    def put_limit(
        self, key: str, max_concurrent: int | None, per_second: float | None, burst: int, now_ms: int
    ) -> LimitConfig:
        before = self._registry(key, deleted_too=True)
        shards = shard_count(max_concurrent, per_second)
        config = LimitConfig(key, max_concurrent, per_second, burst, shards, now_ms)
        record: dict[str, Any] = {
            c.PARTITION_KEY: REGISTRY_PK,
            c.SORT_KEY: key,
            "shards": shards,
            "burst": burst,
            "updated_at": now_ms,
        }
        if max_concurrent is not None:
            record["max_concurrent"] = max_concurrent
        if per_second is not None:
            record["per_second"] = items.serialize({"v": per_second})["v"]
        writes: list[Any] = [{"Put": {"TableName": self._table, "Item": _registry_item(record)}}]
        spread = max(shards, before.shards if before is not None else 0)
        writes += [self._share_update(config, shard) for shard in range(spread)]
        retry_conflicts(lambda: self._client.transact_write_items(TransactItems=writes))
        return config

    def delete_limit(self, key: str) -> None:
        before = self._registry(key)
        if before is None:
            raise LimitNotFound(f"no limit for key '{key}'", field="key")
        # A tombstone, not a delete: it keeps the shard count for a later PUT, and the API's role
        # deletes no item.
        tombstone = {c.PARTITION_KEY: REGISTRY_PK, c.SORT_KEY: key, "deleted": True}
        tombstone |= {"shards": before.shards, "burst": before.burst, "updated_at": self._clock.now_ms()}
        writes: list[Any] = [{"Put": {"TableName": self._table, "Item": items.serialize(tombstone)}}]
        writes += [self._share_update(None, shard, key) for shard in range(before.shards)]
        retry_conflicts(lambda: self._client.transact_write_items(TransactItems=writes))

    def limit(self, key: str) -> LimitConfig:
        config = self._registry(key)
        if config is None:
            raise LimitNotFound(f"no limit for key '{key}'", field="key")
        return config

    def limits(self, limit: int, next_token: str | None) -> tuple[list[LimitConfig], str | None]:
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": c.PARTITION_KEY},
            "ExpressionAttributeValues": {":pk": {"S": REGISTRY_PK}},
            "Limit": limit,
            "ConsistentRead": True,
        }
        if next_token:
            request["ExclusiveStartKey"] = registry_key(_token_key(next_token))
        configs: list[LimitConfig] = []
        # Tombstones are skipped: a page is short of `limit` only when no more limits follow.
        while True:
            page = self._client.query(**request)
            for item in page.get("Items", []):
                if "deleted" not in item and len(configs) < limit:
                    configs.append(_config(item))
            last = page.get("LastEvaluatedKey")
            if last is None:
                return configs, None
            if len(configs) >= limit:
                return configs, _key_token(configs[-1].key)
            request["ExclusiveStartKey"] = last

    def shards_of(self, config: LimitConfig) -> list[Shard]:
        """Every shard of a key, as they are now (one batch read)."""
        keys = [shard_key(config.key, n) for n in range(config.shards)]
        found: dict[str, Item] = {}
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {
                self._table: {"Keys": keys[start : start + 100], "ConsistentRead": True}
            }
            while request:
                response = self._client.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(self._table, []):
                    found[item[c.PARTITION_KEY]["S"]] = item
                request = response.get("UnprocessedKeys") or {}
        return [_shard(config.key, n, found.get(f"LIMIT#{config.key}#{n}")) for n in range(config.shards)]

    # --- the worker -------------------------------------------------------------------------------

    def limit_shard(self, key: str, shard: int) -> Shard:
        """One shard of a key, read consistently; a key without a limit reads as a shard with no share."""
        found = self._client.get_item(TableName=self._table, Key=shard_key(key, shard), ConsistentRead=True)
        return _shard(key, shard, found.get("Item"))

    def shard_take(
        self,
        shard: Shard,
        job_id: str,
        lease_until: int | None,
        tokens: float | None,
        now_ms: int,
        expired: tuple[str, ...],
    ) -> dict[str, Any]:
        """The shard's part of a fence that takes a slot (`lease_until`) and a token (`tokens` left):
        conditional on the shard being as it was read and still limited."""
        names = {"#version": "version", "#active": "active", "#waiters": "waiters", "#job": job_id}
        values: dict[str, Any] = {":seen": {"N": str(shard.state.version)}, ":one": {"N": "1"}}
        values[":yes"] = {"BOOL": True}
        sets = ["#version = #version + :one"]
        removes = ["#waiters.#job"]
        if lease_until is not None:
            names["#holders"] = "holders"
            sets.append("#holders.#job = :lease")
            values[":lease"] = {"N": str(lease_until)}
        if tokens is not None:
            names.update({"#tokens": "tokens", "#refilled": "refilled_at"})
            sets += ["#tokens = :tokens", "#refilled = :now"]
            values.update({":tokens": _number(tokens), ":now": {"N": str(now_ms)}})
        _remove_expired(shard, expired, job_id, names, removes)
        return {
            "Update": {
                "TableName": self._table,
                "Key": shard_key(shard.key, shard.number),
                "UpdateExpression": f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
                "ConditionExpression": "#version = :seen AND #active = :yes",
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
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

    def shard_return(self, slot: str, job_id: str, mean_attempt_ms: int | None) -> dict[str, Any]:
        """The shard's part of a settle: the slot is given back (and the key's mean attempt time kept)."""
        key, shard = parse_slot(slot)
        update = "REMOVE #holders.#job"
        names = {"#holders": "holders", "#job": job_id}
        values: dict[str, Any] = {}
        if mean_attempt_ms is not None:
            update = f"SET #mean = :mean {update}"
            names["#mean"] = "mean_attempt_ms"
            values[":mean"] = {"N": str(mean_attempt_ms)}
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": shard_key(key, shard),
            "UpdateExpression": update,
            "ExpressionAttributeNames": names,
        }
        if values:
            request["ExpressionAttributeValues"] = values
        return {"Update": request}

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
        _remove_expired(shard, drop, job_id, names, removes)
        if leaving:
            names["#job"] = job_id
            removes.append("#waiters.#job")
        parts = []
        if waiter is not None:
            names["#job"] = job_id
            values[":waiter"] = {"S": _waiter_text(waiter)}
            parts.append("SET #waiters.#job = :waiter")
        if removes:
            parts.append(f"REMOVE {', '.join(removes)}")
        if not parts:
            return
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": shard_key(shard.key, shard.number),
            "UpdateExpression": " ".join(parts),
            "ConditionExpression": "attribute_exists(#waiters)",
            "ExpressionAttributeNames": names,
        }
        if values:
            request["ExpressionAttributeValues"] = values
        try:
            self._client.update_item(**request)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def reserve_look(self, shard: Shard, spacing_ms: int, floor_ms: int) -> int:
        """The next instant of the shard's queue of looks: `spacing_ms` after the last one given, and
        after `floor_ms`. An atomic add, so that many held back at once each get their own instant;
        a queue whose last instant has passed starts again from the floor."""
        key = shard_key(shard.key, shard.number)
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
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            return max(add(), floor_ms)  # another arrival restarted it first: take the next after
        return floor_ms + spacing_ms

    def leave_line(self, shard: Shard, job_id: str) -> None:
        """Gives up a waiter's place: its occurrence was cancelled, paused or moved on."""
        if job_id not in shard.state.waiters:
            return
        self.wait_in_line(shard, job_id, None, (), leaving=True)

    # --- helpers ----------------------------------------------------------------------------------

    def _registry(self, key: str, deleted_too: bool = False) -> LimitConfig | None:
        found = self._client.get_item(TableName=self._table, Key=registry_key(key), ConsistentRead=True)
        item = found.get("Item")
        if not item or ("deleted" in item and not deleted_too):
            return None
        return _config(item)

    def _share_update(self, config: LimitConfig | None, shard: int, key: str | None = None) -> dict[str, Any]:
        """Writes a shard's share (or, without a config, deactivates it), keeping its state."""
        share = share_of(config, shard) if config is not None and shard < config.shards else None
        names = {
            "#version": "version",
            "#active": "active",
            "#holders": "holders",
            "#waiters": "waiters",
            "#share": "share",
            "#shards": "shards",
        }
        values: dict[str, Any] = {
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
            ":empty": {"M": {}},
            ":active": {"BOOL": share is not None},
            ":shards": {"N": str(config.shards if config is not None else 1)},
        }
        sets = [
            "#version = if_not_exists(#version, :zero) + :one",
            "#active = :active",
            "#holders = if_not_exists(#holders, :empty)",
            "#waiters = if_not_exists(#waiters, :empty)",
            "#shards = :shards",
        ]
        update = f"SET {', '.join(sets)}"
        if share is not None:
            values[":share"] = {"S": json.dumps(share.__dict__)}
            update = update.replace("#active = :active", "#active = :active, #share = :share")
        else:
            update += " REMOVE #share"
        name = config.key if config is not None else key
        assert name is not None
        return {
            "Update": {
                "TableName": self._table,
                "Key": shard_key(name, shard),
                "UpdateExpression": update,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
        }


def _remove_expired(
    shard: Shard, expired: tuple[str, ...], job_id: str, names: dict[str, str], removes: list[str]
) -> None:
    for n, other in enumerate(expired):
        if other == job_id:
            continue
        names[f"#x{n}"] = other
        if other in shard.state.holders:
            names["#holders"] = "holders"
            removes.append(f"#holders.#x{n}")
        if other in shard.state.waiters:
            names["#waiters"] = "waiters"
            removes.append(f"#waiters.#x{n}")


def _registry_item(record: dict[str, Any]) -> Item:
    per_second = record.pop("per_second", None)
    item = items.serialize(record)
    if per_second is not None:
        item["per_second"] = per_second
    return item


def _config(item: Item) -> LimitConfig:
    """A registry item's limit; a tombstone's is only its shard count."""
    values = items.deserialize(item)
    per_second = values.get("per_second")
    return LimitConfig(
        key=str(values[c.SORT_KEY]),
        max_concurrent=int(values["max_concurrent"]) if "max_concurrent" in values else None,
        per_second=float(per_second) if per_second is not None else None,
        burst=int(values["burst"]),
        shards=int(values["shards"]),
        updated_at=int(values["updated_at"]),
    )


def _shard(key: str, number: int, item: Item | None) -> Shard:
    if not item:
        return Shard(key, number, 1, None, ShardState())
    values = items.deserialize(item)
    share = None
    if values.get("active") and "share" in values:
        raw = json.loads(str(values["share"]))
        share = ShardShare(raw["max_concurrent"], raw["per_second"], int(raw["burst"]))
    state = ShardState(
        holders={job: int(end) for job, end in dict(values.get("holders", {})).items()},
        waiters={job: _waiter(str(text)) for job, text in dict(values.get("waiters", {})).items()},
        tokens=float(values["tokens"]) if "tokens" in values else None,
        refilled_at=int(values["refilled_at"]) if "refilled_at" in values else None,
        mean_attempt_ms=int(values["mean_attempt_ms"]) if "mean_attempt_ms" in values else None,
        version=int(values.get("version", 0)),
        next_look=int(values["next_look"]) if "next_look" in values else None,
    )
    return Shard(key, number, int(values.get("shards", 1)), share, state)


def _key_token(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _token_key(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("next_token is not one this API gave", field="next_token") from None


__all__ = ["LimitStore", "Shard", "parse_slot", "shard_key", "slot_name"]
