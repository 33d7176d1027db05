"""The service's side of targets: the forms a new target must have, masking for answers, and what a
delivery carries. The target bodies themselves are the contract's (sundial/contract/targets.py); the
domain speaks of them by these names too.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

from sundial.contract.targets import (
    EVENT_BUS,
    EVENT_SOURCE,
    LAMBDA_ARN,
    LOCAL_QUEUE_URL,
    QUEUE_URL,
    SECRET_MASK,
    SHOWN_HEADERS,
    TOPIC_ARN,
    AnyTarget,
    EventBridgeTarget,
    HttpTarget,
    LambdaTarget,
    Sealed,
    SecretRef,
    SnsTarget,
    SqsTarget,
)
from sundial.shared.errors import InvalidInput

# (field, the form it must have, what to say when it does not)
_FORMS: dict[type[BaseModel], tuple[tuple[str, str, str], ...]] = {
    LambdaTarget: (
        (
            "function_arn",
            LAMBDA_ARN,
            "a Lambda function ARN: arn:<partition>:lambda:<region>:<12-digit account>:function:<name>"
            "[:<version or alias>]",
        ),
    ),
    SqsTarget: (
        (
            "queue_url",
            QUEUE_URL,
            "an SQS queue URL: https://sqs.<region>.amazonaws.com/<12-digit account>/<queue name>",
        ),
    ),
    SnsTarget: (
        ("topic_arn", TOPIC_ARN, "an SNS topic ARN: arn:<partition>:sns:<region>:<12-digit account>:<name>"),
    ),
    EventBridgeTarget: (
        (
            "event_bus_name",
            EVENT_BUS,
            "an event bus name, or its ARN: "
            "arn:<partition>:events:<region>:<12-digit account>:event-bus/<name>",
        ),
        ("source", EVENT_SOURCE, "a source of your own: sources starting with 'aws.' belong to AWS"),
    ),
}


def check_form(target: AnyTarget, *, local_stack: bool) -> None:
    """Refuses a new target whose AWS names are not of the form AWS issues (partition aws, aws-cn or
    aws-us-gov; a region; a 12-digit account; a resource name), a loopback queue outside the local
    stack, and a header or query value sent as the mask the API answers in its place.

    Raises InvalidInput naming the field, e.g. "target.function_arn".
    """
    for name, form, wanted in _FORMS.get(type(target), ()):
        value = getattr(target, name)
        # fullmatch: "$" alone would also take a value that ends in a newline.
        if not re.fullmatch(form.removeprefix("^").removesuffix("$"), value):
            raise InvalidInput(f"target {name} {value[:120]!r} is not {wanted}", field=f"target.{name}")
    if isinstance(target, SqsTarget) and not local_stack and LOCAL_QUEUE_URL.match(target.queue_url):
        raise InvalidInput(
            f"target queue_url {target.queue_url!r} is a loopback address, reachable only in the local "
            "stack; use the queue's SQS URL",
            field="target.queue_url",
        )
    if isinstance(target, HttpTarget):
        _refuse_masks(target)


def _refuse_masks(target: HttpTarget) -> None:
    if target.sealed_query is not None:
        raise InvalidInput(
            "target sealed_query is a form only Sundial writes; send the query in the url",
            field="target.sealed_query",
        )
    for header, value in target.headers.items():
        if isinstance(value, Sealed):
            raise InvalidInput(
                f"target header {header} is a sealed value, a form only Sundial writes; send the plain value",
                field=f"target.headers.{header}",
            )
        if value == SECRET_MASK and not is_shown_header(header):
            raise InvalidInput(
                f"target header {header} is {SECRET_MASK!r}, the mask the API answers in place of a "
                "secret; send the real value",
                field=f"target.headers.{header}",
            )
    if any(value == SECRET_MASK for _, value in parse_qsl(urlsplit(target.url).query)):
        raise InvalidInput(
            f"target url has a query value {SECRET_MASK!r}, the mask the API answers in place of "
            "query values; send the real value",
            field="target.url",
        )


def is_shown_header(name: str) -> bool:
    """Whether a header's string value is answered as itself: its name, in any case, is allow-listed."""
    return name.lower() in SHOWN_HEADERS


def masked_headers(headers: dict[str, str | SecretRef | Sealed]) -> dict[str, str | SecretRef | Sealed]:
    """Headers as answers and logs show them: references as themselves, allow-listed values as
    themselves, every other value (sealed ones too) as the mask."""
    return {
        name: value
        if isinstance(value, SecretRef) or (isinstance(value, str) and is_shown_header(name))
        else SECRET_MASK
        for name, value in headers.items()
    }


def masked_url(url: str) -> str:
    """`url` with every query value replaced by the mask (an api_key=... is a secret in a url)."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = [(name, SECRET_MASK) for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(pairs, safe="*")))


def plain_query(target: HttpTarget) -> str:
    """The url's query while it is in clear: "" when there is none, or once it is sealed."""
    return "" if target.sealed_query is not None else urlsplit(target.url).query


def with_query(url: str, query: str) -> str:
    """`url` with its query replaced by `query`, as sent (percent-encoding and order kept)."""
    return urlunsplit(urlsplit(url)._replace(query=query))


def masked(target: AnyTarget) -> AnyTarget:
    """The target as the API answers it: header and query values masked, the sealed query left out."""
    if not isinstance(target, HttpTarget):
        return target
    return target.model_copy(
        update={
            "headers": masked_headers(target.headers),
            "url": masked_url(target.url),
            "sealed_query": None,
        }
    )


class Delivery(BaseModel):
    """What every target receives about the occurrence it runs (docs/api.md: the envelope)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    scheduled_at: str  # RFC 3339 UTC
    attempt: int  # 1 for the first attempt
    idempotency_key: str
    payload: Any = None
    traceparent: str | None = None  # this attempt's W3C trace context (sundial/shared/tracing.py)

    @property
    def message_id(self) -> str:
        """The webhook-id: one per attempt, the same for a redelivery of that attempt."""
        return f"{self.idempotency_key}:{self.attempt}"

    def envelope(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
