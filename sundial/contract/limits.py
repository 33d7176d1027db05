"""Request and response bodies of the HTTP API about limits per key (docs/api.md, "Limits")."""

from __future__ import annotations

import math
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from sundial.contract.bounds import (
    LIMIT_KEY_PATTERN,
    MAX_LIMIT_CONCURRENT,
    MAX_LIMIT_PER_SECOND,
    MIN_LIMIT_PER_SECOND,
)

LimitKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=LIMIT_KEY_PATTERN,
        description="1-128 characters of A-Z a-z 0-9 . _ : / -; jobs naming the same key share its limit.",
        examples=["payments-api"],
    ),
]
LIMIT_TEXT = (
    "At most `max_concurrent` attempts of the jobs naming the key run at once (from the fence to the "
    "settle; an attempt whose worker vanished holds its slot until its lease ends), and attempts start "
    "at most `per_second` a second on average, `burst` at once. A held-back occurrence stays queued, "
    "uses no attempt, and starts as soon as the key allows: high before medium before low, then oldest "
    "due first."
)


class LimitPut(BaseModel):
    """PUT /limits/{key}."""

    model_config = ConfigDict(extra="forbid")

    max_concurrent: StrictInt | None = Field(default=None, ge=1, le=MAX_LIMIT_CONCURRENT)
    per_second: float | None = Field(
        default=None, ge=MIN_LIMIT_PER_SECOND, le=MAX_LIMIT_PER_SECOND, allow_inf_nan=False, strict=True
    )
    burst: StrictInt | None = Field(
        default=None, ge=1, le=MAX_LIMIT_PER_SECOND, description="Default: max(1, ceil(per_second))."
    )

    @model_validator(mode="before")
    @classmethod
    def _integers_are_numbers(cls, data: object) -> object:
        # per_second takes an integer as a number, but never a boolean or a string.
        if (
            isinstance(data, dict)
            and isinstance(data.get("per_second"), int)
            and not isinstance(data.get("per_second"), bool)
        ):
            return {**data, "per_second": float(data["per_second"])}
        return data

    @model_validator(mode="after")
    def _one_bound(self) -> Self:
        if self.max_concurrent is None and self.per_second is None:
            raise ValueError("give max_concurrent, per_second or both")
        if self.burst is not None and self.per_second is None:
            raise ValueError("burst needs per_second")
        return self

    @property
    def effective_burst(self) -> int:
        if self.burst is not None:
            return self.burst
        return max(1, math.ceil(self.per_second or 1))


class LimitView(BaseModel):
    """A key's limit, and what runs and waits on it now."""

    key: str
    max_concurrent: int | None
    per_second: float | None
    burst: int
    running: int = Field(description="Attempts holding a slot now (leases not yet ended).")
    waiting: int = Field(description="Occurrences held back by the key now.")
    waiting_is_estimate: bool = Field(
        default=False, description="True when more wait than the key keeps in line: `waiting` is a floor."
    )
    oldest_wait_seconds: float | None = Field(
        default=None, description="How long the longest-waiting occurrence has waited; null when none waits."
    )
    shards: int = Field(default=1, description="How many items the key's state is spread over.")
    updated_at: str


class LimitList(BaseModel):
    limits: list[LimitView]
    next_token: str | None
