"""Limits per key in the job table, as the API sets and reads them: one registry item per key
(`LIMITS` / key) for reading and listing, and the share of the limit each of the key's shard items
holds (sundial/shared/store/limit_shards.py).

Deleting a limit leaves a tombstone in the registry and deactivates the shards, never deletes them:
an attempt that took a slot still finds its shard to return it to, and a later PUT takes over what
still runs.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from sundial.shared import constants as c
from sundial.shared.errors import InvalidInput, LimitNotFound
from sundial.shared.limits import LimitConfig, shard_count, share_of
from sundial.shared.store import items
from sundial.shared.store.limit_shards import LimitShards, Shard, load_shard, shard_key
from sundial.shared.store.writes import Item, retry_conflicts

REGISTRY_PK = "LIMITS"


def registry_key(key: str) -> Item:
    return {c.PARTITION_KEY: {"S": REGISTRY_PK}, c.SORT_KEY: {"S": key}}


class LimitStore(LimitShards):
    """The limits' registry and shards: PUT, GET, list and DELETE, and the shard reads the worker's
    gate decides on. The writes that take and keep slots are the job writes' partners (shard_take,
    shard_keep), made in the same transaction as the job's; a settled attempt's return_slot follows
    its settle."""

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
        return [load_shard(config.key, n, found.get(f"LIMIT#{config.key}#{n}")) for n in range(config.shards)]

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
            "#active": "active",
            "#holders": "holders",
            "#waiters": "waiters",
            "#share": "share",
            "#shards": "shards",
        }
        values: dict[str, Any] = {
            ":empty": {"M": {}},
            ":active": {"BOOL": share is not None},
            ":shards": {"N": str(config.shards if config is not None else 1)},
        }
        sets = [
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


def _key_token(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _token_key(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("next_token is not one this API gave", field="next_token") from None


__all__ = ["LimitStore"]
