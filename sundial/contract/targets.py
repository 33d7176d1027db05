"""What a job runs: one pydantic model per target type, discriminated by `type` (docs/api.md, Targets).

The models also read what the store holds, so they check only lengths: a job stored before a stricter
rule must still load. The service holds a new target to the forms AWS issues (the patterns here),
and says what is wrong; the OpenAPI document shows those forms (`pattern`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

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
LOCAL_QUEUE_URL = re.compile(rf"^https?://{_LOCAL_QUEUE_HOST}/")
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
    """An inline value as the store keeps it: KMS ciphertext, base64 (the service seals them).
    Only Sundial writes this form; a new target that sends it is refused."""

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
    # (by the service). Only Sundial writes it, and no answer shows it.
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
