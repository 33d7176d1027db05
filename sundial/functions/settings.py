"""Each function's environment, validated once per cold start (names from sundial.shared.constants)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c


class Settings(BaseSettings):
    """What every handler needs to reach its table and queues. A missing name fails the cold start,
    not the first request that happens to need it."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore", populate_by_name=False)

    table_name: str = Field(min_length=1, validation_alias=c.ENV_TABLE_NAME)
    queue_url_high: str = Field(min_length=1, validation_alias=c.ENV_QUEUE_URL_HIGH)
    queue_url_medium: str = Field(min_length=1, validation_alias=c.ENV_QUEUE_URL_MEDIUM)
    queue_url_low: str = Field(min_length=1, validation_alias=c.ENV_QUEUE_URL_LOW)
    dead_letter_queue_url: str = Field(min_length=1, validation_alias=c.ENV_DEAD_LETTER_QUEUE_URL)
    # Set only for the emulator; deployed functions use the regional endpoints.
    endpoint_url: str | None = Field(default=None, validation_alias=c.ENV_ENDPOINT_URL)
    # Only the local stack may run http targets on loopback and private addresses.
    allow_private_targets: bool = Field(default=False, validation_alias=c.ENV_ALLOW_PRIVATE_TARGETS)
    extra_lead_seconds: int = Field(default=0, ge=0, le=5, validation_alias=c.ENV_EXTRA_LEAD_SECONDS)
    # The deployment's cost choices (infra/settings.py, docs/operations.md): how SQS delays round,
    # and whether a recurring job's successes leave history items.
    precision: c.Precision = Field(default=c.Precision.SECOND, validation_alias=c.ENV_PRECISION)
    history: c.History = Field(default=c.History.ALL, validation_alias=c.ENV_HISTORY)
    retention_days: int = Field(
        default=c.DEFAULT_RETENTION_DAYS, ge=1, le=c.MAX_RETENTION_DAYS, validation_alias=c.ENV_RETENTION_DAYS
    )
    # The due index's shard count, and the count before a change, which readers keep covering.
    due_shards: int = Field(
        default=c.DUE_SHARDS, ge=1, le=c.MAX_DUE_SHARDS, validation_alias=c.ENV_DUE_SHARDS
    )
    due_shards_before: int | None = Field(
        default=None, ge=1, le=c.MAX_DUE_SHARDS, validation_alias=c.ENV_DUE_SHARDS_BEFORE
    )
    # During an upgrade, the filter indexes that are there and backfilled (docs/operations.md); unset
    # once the upgrade is over: every index.
    list_indexes: str | None = Field(default=None, validation_alias=c.ENV_LIST_INDEXES)
    # The Secrets Manager secret that signs deliveries; the deployed stack always sets it.
    signing_secret_arn: str | None = Field(default=None, validation_alias=c.ENV_SIGNING_SECRET_ARN)
    # The KMS key that seals inline header values: the API encrypts with it, the worker decrypts.
    # The deployed stack always sets it; the API refuses to start without it.
    header_key_arn: str | None = Field(default=None, validation_alias=c.ENV_HEADER_KEY_ARN)
    # The stack the function belongs to, named on each of its metrics; the deployed stack always
    # sets it, since its alarms read only the metrics that carry it.
    stack_name: str | None = Field(default=None, min_length=1, validation_alias=c.ENV_STACK_NAME)
    # Modules of one's own python handlers (docs/handlers.md), comma-separated.
    handlers: str = Field(default="", validation_alias=c.ENV_HANDLERS)
    # Lambda names the log stream after the execution environment: the worker's identity in run history.
    worker_id: str = Field(default="local", validation_alias="AWS_LAMBDA_LOG_STREAM_NAME")

    @property
    def handler_modules(self) -> list[str]:
        return [name.strip() for name in self.handlers.split(",") if name.strip()]

    @property
    def ready_indexes(self) -> frozenset[str] | None:
        if self.list_indexes is None:
            return None
        return frozenset(name.strip() for name in self.list_indexes.split(",") if name.strip())

    @property
    def queue_urls(self) -> dict[Priority, str]:
        return {
            Priority.HIGH: self.queue_url_high,
            Priority.MEDIUM: self.queue_url_medium,
            Priority.LOW: self.queue_url_low,
        }
