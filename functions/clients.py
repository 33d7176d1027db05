"""Settings and boto3 clients, built on first use and cached for the life of the execution environment.

Nothing is built at import time, so tests (and the local stack) can set the environment first and
call `reset()` to start over with new settings.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
from botocore.config import Config

from functions.settings import Settings
from shared import constants as c
from shared.clock import SystemClock
from shared.dispatch import Dispatcher
from shared.store import JobStore
from shared.targets import AwsClients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

T = TypeVar("T")

# One lock for every cache: the local stack may call the handlers from several threads at once, and
# building two boto3 clients concurrently from the default session is not safe.
_lock = threading.RLock()
_caches: dict[Callable[[], Any], list[Any]] = {}

# A synchronous Invoke lasts as long as the function runs, and botocore would retry a timed-out Invoke
# by invoking the function again: a long read timeout and no retries (see shared.targets.AwsClients).
_LAMBDA_CONFIG = Config(
    read_timeout=c.WORKER_FUNCTION_TIMEOUT_SECONDS + 60, connect_timeout=10, retries={"total_max_attempts": 1}
)
_DEFAULT_CONFIG = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard"})


def lazy(build: Callable[[], T]) -> Callable[[], T]:
    """Caches what `build` returns until `reset()`."""
    cell: list[Any] = []
    _caches[build] = cell

    def get() -> T:
        with _lock:
            if not cell:
                cell.append(build())
            value: T = cell[0]
            return value

    return get


def reset() -> None:
    """Forgets every cached setting, client and service: the next call reads the environment again."""
    with _lock:
        for cell in _caches.values():
            cell.clear()


@lazy
def settings() -> Settings:
    return Settings()


class Clients:
    """boto3 clients for one set of settings; also what shared.targets.deliver calls for AWS targets."""

    def __init__(self, config: Settings) -> None:
        self._endpoint_url = config.endpoint_url
        self._built: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        with _lock:
            if service not in self._built:
                config = _LAMBDA_CONFIG if service == "lambda" else _DEFAULT_CONFIG
                self._built[service] = boto3.client(
                    service,  # type: ignore[call-overload]
                    endpoint_url=self._endpoint_url,
                    config=config,
                )
            return self._built[service]

    def dynamodb(self) -> DynamoDBClient:
        client: DynamoDBClient = self.client("dynamodb")
        return client

    def sqs(self) -> SQSClient:
        client: SQSClient = self.client("sqs")
        return client


@lazy
def clients() -> Clients:
    return Clients(settings())


def aws_clients() -> AwsClients:
    return clients()


def own_queue_urls() -> frozenset[str]:
    """Sundial's priority and dead-letter queues: what an sqs target may not name."""
    config = settings()
    return frozenset((*config.queue_urls.values(), config.dead_letter_queue_url))


@lazy
def store() -> JobStore:
    return JobStore(clients().dynamodb(), settings().table_name, SystemClock())


@lazy
def dispatcher() -> Dispatcher:
    config = settings()
    return Dispatcher(
        clients().sqs(),
        config.queue_urls,
        config.dead_letter_queue_url,
        SystemClock(),
        config.extra_lead_seconds,
    )
