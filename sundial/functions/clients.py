"""Settings and boto3 clients, built on first use and cached for the life of the execution environment.

Nothing is built at import time, so tests (and the local stack) can set the environment first and
call `reset()` to start over with new settings.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import boto3
from botocore.config import Config

from sundial.functions.settings import Settings
from sundial.shared import constants as c
from sundial.shared.clock import SystemClock
from sundial.shared.dispatch import Dispatcher, SharedSends
from sundial.shared.service.sealing import HeaderSealer
from sundial.shared.store import DueShards, JobStore
from sundial.shared.targets import (
    AwsClients,
    DeliveryKeys,
    HeaderOpener,
    SecretResolver,
    Signer,
    aws_client_config,
)
from sundial.shared.targets.registry import import_handler_modules

if TYPE_CHECKING:
    from aws_lambda_powertools import Metrics
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

    from sundial.shared.service.service import JobService

T = TypeVar("T")
D = TypeVar("D", bound=Dispatcher)

# One lock for every cache: the local stack may call the handlers from several threads at once, and
# building two boto3 clients concurrently from the default session is not safe.
_lock = threading.RLock()
_caches: dict[Callable[[], Any], list[Any]] = {}

# Targets' clients are keyed by service and limit; the limits users pick are few, and this bounds
# the rest (a limit derived from a worker's remaining time) in a long-lived execution environment.
_TARGET_CLIENTS_KEPT = 32
_DEFAULT_CONFIG = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard"})
# Reading a secret is part of an attempt: a slow Secrets Manager or SSM must leave it time to deliver.
_SECRET_READ_CONFIG = Config(
    connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 2}
)


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
    """Read once per cold start, which also loads one's own python handlers: a module that cannot
    be imported fails the cold start, not the first attempt that names one of its handlers."""
    config = Settings()
    import_handler_modules(config.handler_modules)
    return config


def name_stack_on(metrics: Metrics) -> None:
    """From now on every metric `metrics` publishes names this function's stack: stages share the
    account and the namespace, and each stage's alarms read only the series that name its stack.
    Powertools keeps default dimensions across invocations; setting them again costs a dict update."""
    stack = settings().stack_name
    if stack is not None:
        metrics.set_default_dimensions(**{c.METRICS_STACK_DIMENSION: stack})


class Clients:
    """boto3 clients for one set of settings; also what shared.targets.deliver calls for AWS targets."""

    def __init__(self, config: Settings) -> None:
        self._endpoint_url = config.endpoint_url
        self._built: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        with _lock:
            if service not in self._built:
                self._built[service] = _build(service, self._endpoint_url, _DEFAULT_CONFIG)
            return self._built[service]

    def dynamodb(self) -> DynamoDBClient:
        client: DynamoDBClient = self.client("dynamodb")
        return client

    def sqs(self) -> SQSClient:
        client: SQSClient = self.client("sqs")
        return client


class TargetClients:
    """What shared.targets.deliver calls for AWS targets: one client per service and limit, each
    with timeouts and retries that fit its limit (shared.targets.aws_client_config)."""

    def __init__(self, endpoint_url: str | None, kept: int = _TARGET_CLIENTS_KEPT) -> None:
        self._endpoint_url = endpoint_url
        self._kept = kept
        self._built: OrderedDict[tuple[str, float], Any] = OrderedDict()

    def client(self, service: str, timeout_seconds: float) -> Any:
        key = (service, timeout_seconds)
        with _lock:
            if key in self._built:
                self._built.move_to_end(key)
            else:
                config = aws_client_config(service, timeout_seconds)
                self._built[key] = _build(service, self._endpoint_url, config)
                while len(self._built) > self._kept:
                    self._built.popitem(last=False)
            return self._built[key]


def _build(service: str, endpoint_url: str | None, config: Config) -> Any:
    return boto3.client(service, endpoint_url=endpoint_url, config=config)  # type: ignore[call-overload]


@lazy
def clients() -> Clients:
    return Clients(settings())


@lazy
def aws_clients() -> AwsClients:
    return TargetClients(settings().endpoint_url)


class SecretClients:
    """The secretsmanager and ssm clients delivery reads secrets with, each built when first asked."""

    def __init__(self, endpoint_url: str | None) -> None:
        self._endpoint_url = endpoint_url
        self._built: dict[str, Any] = {}

    def __call__(self, service: str) -> Any:
        with _lock:
            if service not in self._built:
                self._built[service] = _build(service, self._endpoint_url, _SECRET_READ_CONFIG)
            return self._built[service]


@lazy
def delivery_keys() -> DeliveryKeys:
    """The worker's: references resolved, sealed values opened and deliveries signed, each value
    kept for a minute."""
    config = settings()
    secret_clients = SecretClients(config.endpoint_url)
    signer = Signer(secret_clients, config.signing_secret_arn) if config.signing_secret_arn else None
    return DeliveryKeys(
        resolver=SecretResolver(secret_clients), signer=signer, opener=HeaderOpener(secret_clients)
    )


@lazy
def header_sealer() -> HeaderSealer:
    """The API's. Raises RuntimeError without a key: an inline secret is never stored in clear."""
    config = settings()
    if config.header_key_arn is None:
        raise RuntimeError(f"{c.ENV_HEADER_KEY_ARN} is not set: the API seals inline header values with it")
    return HeaderSealer(clients().client("kms"), config.header_key_arn)


@lazy
def store() -> JobStore:
    config = settings()
    shards = DueShards(config.due_shards, config.due_shards_before)
    return JobStore(clients().dynamodb(), config.table_name, SystemClock(), shards, config.retention_days)


@lazy
def dispatcher() -> Dispatcher:
    return _dispatching(Dispatcher)


@lazy
def worker_dispatcher() -> SharedSends:
    """The worker's: the records of a batch share their sends (shared.dispatch.SharedSends)."""
    return _dispatching(SharedSends)


def _dispatching(kind: type[D]) -> D:
    config = settings()
    return kind(
        clients().sqs(),
        config.queue_urls,
        config.dead_letter_queue_url,
        SystemClock(),
        config.extra_lead_seconds,
        config.precision,
    )


@lazy
def job_service() -> JobService:
    """The API's: it seals inline header values of the jobs it creates."""
    from sundial.shared.service.service import JobService  # noqa: PLC0415  # the worker never loads the service

    config = settings()
    return JobService(
        store(),
        dispatcher(),
        SystemClock(),
        config.allow_private_targets,
        list_indexes=config.ready_indexes,
        sealer=header_sealer(),
        history=config.history,
    )


@lazy
def acting_service() -> JobService:
    """The tick's, for the bulk operations it advances: it acts on jobs and never creates one."""
    from sundial.shared.service.service import JobService  # noqa: PLC0415  # the worker never loads the service

    config = settings()
    return JobService(
        store(), dispatcher(), SystemClock(), config.allow_private_targets, list_indexes=config.ready_indexes
    )
