"""What a job runs: one pydantic model per target type, discriminated by `type` (docs/api.md, Targets)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_ARN = r"^arn:aws[a-zA-Z-]*:"


class _TargetBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HttpTarget(_TargetBase):
    type: Literal["http"]
    url: Annotated[str, Field(min_length=1, max_length=2048)]
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    headers: dict[str, Annotated[str, Field(max_length=4096)]] = Field(default_factory=dict, max_length=50)


class LambdaTarget(_TargetBase):
    type: Literal["lambda"]
    function_arn: Annotated[str, Field(pattern=_ARN + r"lambda:", max_length=512)]


class SqsTarget(_TargetBase):
    type: Literal["sqs"]
    queue_url: Annotated[str, Field(pattern=r"^https?://", max_length=1024)]


class SnsTarget(_TargetBase):
    type: Literal["sns"]
    topic_arn: Annotated[str, Field(pattern=_ARN + r"sns:", max_length=512)]


class EventBridgeTarget(_TargetBase):
    type: Literal["eventbridge"]
    event_bus_name: Annotated[str, Field(min_length=1, max_length=512)] = "default"
    detail_type: Annotated[str, Field(min_length=1, max_length=128)]
    source: Annotated[str, Field(min_length=1, max_length=256)]


class PythonTarget(_TargetBase):
    type: Literal["python"]
    handler: Annotated[str, Field(min_length=1, max_length=200)]


Target = Annotated[
    HttpTarget | LambdaTarget | SqsTarget | SnsTarget | EventBridgeTarget | PythonTarget,
    Field(discriminator="type"),
]


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
