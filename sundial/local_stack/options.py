"""What `sundial local` can be told, and how the jobs it runs at once are split between the queues."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c

DEFAULT_PORT = 8000
DEFAULT_WORKERS = 30
DEFAULT_STATE_DIR = Path(".sundial")
# `sundial local` hands its state directory to the emulator it starts through these, as it does its
# faults; a developer may set them too.
STATE_DIR_ENV = "SUNDIAL_STATE_DIR"
EPHEMERAL_ENV = "SUNDIAL_EPHEMERAL"
# Jobs at once per queue, in the proportions of the deployed stack's default MaximumConcurrency
# (50:20:5, infra/settings.py), so that a burst drains in priority order here as it does there.
POOL_WEIGHTS = {Priority.HIGH: 10, Priority.MEDIUM: 4, Priority.LOW: 1}


@dataclass(frozen=True)
class LocalOptions:
    port: int = DEFAULT_PORT
    endpoint_url: str | None = None  # None: start an emulator of our own
    tick_seconds: float = c.TICK_SECONDS
    workers: int = DEFAULT_WORKERS
    allow_private: bool = True
    state_dir: Path | None = None  # None: the emulator keeps its tables in memory only
    handlers: tuple[str, ...] = ()  # modules of one's own python handlers (docs/handlers.md)


def state_dir(
    given: str | None, ephemeral: bool | None, environ: Mapping[str, str] = os.environ
) -> Path | None:
    """Where the tables live (None: in memory only). An option given wins over the environment:
    --ephemeral, --state-dir, then $SUNDIAL_EPHEMERAL=1, $SUNDIAL_STATE_DIR, else .sundial/ here.
    An absolute path, so that a child started elsewhere finds the same directory."""
    if ephemeral:
        return None
    if given:
        return Path(given).absolute()
    if environ.get(EPHEMERAL_ENV, "").lower() in ("1", "true", "yes"):
        return None
    return Path(environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR).absolute()


def state_environment(path: Path | None) -> dict[str, str]:
    """What the emulator child of `sundial local` reads to keep its tables where `path` says."""
    return {STATE_DIR_ENV: str(path), EPHEMERAL_ENV: ""} if path else {EPHEMERAL_ENV: "1"}


def pool_sizes(workers: int) -> dict[Priority, int]:
    """Splits `workers` jobs at once between the queues by POOL_WEIGHTS, at least one each."""
    total = sum(POOL_WEIGHTS.values())
    return {priority: max(1, workers * weight // total) for priority, weight in POOL_WEIGHTS.items()}


def handler_modules(given: str | None) -> tuple[str, ...]:
    """`my_package,other.module` as the module names, in order."""
    return tuple(name.strip() for name in (given or "").split(",") if name.strip())
