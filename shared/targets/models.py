"""What a job runs: one pydantic model per target type, discriminated by `type` (docs/api.md, Targets).

The models also read what the store holds, so they check only lengths: a job stored before a stricter
rule must still load. A new target is held to the forms AWS issues by `check_form`, which says what is
wrong, and the OpenAPI document shows those forms (`pattern`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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

# A header value that looks like a secret is answered as this, never as itself.
SECRET_MASK = "***"
_SECRET_WORDS = ("auth", "cookie", "token", "secret", "key", "password", "passwd", "credential", "session")


def _shown(pattern: str) -> dict[str, Any]:
    """The form a new target must have, for the OpenAPI document (check_form enforces it)."""
    return {"pattern": pattern}


class _TargetBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HttpTarget(_TargetBase):
    type: Literal["http"]
    url: Annotated[str, Field(min_length=1, max_length=2048)]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=dict,
        max_length=50,
        description="Sent with every delivery. Values of secret-looking names (containing auth, "
        "cookie, token, secret, key, password, passwd, credential or session) are answered as "
        f"{SECRET_MASK!r}.",
    )


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
    stack, and a secret-looking header sent as the mask the API answers in its place.

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
        for header, value in target.headers.items():
            if value == SECRET_MASK and is_secret_header(header):
                raise InvalidInput(
                    f"target header {header} is {SECRET_MASK!r}, the mask the API answers in place of a "
                    "secret; send the real value",
                    field=f"target.headers.{header}",
                )


def is_secret_header(name: str) -> bool:
    """Whether a header's value is answered masked: its name, in any case, holds a secret-like word."""
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def masked(target: AnyTarget) -> AnyTarget:
    """The target as the API answers it: secret-looking header values replaced by the mask. The stored
    target, which the worker sends, keeps them."""
    if not isinstance(target, HttpTarget) or not any(is_secret_header(name) for name in target.headers):
        return target
    headers = {
        name: SECRET_MASK if is_secret_header(name) else value for name, value in target.headers.items()
    }
    return target.model_copy(update={"headers": headers})


class Delivery(BaseModel):
    """What every target receives about the occurrence it runs (docs/api.md: the envelope)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    scheduled_at: str  # RFC 3339 UTC
    attempt: int  # 1 for the first attempt
    idempotency_key: str
    payload: Any = None

    def envelope(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
