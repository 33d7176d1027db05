"""Delivers a dead occurrence's summary to a job's alert route (`on_dead`: http, sqs or sns), signed
as deliveries are (docs/api.md, "Alert route").

An http route receives the summary as its body, with the delivery headers (`Idempotency-Key`,
`webhook-*`, `traceparent`); a queue or a topic receives the summary itself as its message, with
`signature` holding the Standard Webhooks headers computed over the summary without it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from sundial.contract.targets import AlertRoute, HttpTarget, SnsTarget, SqsTarget
from sundial.shared import tracing
from sundial.shared.targets import aws_delivery as aws
from sundial.shared.targets.dispatch import AwsClients, deliver
from sundial.shared.targets.keys import DeliveryKeys
from sundial.shared.targets.models import Delivery
from sundial.shared.targets.timeouts import timeout_bucket

# An alert is a message, not a run: a route gets this long to take it.
ALERT_TIMEOUT_SECONDS = 10.0


# A dead occurrence's notice keeps the fields it always had, and its kind.
MISSED_ONLY = {"missed", "reason", "until"}


class AlertNotice(BaseModel):
    """What an alert route receives when an occurrence dies (`kind` dead), or, with the job's
    `alert_on_missed`, when instants of its schedule are passed over for a misfire or an overlap
    (`kind` missed: `scheduled_at` is the first of them, `missed` how many, up to `until`)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    name: str | None
    scheduled_at: str  # RFC 3339 UTC: the dead occurrence's instant, or the first missed one
    attempts: int  # the number of its last attempt (0 for missed instants)
    error: str | None  # its last attempt's error
    consecutive_failures: int  # the dead occurrences in a row, this one included
    trace_id: str | None = None  # the trace its last attempt carried
    kind: Literal["dead", "missed"] = "dead"
    missed: int | None = None
    reason: str | None = None  # misfire or overlap
    until: str | None = None  # the stretch of missed instants ends before this

    @property
    def idempotency_key(self) -> str:
        """The same for every try of one alert: a route can take it once."""
        suffix = "on_dead" if self.kind == "dead" else "on_missed"
        return f"{self.job_id}:{self.scheduled_at}:{suffix}"

    def as_delivery(self) -> Delivery:
        trace = tracing.for_attempt(None, self.idempotency_key, self.attempts)
        if self.trace_id is not None:
            trace = tracing.TraceParent(self.trace_id, trace.span_id)
        return Delivery(
            job_id=self.job_id,
            scheduled_at=self.scheduled_at,
            attempt=self.attempts,
            idempotency_key=self.idempotency_key,
            payload=self.model_dump(mode="json", exclude=set() if self.kind == "missed" else MISSED_ONLY),
            traceparent=trace.header,
        )


def deliver_alert(
    route: AlertRoute,
    notice: AlertNotice,
    *,
    clients: AwsClients,
    allow_private: bool,
    keys: DeliveryKeys | None = None,
    timeout_seconds: float = ALERT_TIMEOUT_SECONDS,
) -> None:
    """Sends `notice` to `route`; returning means the route took it. Raises TargetError (its text
    says why) when it did not."""
    delivery = notice.as_delivery()
    keys = keys or DeliveryKeys()
    if isinstance(route, HttpTarget):
        deliver(
            route,
            delivery,
            timeout_seconds=timeout_seconds,
            clients=clients,
            allow_private=allow_private,
            keys=keys,
        )
        return
    body = _signed_json(delivery, keys)
    client = clients.client("sqs" if isinstance(route, SqsTarget) else "sns", timeout_bucket(timeout_seconds))
    fifo = aws.fifo_ids(delivery)
    if isinstance(route, SqsTarget):
        extra = fifo if route.queue_url.endswith(".fifo") else {}
        with aws.aws_errors(f"sqs SendMessage to {route.queue_url}"):
            client.send_message(QueueUrl=route.queue_url, MessageBody=body, **extra)
    elif isinstance(route, SnsTarget):
        extra = fifo if route.topic_arn.endswith(".fifo") else {}
        with aws.aws_errors(f"sns Publish to {route.topic_arn}"):
            client.publish(TopicArn=route.topic_arn, Message=body, **extra)


def _signed_json(delivery: Delivery, keys: DeliveryKeys) -> str:
    summary: Any = delivery.payload
    unsigned = json.dumps(summary, separators=(",", ":"))
    if keys.signer is None:
        return unsigned
    signature = keys.signer.headers(delivery.message_id, unsigned.encode())
    return json.dumps({**summary, "signature": signature}, separators=(",", ":"))
