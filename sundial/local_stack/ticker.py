"""Fires the scheduler handler the way EventBridge's rate rule does: once at start, then on every
multiple of the tick period (so a 60 s tick lands on each minute, as in AWS)."""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sundial.local_stack.lambda_context import ACCOUNT_ID, new_context

logger = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any], Any], Any]


def next_boundary(now: float, period: float) -> float:
    """The first multiple of `period` (in epoch seconds) strictly after `now`."""
    return (math.floor(now / period) + 1) * period


def scheduled_event(region: str, when: float) -> dict[str, Any]:
    """An EventBridge "Scheduled Event", as the deployed rule delivers it."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{ACCOUNT_ID}:rule/sundial-tick"],
        "detail": {},
    }


class Ticker:
    """One thread; a tick that outlasts its period makes the next boundary be skipped, not doubled."""

    def __init__(self, handler: Handler, period_seconds: float, region: str, stop: threading.Event) -> None:
        self._handler = handler
        self._period = period_seconds
        self._region = region
        self._stop = stop
        self._thread = threading.Thread(target=self._loop, name="tick", daemon=True)

    def start(self) -> Ticker:
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _loop(self) -> None:
        last = time.time()
        self._fire(last)
        while True:
            # Strictly after the last boundary too: a wait that returns a hair early must not fire twice.
            due = next_boundary(max(time.time(), last), self._period)
            if self._stop.wait(max(0.0, due - time.time())):
                return
            self._fire(due)
            last = due

    def _fire(self, when: float) -> None:
        try:
            event = scheduled_event(self._region, when)
            result = self._handler(event, new_context("scheduler", self._region))
        except Exception:
            # EventBridge would not retry a failed tick either; the next one catches up.
            logger.exception("tick failed")
            return
        logger.debug("tick: %s", result)  # the handler logs its own report
