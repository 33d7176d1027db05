"""Limits per key through the API: put, read, list and delete, each answered with what runs and waits
on the key now (docs/api.md, "Limits")."""

from __future__ import annotations

import re

from sundial.contract.bounds import LIMIT_KEY_PATTERN
from sundial.contract.limits import LimitList, LimitPut, LimitView
from sundial.shared.clock import Clock, format_rfc3339
from sundial.shared.errors import InvalidInput
from sundial.shared.limits import WAITERS_KEPT, LimitConfig
from sundial.shared.store import JobStore

MAX_LIMITS_PAGE = 100
SECOND_MS = 1000


class LimitService:
    def __init__(self, store: JobStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def put(self, key: str, request: LimitPut) -> LimitView:
        key = _checked(key)
        config = self._store.put_limit(
            key, request.max_concurrent, request.per_second, request.effective_burst, self._clock.now_ms()
        )
        return self._view(config)

    def get(self, key: str) -> LimitView:
        return self._view(self._store.limit(_checked(key)))

    def delete(self, key: str) -> LimitView:
        key = _checked(key)
        view = self._view(self._store.limit(key))
        self._store.delete_limit(key)
        return view

    def list(self, limit: int, next_token: str | None) -> LimitList:
        if not 1 <= limit <= MAX_LIMITS_PAGE:
            raise InvalidInput(f"limit must be 1-{MAX_LIMITS_PAGE}", field="limit")
        configs, token = self._store.limits(limit, next_token)
        return LimitList(limits=[self._view(config) for config in configs], next_token=token)

    def _view(self, config: LimitConfig) -> LimitView:
        now_ms = self._clock.now_ms()
        shards = self._store.shards_of(config)
        running = sum(len(shard.state.live_holders(now_ms)) for shard in shards)
        waiters = [w for shard in shards for w in shard.state.live_waiters(now_ms).values()]
        full = any(len(shard.state.live_waiters(now_ms)) >= WAITERS_KEPT for shard in shards)
        oldest = min((w.since for w in waiters), default=None)
        return LimitView(
            key=config.key,
            max_concurrent=config.max_concurrent,
            per_second=config.per_second,
            burst=config.burst,
            running=running,
            waiting=len(waiters),
            waiting_is_estimate=full,
            oldest_wait_seconds=None if oldest is None else max(0, now_ms - oldest) / SECOND_MS,
            shards=config.shards,
            updated_at=format_rfc3339(config.updated_at),
        )


def _checked(key: str) -> str:
    """A key the API takes, or InvalidInput naming `key`: it comes from the path, not a body model."""
    if not re.fullmatch(LIMIT_KEY_PATTERN, key):
        raise InvalidInput("the limit key must be 1-128 characters of A-Z a-z 0-9 . _ : / -", field="key")
    return key
