"""What every part of the engine acts through: the table, the queues, and the time."""

from __future__ import annotations

from dataclasses import dataclass

from sundial.shared.clock import Clock
from sundial.shared.dispatch import Dispatcher
from sundial.shared.store import JobStore


@dataclass(frozen=True)
class EngineContext:
    store: JobStore
    dispatcher: Dispatcher
    clock: Clock
