"""The three Lambda functions (api, scheduler, worker), their grants and the worker's event sources."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.bundling import ARCHITECTURE, RUNTIME, code_asset
from infra.handlers import handler_sources
from infra.nag import acknowledge
from infra.queues import JobQueues
from infra.settings import Settings
from infra.table_grants import TABLE_ACCESS, grant_table
from infra.targets import grant_secrets, grant_target_keys, grant_targets
from sundial.contract.bounds import WORKER_FUNCTION_TIMEOUT_SECONDS
from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from sundial.shared.targets.sealing import CONTEXT_KEY as SEALING_CONTEXT_KEY

# API Gateway answers 504 after 29 s. The function stops well before, so that it never works on for
# a client that was already told the request failed, and its own log says what took so long.
API_TIMEOUT_SECONDS = 25
# A tick must finish before the next one starts in the normal case.
SCHEDULER_TIMEOUT_SECONDS = c.TICK_SECONDS
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# Logs outlive a deleted stack (until their retention ends) but not the rollback of a failed create,
# which would otherwise leave them behind for nothing.
LOG_REMOVAL_POLICY = RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE


@dataclass(frozen=True)
class _Spec:
    handler: str
    timeout_seconds: int
    memory_mb: int


_SPECS: Mapping[str, _Spec] = {
    "Api": _Spec("sundial.functions.api.handler", API_TIMEOUT_SECONDS, 512),
    # Claiming and dispatching a minute's jobs is CPU-bound JSON work: more memory, more CPU.
    "Scheduler": _Spec("sundial.functions.scheduler.handler", SCHEDULER_TIMEOUT_SECONDS, 1024),
    # The worker mostly waits: on its target, and out the sub-second early arrival of its message.
    # Billed by the GB-second, that wait is most of a job's cost, and 256 MB holds the runtime well.
    "Worker": _Spec("sundial.functions.worker.handler", WORKER_FUNCTION_TIMEOUT_SECONDS, 256),
}


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        table: dynamodb.ITable,
        queues: JobQueues,
        settings: Settings,
    ) -> None:
        super().__init__(scope, construct_id)
        code = code_asset(extra=handler_sources(settings.handlers))
        environment = _environment(Stack.of(self).stack_name, table.table_name, queues, settings)
        made = {name: self._function(name, spec, code, environment) for name, spec in _SPECS.items()}
        self.api, self.scheduler, self.worker = made["Api"], made["Scheduler"], made["Worker"]
        if settings.handlers:
            # The API checks a python target's handler at create, the worker runs it.
            for function in (self.api, self.worker):
                function.add_environment(c.ENV_HANDLERS, ",".join(settings.handlers))
        self._bound_scheduler(settings.scheduler_reserved_concurrency)
        for name, fn in made.items():
            grant_table(fn, table, TABLE_ACCESS[name])
        queues.grant_send(self.api, dead_letter=False)
        queues.grant_read_depths(self.api)
        # A reclaimed job whose attempts are spent dies in the scheduler; a failed one in the worker.
        queues.grant_send(self.scheduler, dead_letter=True)
        queues.grant_send(self.worker, dead_letter=True)
        self._add_worker_sources(queues, settings)
        grant_targets(self, _role(self.worker), settings.target_arns)
        grant_target_keys(_role(self.worker), settings.target_kms_key_arns)
        grant_secrets(_role(self.worker), settings.secret_arns)
        self.signing_secret = self._signing_secret()
        self.stage_key = self._stage_key()
        for fn in self.all:
            _acknowledge(fn)

    def _add_worker_sources(self, queues: JobQueues, settings: Settings) -> None:
        # One event source per queue, each with its own ceiling: a low flood never takes high's capacity.
        for priority, queue in queues.by_priority.items():
            pollers = settings.provisioned_pollers.get(priority)
            self.worker.add_event_source(
                sources.SqsEventSource(
                    queue,
                    # Up to ten jobs per invocation, run side by side (sundial/functions/worker.py): a burst
                    # shares its receives, deletes and invocations. No batching window, so no job
                    # waits for a batch to fill; each attempt nests in the invocation's time.
                    batch_size=c.WORKER_BATCH_SIZE,
                    max_batching_window=None,
                    report_batch_item_failures=True,
                    # Lambda takes one or the other: provisioned pollers bound the queue's concurrency
                    # themselves (docs/operations.md).
                    max_concurrency=None if pollers else settings.max_concurrency[priority],
                    provisioned_poller_config=(
                        lambda_.ProvisionedPollerConfig(
                            minimum_pollers=pollers.minimum, maximum_pollers=pollers.maximum
                        )
                        if pollers
                        else None
                    ),
                )
            )

    def _signing_secret(self) -> secretsmanager.Secret:
        """One per stage (docs/operations.md: the signing secret): receivers keep one secret per
        sender, and a rotation is one operation instead of one per job."""
        secret = secretsmanager.Secret(
            self,
            "SigningSecret",
            description="Signs Sundial's deliveries (Standard Webhooks); each of its keys signs",
            # 32 letters and digits are a valid base64 key of 24 bytes, as Standard Webhooks wants.
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=32, exclude_punctuation=True, include_space=False
            ),
        )
        # GetSecretValue only: grant_read would add DescribeSecret, which the worker never calls.
        iam.Grant.add_to_principal(
            grantee=_role(self.worker),
            actions=["secretsmanager:GetSecretValue"],
            resource_arns=[secret.secret_arn],
        )
        self.worker.add_environment(c.ENV_SIGNING_SECRET_ARN, secret.secret_arn)
        acknowledge(
            secret,
            "AwsSolutions-SMG4",
            "Rotating the signing secret needs every receiver to take the new one; the operator "
            "rotates it on their schedule (docs/operations.md), the old and new keys signing meanwhile.",
        )
        return secret

    def _stage_key(self) -> kms.Key:
        """The stage's one customer managed key ($1 a month each). It seals inline header values
        (docs/operations.md: sealed header values): the API may only encrypt with it and the worker
        only decrypt, each only under a job's encryption context, so a reader of the table or its
        backups reads ciphertext and no function but the worker opens it. The alarm topic is
        encrypted with it too (Monitoring), CloudWatch's use bound to that topic's context; a
        ciphertext opens only under the context it was sealed with, so neither use can open the
        other's."""
        key = kms.Key(
            self,
            # The id the key had when it sealed header values alone: a new id would be a new key,
            # and the values sealed under the old one would no longer open.
            "HeaderKey",
            description="Seals Sundial's inline header values and encrypts its alarm topic",
            enable_key_rotation=True,
            # A deleted key makes every sealed value unreadable: a deleted stack keeps it (a failed
            # first create, which sealed nothing yet, does not).
            removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
        )
        sealed_for_a_job = {"StringLike": {f"kms:EncryptionContext:{SEALING_CONTEXT_KEY}": "*"}}
        for function, action in ((self.api, "kms:Encrypt"), (self.worker, "kms:Decrypt")):
            _role(function).add_to_principal_policy(
                iam.PolicyStatement(actions=[action], resources=[key.key_arn], conditions=sealed_for_a_job)
            )
            function.add_environment(c.ENV_HEADER_KEY_ARN, key.key_arn)
        return key

    @property
    def all(self) -> list[lambda_.Function]:
        return [self.api, self.scheduler, self.worker]

    def _function(
        self, name: str, spec: _Spec, code: lambda_.Code, environment: Mapping[str, str]
    ) -> lambda_.Function:
        log_group = logs.LogGroup(
            self, f"{name}Logs", retention=LOG_RETENTION, removal_policy=LOG_REMOVAL_POLICY
        )
        # An own role that may write to this log group only, instead of the managed basic execution
        # policy, which may write to every log group of the account.
        role = iam.Role(
            self,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Sundial {name.lower()} function",
        )
        log_group.grant_write(role)
        return lambda_.Function(
            self,
            name,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=code,
            handler=spec.handler,
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            environment=dict(environment),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            role=role,
        )

    def _bound_scheduler(self, reserved: int | None) -> None:
        fn = self.scheduler
        # Opt-in only. Without it, the 60 s timeout of a tick fired every 60 s already keeps overlapping
        # ticks to two, and both are safe (claims are conditional writes).
        if reserved is not None:
            cast(lambda_.CfnFunction, fn.node.default_child).reserved_concurrent_executions = reserved
        # A tick that could not run is superseded by the next one a minute later: retrying a stale
        # tick (or queueing it for hours while throttled) would only add load. The same holds for
        # a claimer's share of the shards (sundial/shared/engine/claimers.py): the next tick reads them again.
        fn.configure_async_invoke(retry_attempts=0, max_event_age=Duration.seconds(c.TICK_SECONDS))
        # A tick hands shares of a large due window to claimers: invocations of this same function.
        # A policy of its own: in the role's default policy, the function's ARN would make the
        # function depend on itself.
        iam.Policy(
            self,
            "SchedulerInvokesClaimers",
            roles=[_role(fn)],
            statements=[iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[fn.function_arn])],
        )


