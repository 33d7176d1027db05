"""Handlers the local stack and its tests rely on: one that succeeds, one that never does."""

from __future__ import annotations

from sundial.shared.targets.models import Delivery
from sundial.shared.targets.registry import python_handler


@python_handler("noop")
def noop(delivery: Delivery) -> None:
    """Succeeds without doing anything."""


@python_handler("fail")
def fail(delivery: Delivery) -> None:
    """Always fails, so retries, backoff and DEAD can be exercised end to end.

    Raises RuntimeError, every time.
    """
    raise RuntimeError("fail handler always fails")
