"""What a job runs: one pydantic model per target type, discriminated by `type` (docs/api.md, Targets).

The models also read what the store holds, so they check only lengths: a job stored before a stricter
rule must still load. A new target is held to the forms AWS issues by `check_form`, which says what is
wrong, and the OpenAPI document shows those forms (`pattern`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from shared.errors import InvalidInput

# The forms AWS issues. Regions: "us-east-1", "us-gov-west-1", "cn-north-1", "ap-southeast-5".
_PARTITION = r"(?:aws|aws-cn|aws-us-gov)"
_REGION = r"[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}"
_ACCOUNT = r"[0-9]{12}"
_FIFO_OR_PLAIN = r"(?:[A-Za-z0-9_-]{1,75}\.fifo|[A-Za-z0-9_-]{1,80})"
LAMBDA_ARN = (
    rf"^arn:{_PARTITION}:lambda:{_REGION}:{_ACCOUNT}:function:[A-Za-z0-9_-]{{1,64}}"
    r"(?::(?:\$LATEST|[A-Za-z0-9_-]{1,128}))?$"
)
TOPIC_ARN = (
    rf"^arn:{_PARTITION}:sns:{_REGION}:{_ACCOUNT}:(?:[A-Za-z0-9_-]{{1,251}}\.fifo|[A-Za-z0-9_-]{{1,256}})$"
)
# sqs.<region>.amazonaws.com (.com.cn in China), the legacy <region>.queue.amazonaws.com and
# queue.amazonaws.com, or a loopback emulator (the local stack's).
_AWS_QUEUE_HOST = rf"(?:sqs\.{_REGION}\.amazonaws\.com(?:\.cn)?|(?:{_REGION}\.)?queue\.amazonaws\.com)"
_LOCAL_QUEUE_HOST = r"(?:127\.0\.0\.1|localhost|\[::1\])(?::[0-9]{1,5})?"
_QUEUE_PATH = rf"/{_ACCOUNT}/{_FIFO_OR_PLAIN}$"
QUEUE_URL = rf"^(?:https://{_AWS_QUEUE_HOST}|https?://{_LOCAL_QUEUE_HOST}){_QUEUE_PATH}"
_LOCAL_QUEUE_URL = re.compile(rf"^https?://{_LOCAL_QUEUE_HOST}/")
EVENT_BUS = rf"^(?:arn:{_PARTITION}:events:{_REGION}:{_ACCOUNT}:event-bus/)?[/.\-_A-Za-z0-9]{{1,256}}$"
# Sources under "aws." belong to AWS services; PutEvents refuses them from anyone else.
EVENT_SOURCE = r"^(?!aws\.).+$"

# A header value is answered as this, never as itself, unless its name is on the allow-list below.
SECRET_MASK = "***"
# Names whose values describe the content, not who sends it: nothing else is shown, since no list of
# secret-looking words covers X-Signature, X-Shopify-Hmac-Sha256 or X-Pass.
SHOWN_HEADERS = frozenset({"content-type", "accept", "accept-language", "user-agent"})
# A Secrets Manager secret or an SSM parameter, as IAM names them (docs/api.md: secret references).
SECRET_ARN = rf"^arn:{_PARTITION}:secretsmanager:{_REGION}:{_ACCOUNT}:secret:[A-Za-z0-9/_+=.@-]{{1,512}}$"
PARAMETER_ARN = rf"^arn:{_PARTITION}:ssm:{_REGION}:{_ACCOUNT}:parameter/[A-Za-z0-9_.\-/]{{1,2048}}$"


def _shown(pattern: str) -> dict[str, Any]:
    """The form a new target must have, for the OpenAPI document (check_form enforces it)."""
    return {"pattern": pattern}


class _TargetBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SecretRef(_TargetBase):
    """A header value kept in Secrets Manager or SSM Parameter Store; the worker reads it at delivery."""

    secret: Annotated[
        str,
        Field(
            max_length=2048,
            description="A Secrets Manager secret ARN or an SSM SecureString parameter ARN.",
            json_schema_extra=_shown(f"{SECRET_ARN}|{PARAMETER_ARN}"),
        ),
    ]
    json_key: Annotated[
        str | None,
        Field(min_length=1, max_length=256, description="One key of a secret that holds a JSON object."),
    ] = None


class Sealed(_TargetBase):
    """An inline value as the store keeps it: KMS ciphertext, base64 (shared/targets/sealing.py).
    Only Sundial writes this form; a new target that sends it is refused (check_form)."""

    sealed: Annotated[str, Field(min_length=1, max_length=16384)]


HEADER_VALUE_LIMIT = 4096


def _header_value(value: Any, handler: ValidatorFunctionWrapHandler) -> str | SecretRef | Sealed:
    """A string or a reference, with errors that name the header rather than a branch of the union."""
    if isinstance(value, SecretRef | Sealed):
        return value
    if isinstance(value, dict) and set(value) == {"sealed"}:
        return Sealed.model_validate(value)
    if isinstance(value, str):
        if len(value) > HEADER_VALUE_LIMIT:
            raise PydanticCustomError("header_too_long", f"must be at most {HEADER_VALUE_LIMIT} characters")
        return value
    if not isinstance(value, dict):
        raise PydanticCustomError("header_value", 'must be a string or a reference {"secret": "<ARN>"}')
    try:
        return SecretRef.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(step) for step in first["loc"])
        raise PydanticCustomError(
            "secret_reference", "{detail}", {"detail": f"{where}: {first['msg']}" if where else first["msg"]}
        ) from None


# The union gives the OpenAPI document its two forms (the stored sealed form is not for clients);
# _header_value does the validating.
HeaderValue = Annotated[
    Annotated[str, Field(max_length=HEADER_VALUE_LIMIT)] | SecretRef | SkipJsonSchema[Sealed],
    WrapValidator(_header_value),
]


class HttpTarget(_TargetBase):
    type: Literal["http"]
    url: Annotated[str, Field(min_length=1, max_length=2048)]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, HeaderValue] = Field(
        default_factory=dict,
        max_length=50,
        description="Sent with every delivery. A value is a string, or a reference to a secret "
        '(`{"secret": "<ARN>"}`) read at delivery time. Every string value is answered as '
        f"{SECRET_MASK!r} except those of Content-Type, Accept, Accept-Language and User-Agent, and "
        "is stored encrypted; a reference is answered as itself.",
    )
    # The url's query as sent, sealed like a header value; the url then keeps the masked query
    # (shared/api/sealing.py). Only Sundial writes it, and no answer shows it.
    sealed_query: SkipJsonSchema[Sealed | None] = Field(default=None, exclude_if=lambda value: value is None)


class LambdaTarget(_TargetBase):
    type: Literal["lambda"]
    function_arn: Annotated[
        str,
        Field(
            max_length=512,
            description="A function ARN, with a version or alias qualifier if wanted.",
            json_schema_extra=_shown(LAMBDA_ARN),
        ),
    ]


class SqsTarget(_TargetBase):
    type: Literal["sqs"]
    queue_url: Annotated[
        str,
        Field(
            max_length=1024,
            description="The queue's URL as SQS gives it (https://sqs.<region>.amazonaws.com/<account>/<name>).",
            json_schema_extra=_shown(QUEUE_URL),
        ),
    ]


class SnsTarget(_TargetBase):
    type: Literal["sns"]
    topic_arn: Annotated[str, Field(max_length=512, json_schema_extra=_shown(TOPIC_ARN))]


class EventBridgeTarget(_TargetBase):
    type: Literal["eventbridge"]
    event_bus_name: Annotated[
        str,
        Field(
            min_length=1,
            max_length=512,
            description="A bus name or a bus ARN.",
            json_schema_extra=_shown(EVENT_BUS),
        ),
    ] = "default"
    detail_type: Annotated[str, Field(min_length=1, max_length=128)]
    source: Annotated[str, Field(min_length=1, max_length=256, json_schema_extra=_shown(EVENT_SOURCE))]


class PythonTarget(_TargetBase):
    type: Literal["python"]
    handler: Annotated[str, Field(min_length=1, max_length=200)]


AnyTarget = HttpTarget | LambdaTarget | SqsTarget | SnsTarget | EventBridgeTarget | PythonTarget
Target = Annotated[AnyTarget, Field(discriminator="type")]
# What a job's alert route may name: a dead occurrence's summary is a message, not a run.
AlertRoute = Annotated[HttpTarget | SqsTarget | SnsTarget, Field(discriminator="type")]

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
    if isinstance(target, SqsTarget) and not local_stack and _LOCAL_QUEUE_URL.match(target.queue_url):
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
    traceparent: str | None = None  # this attempt's W3C trace context (shared/tracing.py)

    @property
    def message_id(self) -> str:
        """The webhook-id: one per attempt, the same for a redelivery of that attempt."""
        return f"{self.idempotency_key}:{self.attempt}"

    def envelope(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
