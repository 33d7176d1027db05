"""Every figure the AWS model uses, each with where it comes from.

`source` names the AWS documentation page (title, then address) the figure is read from; a figure
marked ASSUMPTION is this model's own choice, with the reason beside it. Change a figure here and
nowhere else: the model reads them all from this module.
"""

from __future__ import annotations

from dataclasses import dataclass

ASSUMPTION = "assumption"


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    source: str


DDB_LIMITS = (
    "Amazon DynamoDB: Service, account, and table quotas — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
)
DDB_WARM = (
    "Amazon DynamoDB: Understanding DynamoDB warm throughput — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html"
)
DDB_ON_DEMAND = (
    "Amazon DynamoDB: DynamoDB throughput capacity (on-demand mode, peak traffic and scaling) — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html"
)
DDB_UNITS = (
    "Amazon DynamoDB: Read and write capacity units — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/provisioned-capacity-mode.html"
)
DDB_QUOTAS = (
    "Amazon DynamoDB: Quotas in Amazon DynamoDB (Read/write throughput, Throughput default quotas: per "
    "table, on-demand, 40,000 read request units and 40,000 write request units) — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
)
DDB_PARTITIONS = (
    "Amazon DynamoDB: Best practices for designing and using partition keys effectively in DynamoDB "
    "(every partition delivers at most 3,000 read units and 1,000 write units a second) — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
DDB_WARM_SCENARIOS = (
    "Amazon DynamoDB: Understanding DynamoDB warm throughput in different scenarios — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html"
)
DDB_GSI_THROTTLING = (
    "Amazon DynamoDB: Understanding global secondary index (GSI) write throttling and back pressure in "
    "DynamoDB — https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/gsi-throttling.html"
)
DDB_READ_WRITE = (
    "Amazon DynamoDB: DynamoDB read and write operations (capacity unit consumption for reads: GetItem, "
    "BatchGetItem per item, Query on the total size; eventually consistent half, transactional double) — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html"
)
DDB_TRANSACTIONS = (
    "Amazon DynamoDB: Amazon DynamoDB Transactions: How it works (Capacity management for transactions: "
    "two underlying reads or writes of every item, prepare and commit) — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html"
)
SQS_QUOTAS = (
    "Amazon SQS: Amazon SQS message quotas — "
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html"
)
SQS_DELAY = (
    "Amazon SQS: Amazon SQS delay queues — "
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-delay-queues.html"
)
LAMBDA_SQS = (
    "AWS Lambda: Configuring scaling behavior for SQS event source mappings — "
    "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html"
)
LAMBDA_QUOTAS = (
    "AWS Lambda: Lambda quotas — https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
)
SQS_STANDARD = (
    "Amazon SQS: Amazon SQS standard queues (at-least-once delivery, best-effort ordering) — "
    "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues.html"
)
SQS_AT_LEAST_ONCE = (
    "Amazon SQS: Amazon SQS at-least-once delivery — https://docs.aws.amazon.com/AWSSimpleQueueService/"
    "latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html"
)
SQS_SEND_BATCH = (
    "Amazon SQS API Reference: SendMessageBatch and BatchResultErrorEntry (each entry succeeds or fails "
    "on its own) — https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html"
)
LAMBDA_SCALING = (
    "AWS Lambda: Lambda scaling behavior (concurrency scaling rate) — "
    "https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html"
)
LAMBDA_SQS_PARAMETERS = (
    "AWS Lambda: Lambda parameters for Amazon SQS event source mappings (ProvisionedPollerConfig) — "
    "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html"
)
LAMBDA_POLLER_CONFIG = (
    "AWS Lambda API Reference: ProvisionedPollerConfig — "
    "https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html"
)
LAMBDA_RESERVED = (
    "AWS Lambda: Configuring reserved concurrency for a function; AWS Lambda API Reference: "
    "PutFunctionConcurrency (leave at least 100 simultaneous executions unreserved) — "
    "https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html"
)
LAMBDA_ASYNC_ERRORS = (
    "AWS Lambda: How Lambda handles errors and retries with asynchronous invocation — "
    "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html"
)
APIGW_LAMBDA_ERRORS = (
    "AWS re:Post Knowledge Center: How do I resolve 'Internal server error' (500) from an API Gateway REST "
    "API with a Lambda integration (a throttled backend) — "
    "https://repost.aws/knowledge-center/api-gateway-internal-server-error"
)
EVENTBRIDGE_SCHEDULE = (
    "Amazon EventBridge: Tutorial: Create an EventBridge scheduled rule for AWS Lambda functions ('a delay "
    "of several seconds') — https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-run-lambda-schedule.html"
)
LAMBDA_MEMORY = (
    "AWS Lambda: Configure Lambda function memory — "
    "https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html"
)

# --- DynamoDB capacity ------------------------------------------------------------------------------
PARTITION_WCU = Figure(1000, "write units/s per partition (and per partition key value)", DDB_PARTITIONS)
PARTITION_RCU = Figure(3000, "read units/s per partition (and per partition key value)", DDB_PARTITIONS)
# Reads and writes share a partition: reads / 3,000 + writes / 1,000 <= 1 (bench/scale/dynamo.py,
# partition_has_room).
PARTITION_SHARED = Figure(
    1,
    "share of a partition's second that its reads / 3,000 and writes / 1,000 fill together at most",
    ASSUMPTION + ": no AWS page found states it; AWS's partition count of a provisioned table, "
    "RCU / 3,000 + WCU / 1,000 (its talks on partitions), implies it, while the throttling guide "
    "(Key range throughput exceeded, throttling-key-range-limit-exceeded-mitigation.html) says a "
    "partition throttles reads and writes independently: the stricter reading is kept",
)
TABLE_WARM_WCU = Figure(4000, "write units/s a new on-demand table serves", DDB_WARM)
TABLE_WARM_RCU = Figure(12000, "read units/s a new on-demand table serves", DDB_WARM)
# Each global secondary index has its own warm throughput (DDB_WARM: "available by default for all
# tables and global secondary indexes"), and a write its index cannot take is throttled on the
# table (DDB_GSI_THROTTLING).
INDEX_WARM_WCU = Figure(
    4000,
    "write units/s a new on-demand global secondary index serves",
    ASSUMPTION + ": AWS documents a warm throughput per index (" + DDB_WARM + ") but no figure for a new "
    "index; taken as a new on-demand table's",
)
INDEX_WARM_RCU = Figure(
    12000,
    "read units/s a new on-demand global secondary index serves",
    ASSUMPTION + ": as INDEX_WARM_WCU, a new on-demand table's figure",
)
TABLE_QUOTA_WCU = Figure(40_000, "write units/s an on-demand table (or index) takes at most", DDB_QUOTAS)
TABLE_QUOTA_RCU = Figure(40_000, "read units/s an on-demand table (or index) takes at most", DDB_QUOTAS)
TRANSACTION_MULTIPLE = Figure(2, "times a write's (or read's) units a transaction consumes", DDB_TRANSACTIONS)
EVENTUALLY_CONSISTENT_SHARE = Figure(0.5, "of a strongly consistent read's units", DDB_READ_WRITE)
QUERY_PAGE_BYTES = Figure(
    1024**2,
    "bytes one Query page reads at most",
    "Amazon DynamoDB: Query (API reference: a single Query reads at most 1 MB) — "
    "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html",
)
# A keys-only index entry: the table's keys and the index's, about 100 bytes in Sundial's items.
INDEX_ENTRY_BYTES = Figure(100, "bytes per keys-only index entry", ASSUMPTION + ": Sundial's key lengths")
PEAK_MULTIPLE = Figure(2, "times the previous peak on-demand serves at once", DDB_ON_DEMAND)
PEAK_WINDOW_S = Figure(1800, "seconds over which a doubled peak is reached", DDB_ON_DEMAND)
WRITE_UNIT_BYTES = Figure(1024, "bytes per write unit", DDB_UNITS)
READ_UNIT_BYTES = Figure(4096, "bytes per strongly consistent read unit", DDB_UNITS)
PARTITION_BYTES = Figure(10 * 1024**3, "bytes a partition holds before it splits", DDB_LIMITS)
# What a Sundial job item weighs on average with its index entries: the table's size, and so its
# partition count, for active jobs the model does not materialise (bench/scale/scenario.py).
ITEM_BYTES = Figure(700, "bytes per stored job", ASSUMPTION + ": measured on the model's own items")

# --- SQS ------------------------------------------------------------------------------------------
IN_FLIGHT_CAP = Figure(120_000, "in-flight messages per standard queue", SQS_QUOTAS)
BATCH_ENTRIES = Figure(10, "entries per SendMessageBatch and per receive", SQS_QUOTAS)
MAX_DELAY_S = Figure(900, "s of DelaySeconds at most: more is refused (InvalidParameterValue)", SQS_DELAY)
# Standard queues deliver at least once and in about the order sent; AWS publishes no rate for either
# departure, so each is off unless a scenario turns it on (bench/scale/scenario.py, NAMED).
DUPLICATE_RATE = Figure(
    0.0,
    "share of received messages whose copy stays visible for another receive",
    ASSUMPTION + ": 'on rare occasions' (" + SQS_AT_LEAST_ONCE + "), no rate published",
)
OUT_OF_ORDER_RATE = Figure(
    0.0, "share of visible messages a receive passes over", ASSUMPTION + ": " + SQS_STANDARD + ", no rate"
)
FAILED_ENTRY_RATE = Figure(
    0.0,
    "share of SendMessageBatch entries answered as failed (InternalError, not the sender's fault)",
    ASSUMPTION + ": " + SQS_SEND_BATCH + " allows it; no rate published",
)

# --- Lambda ---------------------------------------------------------------------------------------
ACCOUNT_CONCURRENCY = Figure(1000, "concurrent executions per account and region", LAMBDA_QUOTAS)
# A function's reserved concurrency is its own (no other function may use it) and its most; the
# reservations together must leave this many executions to the functions without one.
UNRESERVED_MIN = Figure(100, "concurrent executions the account keeps unreserved at least", LAMBDA_RESERVED)
# Every function's new environments: 1,000 every 10 seconds, refilled continuously, never saved up.
SCALING_ENVIRONMENTS = Figure(1000, "new execution environments per function per window", LAMBDA_SCALING)
SCALING_WINDOW_S = Figure(10, "seconds of the function scaling rate's window", LAMBDA_SCALING)
# A throttled asynchronous event (a tick, a claimer) goes back to Lambda's queue and is retried.
ASYNC_RETRY_FIRST_S = Figure(1, "s before a throttled asynchronous event's first retry", LAMBDA_ASYNC_ERRORS)
ASYNC_RETRY_MAX_S = Figure(300, "s between retries at most (the interval doubles)", LAMBDA_ASYNC_ERRORS)
ASYNC_MAX_AGE_S = Figure(6 * 3600, "s a throttled asynchronous event is retried for", LAMBDA_ASYNC_ERRORS)
ESM_THROTTLE_BACKOFF_S = Figure(
    1.0,
    "s an SQS event source waits after its function is throttled",
    ASSUMPTION + ": Lambda backs a throttled event source off without publishing how long; the "
    "asynchronous queue's first retry",
)
# API Gateway's REST API answers a throttled Lambda integration with 500 Internal server error.
API_THROTTLED_STATUS = Figure(500, "HTTP status answering a throttled function", APIGW_LAMBDA_ERRORS)
ESM_START = Figure(5, "concurrent batches an idle SQS event source starts with", LAMBDA_SQS)
ESM_RAMP_PER_MIN = Figure(300, "more concurrent invocations a minute (default mode)", LAMBDA_SQS)
ESM_PROVISIONED_RAMP_PER_MIN = Figure(1000, "more concurrent invocations a minute (provisioned)", LAMBDA_SQS)
ESM_MAX = Figure(1250, "concurrent invocations one SQS event source reaches at most", LAMBDA_SQS)
# Provisioned mode excludes MaximumConcurrency: its pollers bound the event source instead, the
# minimum kept warm, each poller running up to 10 invocations at once.
INVOKES_PER_POLLER = Figure(10, "concurrent invocations a provisioned poller runs", LAMBDA_SQS_PARAMETERS)
MIN_POLLERS = Figure(2, "provisioned pollers kept at least (the default minimum)", LAMBDA_POLLER_CONFIG)
MAX_POLLERS = Figure(200, "provisioned pollers at most (the default maximum)", LAMBDA_POLLER_CONFIG)
VCPU_MEMORY_MB = Figure(1769, "MB of configured memory per vCPU", LAMBDA_MEMORY)
TICK_TIMEOUT_S = Figure(60, "seconds the scheduler function may run (the stack's setting)", ASSUMPTION)
WORKER_TIMEOUT_S = Figure(900, "seconds a worker invocation may run (the stack's setting)", ASSUMPTION)
TICK_MEMORY_MB = Figure(1024, "MB of the scheduler function (infra/functions.py)", ASSUMPTION)
WORKER_MEMORY_MB = Figure(256, "MB of the worker function (infra/functions.py)", ASSUMPTION)
# This machine's core runs Python about as fast as a Lambda vCPU: CPU seconds measured here are
# charged one for one at 1,769 MB, and more slowly below it.
CORE_PER_VCPU = Figure(1.0, "local core seconds per Lambda vCPU second", ASSUMPTION)

# --- Latencies (seconds): typical in-region figures, not published by AWS as such -------------------
LATENCY_S = {
    ("dynamodb", "GetItem"): Figure(0.004, "s", ASSUMPTION + ": single-digit ms reads"),
    ("dynamodb", "Query"): Figure(0.020, "s", ASSUMPTION + ": a page of an index"),
    ("dynamodb", "UpdateItem"): Figure(0.008, "s", ASSUMPTION + ": single-digit ms writes"),
    ("dynamodb", "PutItem"): Figure(0.008, "s", ASSUMPTION + ": single-digit ms writes"),
    ("dynamodb", "DeleteItem"): Figure(0.008, "s", ASSUMPTION + ": single-digit ms writes"),
    ("dynamodb", "TransactWriteItems"): Figure(0.016, "s", ASSUMPTION + ": two-phase, twice a write"),
    ("dynamodb", "BatchGetItem"): Figure(0.010, "s", ASSUMPTION),
    ("sqs", "SendMessageBatch"): Figure(0.012, "s", ASSUMPTION + ": 8-15 ms"),
    ("sqs", "SendMessage"): Figure(0.008, "s", ASSUMPTION),
    ("sqs", "ChangeMessageVisibility"): Figure(0.008, "s", ASSUMPTION),
}
DEFAULT_LATENCY_S = Figure(0.010, "s", ASSUMPTION + ": any other call")
# From a message becoming visible to the worker's code running with it: the poller's receive and
# the synchronous invoke of a warm function.
PICKUP_S = Figure(0.060, "s", ASSUMPTION + ": long-poll answer plus a warm invoke")
LAMBDA_INIT = (
    "Serverless Land (AWS): Effectively running Java on Serverless, Utilize initialization phase — "
    "https://serverlessland.com/content/service/lambda/guides/effectively-running-java-on-serverless/"
    "init-heavy-lifting"
)
# An on-demand environment's initialization runs on a full vCPU, whatever the memory, for at most
# 10 s (provisioned concurrency gets no such burst: it initialises before it is used).
INIT_VCPUS = Figure(1.0, "vCPUs an on-demand environment's initialization runs on", LAMBDA_INIT)
# A cold start is the function's module imported in a new environment: the CPU the import takes,
# charged at the full vCPU an initialization runs on (bench/scale/world.py, LambdaFunction). Measured
# as process CPU time around `import <module>` in a fresh interpreter, median of 3, on an AMD EPYC
# (2 cores) under Python 3.11.7 on 2026-12-05; tests/bench/test_scale_conformance_sqs_lambda.py
# measures it again and fails when this table is far from it.
IMPORT_MEASURED = "measured on this project's machine (AMD EPYC, Python 3.11.7, 2026-12-05)"
IMPORT_CPU_S = {
    "sundial.functions.worker": Figure(0.50, "CPU s to import the worker's module", IMPORT_MEASURED),
    "sundial.functions.scheduler": Figure(0.51, "CPU s to import the scheduler's module", IMPORT_MEASURED),
    "sundial.functions.api": Figure(0.60, "CPU s to import the api's module", IMPORT_MEASURED),
}
ASYNC_INVOKE_S = Figure(
    0.050, "s", ASSUMPTION + ": an asynchronous Invoke's event reaching its invocation (cold start apart)"
)
WARM_SCHEDULER_ENVIRONMENTS = Figure(
    4,
    "warm environments of the scheduler function when a run starts",
    ASSUMPTION + ": the ticks and "
    "claimers of the minutes before left them (Lambda keeps an idle environment for some minutes)",
)
TICK_START_S = Figure(0.050, "s at least EventBridge's schedule invokes the tick late", ASSUMPTION)
TICK_LATE_MAX_S = Figure(
    5.0,
    "s at most EventBridge's schedule invokes the tick after its minute",
    EVENTBRIDGE_SCHEDULE + "; ASSUMPTION: 'several' read as 5, each tick's lateness drawn uniformly "
    "from TICK_START_S to it with the run's seed",
)
TARGET_S = Figure(0.050, "s", ASSUMPTION + ": the job's own endpoint answering")

# --- API Gateway and the API function (creates, bench/scale/creates.py) ------------------------------
APIGW_QUOTAS = (
    "Amazon API Gateway: Amazon API Gateway quotas — "
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"
)
APIGW_THROTTLING = (
    "Amazon API Gateway: Throttle requests to your REST APIs for better throughput in API Gateway — "
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html"
)
# Token buckets: the account's, then the stage's (the stack sets the stage's from its settings).
ACCOUNT_API_RATE = Figure(10_000, "requests/s per account and region, steady", APIGW_QUOTAS)
ACCOUNT_API_BURST = Figure(5_000, "requests per account and region at once (the bucket)", APIGW_QUOTAS)
STAGE_API_RATE = Figure(100, "requests/s to the stage: sundial:apiRateLimit (default)", APIGW_THROTTLING)
STAGE_API_BURST = Figure(200, "requests at once to the stage: sundial:apiBurstLimit", APIGW_THROTTLING)
API_TIMEOUT_S = Figure(29, "seconds an integration may take before API Gateway answers 504", APIGW_QUOTAS)
API_MEMORY_MB = Figure(512, "MB of the api function (infra/functions.py)", ASSUMPTION)
APIGW_S = Figure(0.010, "s", ASSUMPTION + ": API Gateway's own work each way, a REST API in the region")
CLIENT_RTT_S = Figure(0.020, "s", ASSUMPTION + ": the importing machine to the region and back")