def _environment(stack_name: str, table_name: str, queues: JobQueues, settings: Settings) -> dict[str, str]:
    urls = {priority: queue.queue_url for priority, queue in queues.by_priority.items()}
    shards = {c.ENV_DUE_SHARDS: settings.due_shards, c.ENV_DUE_SHARDS_BEFORE: settings.due_shards_before}
    return {
        **{name: str(count) for name, count in shards.items() if count is not None},
        c.ENV_TABLE_NAME: table_name,
        c.ENV_QUEUE_URL_HIGH: urls[Priority.HIGH],
        c.ENV_QUEUE_URL_MEDIUM: urls[Priority.MEDIUM],
        c.ENV_QUEUE_URL_LOW: urls[Priority.LOW],
        c.ENV_DEAD_LETTER_QUEUE_URL: queues.dead_letter.queue_url,
        c.ENV_PRECISION: settings.precision.value,
        c.ENV_HISTORY: settings.history.value,
        c.ENV_RETENTION_DAYS: str(settings.retention_days),
        c.ENV_LIST_INDEXES: ",".join(settings.ready_indexes),
        "POWERTOOLS_SERVICE_NAME": c.METRICS_SERVICE,
        "POWERTOOLS_METRICS_NAMESPACE": c.METRICS_NAMESPACE,
        # Every metric names its stack beside the service: the stage's alarms read nothing else.
        c.ENV_STACK_NAME: stack_name,
        # A handler's response goes to no trace: the API's carries job payloads and target headers
        # (an http target's Authorization, say), and a listing would outgrow X-Ray's 64 KB segment.
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        "LOG_LEVEL": "INFO",
    }


def _role(fn: lambda_.Function) -> iam.Role:
    return cast(iam.Role, fn.role)


def _acknowledge(fn: lambda_.Function) -> None:
    acknowledge(
        _role(fn),
        "AwsSolutions-IAM5[Resource::*]",
        "Only the X-Ray statement added by active tracing uses '*': xray:PutTraceSegments and "
        "xray:PutTelemetryRecords support no resource-level permissions.",
    )
    acknowledge(
        fn,
        "AwsSolutions-L1",
        f"{RUNTIME.name} is a supported Lambda runtime (deprecation scheduled for October 2028). "
        "The dependency wheels are built for exactly this interpreter (infra/bundling.py), so a "
        "newer runtime is a deliberate, tested change of one constant, not something to drift into.",
    )
