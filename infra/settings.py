"""Deployment choices read from CDK context (`cdk.json` or `cdk deploy -c key=value`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from constructs import Node

from infra.capacity_settings import (
    Capacity,
    Pollers,
    WarmThroughput,
    capacity_from_context,
    pollers_from_context,
    warm_throughput_from_context,
)
from infra.handlers import HANDLERS_KEY, checked_modules
from sundial.contract.vocabulary import Priority
from sundial.shared.constants import (
    DEFAULT_RETENTION_DAYS,
    FILTER_INDEXES,
    LIST_INDEX_NAME,
    MAX_DUE_SHARDS,
    MAX_RETENTION_DAYS,
    History,
    Precision,
)

PREFIX = "sundial:"
MAX_CONCURRENCY_KEYS: Mapping[Priority, str] = {
    Priority.HIGH: PREFIX + "maxConcurrencyHigh",
    Priority.MEDIUM: PREFIX + "maxConcurrencyMedium",
    Priority.LOW: PREFIX + "maxConcurrencyLow",
}
STAGE_KEY = PREFIX + "stage"
TARGET_ARNS_KEY = PREFIX + "targetArns"
TARGET_KMS_KEYS_KEY = PREFIX + "targetKmsKeyArns"
SECRET_ARNS_KEY = PREFIX + "secretArns"
ALARM_EMAIL_KEY = PREFIX + "alarmEmail"
SCHEDULER_CONCURRENCY_KEY = PREFIX + "schedulerReservedConcurrency"
LATENESS_P99_KEY = PREFIX + "startLatenessP99ThresholdMs"
API_RATE_LIMIT_KEY = PREFIX + "apiRateLimit"
API_BURST_LIMIT_KEY = PREFIX + "apiBurstLimit"
DELETION_PROTECTION_KEY = PREFIX + "tableDeletionProtection"
PRECISION_KEY = PREFIX + "precision"
HISTORY_KEY = PREFIX + "history"
DUE_SHARDS_KEY = PREFIX + "dueShards"
DUE_SHARDS_BEFORE_KEY = PREFIX + "dueShardsBefore"
LIST_INDEXES_KEY = PREFIX + "listIndexes"
LISTING_BACKFILLED_KEY = PREFIX + "listingBackfilled"
DEAD_IN_A_ROW_KEY = PREFIX + "deadOccurrencesInARow"
LIMIT_WAIT_ALARM_KEY = PREFIX + "limitWaitAlarmSeconds"
RETENTION_DAYS_KEY = PREFIX + "retentionDays"
MISSED_ALARM_KEY = PREFIX + "missedOccurrencesAlarm"
DASHBOARD_KEY = PREFIX + "dashboard"
API_KEY = PREFIX + "api"

BASE_STACK_NAME = "Sundial"
DEFAULT_MAX_CONCURRENCY: Mapping[Priority, int] = {Priority.HIGH: 50, Priority.MEDIUM: 20, Priority.LOW: 5}
DEFAULT_LATENESS_P99_MS = 1000
DEFAULT_API_RATE_LIMIT = 100
DEFAULT_API_BURST_LIMIT = 200
DEFAULT_DEAD_IN_A_ROW = 3
# Five minutes: a key that keeps an occurrence waiting that long is short of room for its load, not
# riding out a burst.
DEFAULT_LIMIT_WAIT_ALARM_SECONDS = 300

# Lambda's bounds for an SQS event source's MaximumConcurrency.
_ESM_CONCURRENCY = range(2, 1001)
# A stage becomes part of the stack's name, and through it of every generated resource name.
_STAGE = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,39}")
_KMS_KEY_ARN = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+")
# IAM matches a secret's whole ARN, with the six characters Secrets Manager adds to its name.
_SECRET_ARN = re.compile(
    r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}"
    r"|arn:aws[a-z-]*:ssm:[a-z0-9-]+:\d{12}:parameter/[A-Za-z0-9_./-]+"
)
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


class ApiKind(StrEnum):
    """Which API Gateway API the stage serves its routes through (docs/design.md, "Cost")."""

    # A REST API: the gateway's own refusals are problem details, bodies are checked before the
    # function is paid, and the gateway traces with X-Ray.
    REST = "rest"
    # An HTTP API, at under a third of the price a request: the gateway's own refusals are its own
    # `{"message": ...}` JSON, and every body reaches the function.
    HTTP = "http"


@dataclass(frozen=True)
class Settings:
    max_concurrency: Mapping[Priority, int]
    stage: str | None = None
    target_arns: tuple[str, ...] = ()
    target_kms_key_arns: tuple[str, ...] = ()
    # The secrets and SSM parameters that http targets' headers may refer to.
    secret_arns: tuple[str, ...] = ()
    alarm_email: str | None = None
    # None: the scheduler shares the account's unreserved pool (a reservation must leave Lambda's
    # 100 unreserved, which a new account with a limit of 10 or 50 cannot).
    scheduler_reserved_concurrency: int | None = None
    start_lateness_p99_threshold_ms: int = DEFAULT_LATENESS_P99_MS
    api_rate_limit: int = DEFAULT_API_RATE_LIMIT
    api_burst_limit: int = DEFAULT_API_BURST_LIMIT
    # Off by default: DynamoDB refuses to delete a protected table, so the rollback of a failed first
    # deploy could not remove the table it had just created.
    table_deletion_protection: bool = False
    provisioned_pollers: Mapping[Priority, Pollers] = field(default_factory=dict)
    precision: Precision = Precision.SECOND
    history: History = History.ALL
    # None: on-demand (the default); a Capacity: provisioned with auto scaling.
    provisioned_capacity: Capacity | None = None
    # The due index's shards per priority (None: the functions' default), and the count before a
    # change, which readers keep covering until the rows written under it have moved.
    due_shards: int | None = None
    due_shards_before: int | None = None
    # The upgrade of a table from before the filter indexes (docs/operations.md, "Upgrading the
    # listing indexes"): how many of FILTER_INDEXES the table declares, in their order (CloudFormation
    # creates one index per stack update), and whether the backfill has given every job their keys.
    list_indexes: int = len(FILTER_INDEXES)
    listing_backfilled: bool = True
    # The alarm on a recurring job whose occurrences die: this many in a row.
    dead_occurrences_in_a_row: int = DEFAULT_DEAD_IN_A_ROW
    # The alarm on limit keys: an occurrence has waited longer than this for its key.
    limit_wait_alarm_seconds: int = DEFAULT_LIMIT_WAIT_ALARM_SECONDS
    # The alarm on missed instants (misfire, overlap): this many in five minutes.
    missed_occurrences_alarm: int = 1
    # How long run history and the skip ledger are kept (GET /jobs/{id}/runs and /occurrences).
    retention_days: int = DEFAULT_RETENTION_DAYS
    # Modules of one's own python handlers, bundled with the functions (infra/handlers.py).
    handlers: tuple[str, ...] = ()
    # The stage's CloudWatch dashboard, $3.00 a month beyond an account's first three: most of an
    # idle stage's bill, which a stage for trials or tests may leave out.
    dashboard: bool = True
    # None: DynamoDB's own (a new table's, then what its peaks taught it).
    warm_throughput: WarmThroughput | None = None
    api: ApiKind = ApiKind.REST

    @property
    def ready_indexes(self) -> tuple[str, ...]:
        """What the functions may read: the declared filter indexes, and by_created's shards once
        every job is in them (before, it reads the one partition of the jobs not backfilled yet)."""
        if not self.listing_backfilled:
            return ()
        return (LIST_INDEX_NAME, *FILTER_INDEXES[: self.list_indexes])

    @classmethod
    def from_context(cls, node: Node) -> Settings:
        """Raises ValueError naming the context key when a value is unusable."""
        return cls(
            max_concurrency={
                priority: _concurrency(node, key, DEFAULT_MAX_CONCURRENCY[priority])
                for priority, key in MAX_CONCURRENCY_KEYS.items()
            },
            stage=_stage(node),
            target_arns=_string_list(node, TARGET_ARNS_KEY),
            target_kms_key_arns=_kms_key_arns(node),
            secret_arns=_secret_arns(node),
            alarm_email=_optional_string(node, ALARM_EMAIL_KEY),
            scheduler_reserved_concurrency=_optional_integer(node, SCHEDULER_CONCURRENCY_KEY, minimum=1),
            start_lateness_p99_threshold_ms=_integer(
                node, LATENESS_P99_KEY, DEFAULT_LATENESS_P99_MS, minimum=1
            ),
            api_rate_limit=_integer(node, API_RATE_LIMIT_KEY, DEFAULT_API_RATE_LIMIT, minimum=1),
            api_burst_limit=_integer(node, API_BURST_LIMIT_KEY, DEFAULT_API_BURST_LIMIT, minimum=1),
            table_deletion_protection=_boolean(node, DELETION_PROTECTION_KEY, default=False),
            provisioned_pollers=pollers_from_context(node),
            precision=Precision(_choice(node, PRECISION_KEY, [p.value for p in Precision], "second")),
            history=History(_choice(node, HISTORY_KEY, [h.value for h in History], "all")),
            provisioned_capacity=capacity_from_context(node),
            due_shards=_shards(node, DUE_SHARDS_KEY),
            due_shards_before=_shards(node, DUE_SHARDS_BEFORE_KEY),
            list_indexes=_list_indexes(node),
            listing_backfilled=_boolean(node, LISTING_BACKFILLED_KEY, default=True),
            dead_occurrences_in_a_row=_integer(node, DEAD_IN_A_ROW_KEY, DEFAULT_DEAD_IN_A_ROW, minimum=1),
            limit_wait_alarm_seconds=_integer(
                node, LIMIT_WAIT_ALARM_KEY, DEFAULT_LIMIT_WAIT_ALARM_SECONDS, minimum=1
            ),
            retention_days=_retention_days(node),
            missed_occurrences_alarm=_integer(node, MISSED_ALARM_KEY, 1, minimum=1),
            handlers=checked_modules(_string_list(node, HANDLERS_KEY)),
            dashboard=_boolean(node, DASHBOARD_KEY, default=True),
            warm_throughput=warm_throughput_from_context(node),
            api=ApiKind(_choice(node, API_KEY, [kind.value for kind in ApiKind], ApiKind.REST.value)),
        )


def stack_name(node: Node) -> str:
    """`Sundial`, or `Sundial-<stage>` with `sundial:stage`: one stack per stage in an account.

    Raises ValueError when the stage is not a usable name.
    """
    stage = _stage(node)
    return BASE_STACK_NAME if stage is None else f"{BASE_STACK_NAME}-{stage}"


def _stage(node: Node) -> str | None:
    stage = _optional_string(node, STAGE_KEY)
    if stage is not None and not _STAGE.fullmatch(stage):
        raise ValueError(
            f"context {STAGE_KEY}={stage!r}: must start with a letter and hold only letters, digits "
            "and hyphens (at most 40)"
        )
    return stage


def _list_indexes(node: Node) -> int:
    value = _integer(node, LIST_INDEXES_KEY, len(FILTER_INDEXES), minimum=0)
    if value > len(FILTER_INDEXES):
        raise ValueError(f"context {LIST_INDEXES_KEY}={value}: must be 0-{len(FILTER_INDEXES)}")
    return value


def _concurrency(node: Node, key: str, default: int) -> int:
    value = _integer(node, key, default, minimum=_ESM_CONCURRENCY.start)
    if value not in _ESM_CONCURRENCY:
        raise ValueError(f"context {key}={value}: must be 2-1000 (SQS event source MaximumConcurrency)")
    return value


def _shards(node: Node, key: str) -> int | None:
    value = _optional_integer(node, key, minimum=1)
    if value is not None and value > MAX_DUE_SHARDS:
        raise ValueError(f"context {key}={value}: must be at most {MAX_DUE_SHARDS}")
    return value


def _integer(node: Node, key: str, default: int, *, minimum: int) -> int:
    value = _optional_integer(node, key, minimum=minimum)
    return default if value is None else value


def _optional_integer(node: Node, key: str, *, minimum: int) -> int | None:
    # `-c key=value` on the command line always arrives as a string; cdk.json gives JSON values.
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"context {key}={raw!r}: must be an integer") from None
    if value < minimum:
        raise ValueError(f"context {key}={value}: must be at least {minimum}")
    return value


def _retention_days(node: Node) -> int:
    value = _integer(node, RETENTION_DAYS_KEY, DEFAULT_RETENTION_DAYS, minimum=1)
    if value > MAX_RETENTION_DAYS:
        raise ValueError(f"context {RETENTION_DAYS_KEY}={value}: must be at most {MAX_RETENTION_DAYS}")
    return value


def _boolean(node: Node, key: str, *, default: bool) -> bool:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return default
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise ValueError(f"context {key}={raw!r}: must be true or false")


def _optional_string(node: Node, key: str) -> str | None:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return None
    return str(raw)


def _string_list(node: Node, key: str) -> tuple[str, ...]:
    raw: Any = node.try_get_context(key)
    if raw is None or raw == "":
        return ()
    if isinstance(raw, str):
        # From the command line: a JSON list or comma-separated values.
        raw = json.loads(raw) if raw.lstrip().startswith("[") else raw.split(",")
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ValueError(f"context {key}: must be a list of strings, got {raw!r}")
    return tuple(item.strip() for item in raw if item.strip())


def _kms_key_arns(node: Node) -> tuple[str, ...]:
    arns = _string_list(node, TARGET_KMS_KEYS_KEY)
    for arn in arns:
        # IAM matches a key's own ARN: a grant on an alias ARN would authorise nothing.
        if not _KMS_KEY_ARN.fullmatch(arn):
            raise ValueError(
                f"context {TARGET_KMS_KEYS_KEY}: {arn!r} is not a KMS key ARN "
                "(arn:aws:kms:<region>:<account>:key/<key id>; an alias ARN grants nothing)"
            )
    return arns


def _secret_arns(node: Node) -> tuple[str, ...]:
    arns = _string_list(node, SECRET_ARNS_KEY)
    for arn in arns:
        if not _SECRET_ARN.fullmatch(arn):
            raise ValueError(
                f"context {SECRET_ARNS_KEY}: {arn!r} is not a Secrets Manager secret's full ARN "
                "(arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters>) nor an SSM "
                "parameter ARN (arn:aws:ssm:<region>:<account>:parameter/<name>)"
            )
    return arns


def _choice(node: Node, key: str, allowed: list[str], default: str) -> str:
    value = _optional_string(node, key)
    if value is None:
        return default
    if value not in allowed:
        raise ValueError(f"context {key}={value!r}: must be one of {', '.join(allowed)}")
    return value
