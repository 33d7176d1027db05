"""The two entry points: judge a target when a job is created, deliver an occurrence to it."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from sundial.contract.targets import (
    EventBridgeTarget,
    HttpTarget,
    LambdaTarget,
    PythonTarget,
    SnsTarget,
    SqsTarget,
    Target,
)
from sundial.shared.errors import InvalidInput
from sundial.shared.targets import aws_delivery as aws
from sundial.shared.targets.errors import TargetError, describe
from sundial.shared.targets.http_delivery import deliver_http, inline_secrets
from sundial.shared.targets.keys import DeliveryKeys
from sundial.shared.targets.models import Delivery
from sundial.shared.targets.queues import QUEUE_URL_FIELD, names_own_queue, own_queue_refusal
from sundial.shared.targets.registry import check_handler, run_handler
from sundial.shared.targets.secrets import scrubbed
from sundial.shared.targets.timeouts import timeout_bucket
from sundial.shared.targets.validation import check_http_target

AwsService = Literal["lambda", "sqs", "sns", "events"]


class AwsClients(Protocol):
    """Lazily built boto3 clients, given by the caller so that sundial/shared/ never builds its own."""

    def client(self, service: AwsService, timeout_seconds: float) -> Any:
        """A client for `service` whose calls, retries included, end within `timeout_seconds`:
        build it with `aws_client_config(service, timeout_seconds)`.

        deliver asks only for limits on a coarse grid (whole seconds), so keeping one client per
        (service, timeout_seconds) keeps few of them.
        """
        ...


def check_target(
    target: Target, *, allow_private: bool, forbidden_queue_urls: frozenset[str] = frozenset()
) -> None:
    """Create-time validation of what a job will run (docs/api.md: a bad target is a 400).

    `forbidden_queue_urls` are Sundial's own queues (priority and dead-letter), in any host form.

    Raises InvalidInput with field "target.url" (not https, or a literal link-local, metadata or,
    unless `allow_private`, non-public address), "target.headers" (a header a request cannot carry
    or that Sundial sets), "target.handler" (no python handler registered under that name) or
    "target.queue_url" (an sqs target naming one of `forbidden_queue_urls`).
    """
    if isinstance(target, HttpTarget):
        check_http_target(target, allow_private=allow_private)
    elif isinstance(target, PythonTarget):
        check_handler(target.handler)
    elif isinstance(target, SqsTarget) and names_own_queue(target.queue_url, forbidden_queue_urls):
        raise InvalidInput(own_queue_refusal(target.queue_url), field=QUEUE_URL_FIELD)


def deliver(
    target: Target,
    delivery: Delivery,
    *,
    timeout_seconds: float,
    clients: AwsClients,
    allow_private: bool,
    forbidden_queue_urls: frozenset[str] = frozenset(),
    keys: DeliveryKeys | None = None,
) -> None:
    """Runs one attempt of an occurrence on its target; returning means the target accepted it.

    Raises TargetError, and nothing else, when the attempt failed: its text says why. Raises its
    subclass TargetTimedOut when the attempt ran out of `timeout_seconds`, which every target type
    honours (a python handler only once it ends: it cannot be stopped). An sqs target naming one of
    `forbidden_queue_urls` fails without sending: a job stored before that check existed, or
    written around it, must still not reach Sundial's own queues. With `keys`, deliveries are signed
    and header references read; no error text shows a secret that `keys` read.
    """
    if isinstance(target, SqsTarget) and names_own_queue(target.queue_url, forbidden_queue_urls):
        raise TargetError(own_queue_refusal(target.queue_url))
    keys = keys or DeliveryKeys()
    own = inline_secrets(target) if isinstance(target, HttpTarget) else []
    try:
        _deliver(
            target,
            delivery,
            timeout_seconds=timeout_seconds,
            clients=clients,
            allow_private=allow_private,
            keys=keys,
        )
    except TargetError as exc:
        # A lambda's error message or an AWS error may repeat what it was sent.
        clean = scrubbed(exc.reason, [*own, *keys.known_values()])
        if clean == exc.reason:
            raise
        raise type(exc)(clean) from None
    except Exception as exc:
        # Anything unforeseen still becomes an attempt that failed with a reason, never a crashed worker.
        reason = scrubbed(f"{target.type} target failed: {describe(exc)}", [*own, *keys.known_values()])
        raise TargetError(reason) from exc


def _deliver(
    target: Target,
    delivery: Delivery,
    *,
    timeout_seconds: float,
    clients: AwsClients,
    allow_private: bool,
    keys: DeliveryKeys,
) -> None:
    signer = keys.signer
    if isinstance(target, HttpTarget):
        deliver_http(
            target, delivery, timeout_seconds=timeout_seconds, allow_private=allow_private, keys=keys
        )
    elif isinstance(target, LambdaTarget):
        aws.invoke_lambda(target, delivery, _client(clients, "lambda", timeout_seconds), signer)
    elif isinstance(target, SqsTarget):
        aws.send_sqs(target, delivery, _client(clients, "sqs", timeout_seconds), signer)
    elif isinstance(target, SnsTarget):
        aws.publish_sns(target, delivery, _client(clients, "sns", timeout_seconds), signer)
    elif isinstance(target, EventBridgeTarget):
        aws.put_event(target, delivery, _client(clients, "events", timeout_seconds), signer)
    else:
        run_handler(target.handler, delivery, timeout_seconds=timeout_seconds)


def _client(clients: AwsClients, service: AwsService, timeout_seconds: float) -> Any:
    return clients.client(service, timeout_bucket(timeout_seconds))
