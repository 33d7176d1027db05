"""Names and numbers shared by the domain, the Lambda functions, the local stack and the CDK app.

The deployed stack and the emulator stack are both built from these, so they cannot drift.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from sundial.contract.bounds import WORKER_FUNCTION_TIMEOUT_SECONDS
from sundial.contract.vocabulary import Priority

# Dispatch order within a tick: high first (invariant 7).
PRIORITIES: Final = (Priority.HIGH, Priority.MEDIUM, Priority.LOW)

# --- DynamoDB -------------------------------------------------------------------------------------
TABLE_NAME: Final = "sundial-jobs"
# The local stack's signing secret; a deployed stage's is named by CloudFormation (infra/functions.py).
SIGNING_SECRET_NAME: Final = "sundial-signing"
HEADER_KEY_ALIAS: Final = "alias/sundial-headers"
PARTITION_KEY: Final = "pk"
SORT_KEY: Final = "sk"
TTL_ATTRIBUTE: Final = "expires_at"

# The sparse due index: a job is in it iff something must happen to it (invariant 2).
DUE_INDEX_NAME: Final = "due"
DUE_SHARD_ATTRIBUTE: Final = "due_shard"  # "<priority>#<n>", n in range(DUE_SHARDS)
DUE_KEY_ATTRIBUTE: Final = "due_key"  # "<13-digit epoch ms>#run", "...#lease" or "...#ahead#<token>"
# Shards per priority by default; the count is a deployment setting (ENV_DUE_SHARDS).
DUE_SHARDS: Final = 8
MAX_DUE_SHARDS: Final = 256

# The listing indexes (docs/operations.md, "Listing indexes"): each sorts by list_sk, the job's id
# (a ULID, so newest first), and spreads its partition key over LIST_SHARDS shards so that creates
# and state changes spread over partitions: newest first is a merge across the shards. All are
# KEYS_ONLY; health and name are sparse (a healthy or nameless job is not in them).
LIST_SHARDS: Final = 16
LIST_SORT_ATTRIBUTE: Final = "list_sk"
LIST_INDEX_NAME: Final = "by_created"  # every job: "JOBS#<shard>", written once at create
LIST_PARTITION_ATTRIBUTE: Final = "list_pk"
STATUS_INDEX_NAME: Final = "by_status"  # "<status>#<shard>" for the statuses it holds (sparse)
STATUS_PARTITION_ATTRIBUTE: Final = "status_pk"
PRIORITY_INDEX_NAME: Final = "by_priority"  # "<priority>#<shard>", moved by a change of priority
PRIORITY_PARTITION_ATTRIBUTE: Final = "priority_pk"
HEALTH_INDEX_NAME: Final = "by_health"  # "failing#<shard>" or "dead#<shard>"; absent while ok
HEALTH_PARTITION_ATTRIBUTE: Final = "health_pk"
NAME_INDEX_NAME: Final = "by_name"  # "<first NAME_KEY_CHARS of the case-folded name>#<shard>"
NAME_PARTITION_ATTRIBUTE: Final = "name_pk"
# In the order a deployed table gains them (one index per stack update; docs/operations.md). The
# status index is last: it holds only the statuses an occurrence ends or fails in, so a one-off pays
# a unit when it ends, and recurring jobs only when an occurrence fails.
FILTER_INDEXES: Final = (HEALTH_INDEX_NAME, PRIORITY_INDEX_NAME, NAME_INDEX_NAME, STATUS_INDEX_NAME)
LIST_INDEX_KEYS: Final = {
    LIST_INDEX_NAME: LIST_PARTITION_ATTRIBUTE,
    STATUS_INDEX_NAME: STATUS_PARTITION_ATTRIBUTE,
    HEALTH_INDEX_NAME: HEALTH_PARTITION_ATTRIBUTE,
    PRIORITY_INDEX_NAME: PRIORITY_PARTITION_ATTRIBUTE,
    NAME_INDEX_NAME: NAME_PARTITION_ATTRIBUTE,
}

# --- SQS ------------------------------------------------------------------------------------------
QUEUE_NAMES: Final = {
    Priority.HIGH: "sundial-high",
    Priority.MEDIUM: "sundial-medium",
    Priority.LOW: "sundial-low",
}
DEAD_LETTER_QUEUE_NAME: Final = "sundial-dead"
MAX_DELAY_SECONDS: Final = 900
# AWS's guidance for a Lambda event source: visibility at least six times the function timeout.
QUEUE_VISIBILITY_TIMEOUT_SECONDS: Final = 6 * WORKER_FUNCTION_TIMEOUT_SECONDS
MAX_RECEIVE_COUNT: Final = 5
DEAD_LETTER_RETENTION_DAYS: Final = 14
SEND_BATCH_SIZE: Final = 10
# Records per worker invocation (SQS's most per receive), run side by side: the deployed event
# source and the local stack's pollers both hand over batches of up to this many.
WORKER_BATCH_SIZE: Final = 10

# --- Timing ---------------------------------------------------------------------------------------
TICK_SECONDS: Final = 60
# Whatever sets a due time before the next tick plus this margin dispatches the job itself (invariant 6).
HORIZON_MARGIN_SECONDS: Final = 15
DISPATCH_HORIZON_SECONDS: Final = TICK_SECONDS + HORIZON_MARGIN_SECONDS
# A waiting job due more than this after the horizon of a tick now waits with its token: the tick
# sends its message from the index row without writing to it. The tick that sends it reads the index
# at least this long after the write that placed the row, far longer than an index lags (well under
# a second) or clocks drift apart.
AHEAD_MARGIN_SECONDS: Final = 60
# A writer that places a job due within this dispatches it itself (claimed in the same write, its
# message sent right after); beyond it the job waits ahead. Up to the horizon that is invariant 6; up
# to the ahead rows' start, it spares the job a claim by the tick: its write and its index move, three
# write units, for an SQS message that waits a minute longer.
WRITER_DISPATCH_SECONDS: Final = DISPATCH_HORIZON_SECONDS + AHEAD_MARGIN_SECONDS
# The tick's record of how far it has sent such messages: one item, written once a tick.
SENT_UNTIL_KEY: Final = "TICK"
# A lease outlives the job's timeout by more than any clock skew between components (invariant 10).
LEASE_MARGIN_SECONDS: Final = 60
# Longer jobs hold their lease in chunks renewed by heartbeats, so a crashed worker is noticed in minutes.
LEASE_CHUNK_SECONDS: Final = 120
HEARTBEAT_EVERY_SECONDS: Final = 30
# Messages are sent to arrive up to a second early, and the worker waits out the rest (invariant 6).
# The emulator hands a message over up to a second after it becomes visible, so the local stack
# asks for this much more lead; in AWS the extra would be paid as worker time.
EMULATOR_EXTRA_LEAD_SECONDS: Final = 1
# An occurrence later than this is a misfire (downtime, pause), handled by the job's misfire policy.
MISFIRE_GRACE_SECONDS: Final = 60

# --- Retention and bounds -------------------------------------------------------------------------
# Run history and the skip ledger are kept this long by default (the stage's `retentionDays`).
DEFAULT_RETENTION_DAYS: Final = 30
MAX_RETENTION_DAYS: Final = 3650
IDEMPOTENCY_TTL_SECONDS: Final = 24 * 3600
ERROR_TEXT_LIMIT: Final = 1000
# Triggered runs that may wait at once for one job (each runs in turn): a bound on what one client
# can pile up, far above what a person pressing "run now" asks for.
MAX_WAITING_TRIGGERS: Final = 10
PAYLOAD_LIMIT_BYTES: Final = 256 * 1024
# Payloads larger than this live in their own item, so that state changes write under 1 KB.
INLINE_PAYLOAD_BYTES: Final = 400

# --- Metrics --------------------------------------------------------------------------------------
METRICS_NAMESPACE: Final = "Sundial"
METRICS_SERVICE: Final = "sundial"  # Powertools adds it as a dimension: {"service": "sundial"}
# Stages share the account and the namespace; every metric also names its stage's stack, the one
# name CloudFormation keeps unique in an account and region, so that a stage's alarms and dashboard
# read its own series alone (docs/operations.md, "Stages in one account").
METRICS_STACK_DIMENSION: Final = "stack"
# The worker's metrics about one limit key also name it: a series per key (docs/operations.md,
# "Waits per limit key").
METRICS_LIMIT_KEY_DIMENSION: Final = "limit_key"
# The X-Ray annotations that find one occurrence's API, tick and worker segments (docs/operations.md).
TRACE_ANNOTATION: Final = "trace_id"
JOB_ANNOTATION: Final = "job_id"


class Metric(StrEnum):
    CLAIMED = "JobsClaimed"
    RECLAIMED = "JobsReclaimed"
    DISPATCHED = "JobsDispatched"
    STARTED = "JobsStarted"
    SUCCEEDED = "JobsSucceeded"
    FAILED = "JobsFailed"
    DEAD = "JobsDead"
    DUPLICATES_DROPPED = "DuplicateDeliveriesDropped"
    UNPARSABLE_MESSAGES = "UnparsableMessages"
    START_LATENESS_MS = "StartLatenessMs"
    OLDEST_DUE_LATENESS_MS = "OldestDueLatenessMs"
    # A recurring job's occurrence died: the value is how many in a row have (its alarm's threshold
    # is the deployment's setting).
    DEAD_OCCURRENCES_IN_A_ROW = "DeadOccurrencesInARow"
    # Deliveries a limit key held back (each is sent again for later), and how long an occurrence
    # has waited for its key: at each hold the wait so far, when it starts the whole wait. Both are
    # also published per key; their Maximum per key is its oldest wait.
    LIMIT_HELD_BACK = "LimitHeldBack"
    LIMIT_WAIT_MS = "LimitWaitMs"
    # Instants of schedules passed over for a reason nobody chose (misfire, overlap), counted by the
    # write that recorded them (docs/design.md, "Every instant accounted for").
    MISSED_OCCURRENCES = "MissedOccurrences"


# --- Function settings (environment variable names read by sundial/functions/settings.py) ----------------
ENV_TABLE_NAME: Final = "SUNDIAL_TABLE_NAME"
ENV_QUEUE_URL_HIGH: Final = "SUNDIAL_QUEUE_URL_HIGH"
ENV_QUEUE_URL_MEDIUM: Final = "SUNDIAL_QUEUE_URL_MEDIUM"
ENV_QUEUE_URL_LOW: Final = "SUNDIAL_QUEUE_URL_LOW"
ENV_DEAD_LETTER_QUEUE_URL: Final = "SUNDIAL_DEAD_LETTER_QUEUE_URL"
ENV_ENDPOINT_URL: Final = "SUNDIAL_ENDPOINT_URL"
ENV_ALLOW_PRIVATE_TARGETS: Final = "SUNDIAL_ALLOW_PRIVATE_TARGETS"
ENV_EXTRA_LEAD_SECONDS: Final = "SUNDIAL_EXTRA_LEAD_SECONDS"
ENV_PRECISION: Final = "SUNDIAL_PRECISION"
ENV_HISTORY: Final = "SUNDIAL_HISTORY"
ENV_RETENTION_DAYS: Final = "SUNDIAL_RETENTION_DAYS"
# The stage's signing secret (docs/operations.md: the signing secret); unset, deliveries go unsigned.
ENV_SIGNING_SECRET_ARN: Final = "SUNDIAL_SIGNING_SECRET_ARN"
ENV_HEADER_KEY_ARN: Final = "SUNDIAL_HEADER_KEY_ARN"
# Modules of python handlers of one's own, comma-separated, imported at cold start (docs/handlers.md).
ENV_HANDLERS: Final = "SUNDIAL_HANDLERS"
# The due index's shard count, and the count before a change (readers cover both until rows moved).
ENV_DUE_SHARDS: Final = "SUNDIAL_DUE_SHARDS"
ENV_DUE_SHARDS_BEFORE: Final = "SUNDIAL_DUE_SHARDS_BEFORE"
# The filter indexes that exist and are backfilled (comma-separated names; unset: all of them).
ENV_LIST_INDEXES: Final = "SUNDIAL_LIST_INDEXES"
# The stack the function belongs to: the value of every metric's METRICS_STACK_DIMENSION.
ENV_STACK_NAME: Final = "SUNDIAL_STACK_NAME"


class Precision(StrEnum):
    """How a message's SQS delay is rounded: the deployment's price of starting on the instant."""

    # Arrive up to a second early; the worker waits out the rest (billed Lambda time): jobs start
    # within tens of milliseconds of their instant.
    SECOND = "second"
    # Arrive on or after the instant, rounded up to SQS's whole seconds: nothing to wait for, and
    # a job starts up to a second (plus SQS's own pick-up time) after its instant, never before.
    SQS = "sqs"


class History(StrEnum):
    """Which attempts leave a history item (the job's last_run is kept either way)."""

    ALL = "all"
    # Failures, timeouts, dead and lost attempts, and one-off successes; a recurring job's successes
    # only update its last_run: one write per execution fewer.
    FAILURES = "failures"
