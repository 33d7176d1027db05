"""Alarms, all to one SNS topic, and the operations dashboard."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.api import ApiMetrics
from infra.dashboard import FIVE_MINUTES, ONE_MINUTE, build_dashboard, limit_wait_query, sundial_metric
from infra.functions import Functions
from infra.queues import JobQueues
from infra.settings import Settings
from sundial.contract.bounds import WORKER_FUNCTION_TIMEOUT_SECONDS
from sundial.shared import constants as c

# The encryption context key SNS puts on every data key of an encrypted topic.
SNS_CONTEXT_KEY = "aws:sns:topicArn"

# Alarm when a tick's longest run reaches this share of its timeout: the next step is lost ticks.
SCHEDULER_DURATION_SHARE = 0.8
# A message may wait out its whole SQS delay and then stay in flight while its job runs for the
# whole worker timeout; only beyond both, plus a margin, is a queue stuck. Precision is watched by
# the start-lateness alarm, not by this one.
OLDEST_MESSAGE_AGE_SECONDS = c.MAX_DELAY_SECONDS + WORKER_FUNCTION_TIMEOUT_SECONDS + 300
# Minutes without a tick before the alarm: one late or lost EventBridge delivery is not an outage.
TICK_STOPPED_MINUTES = 5
# A held occurrence reports its wait each time it looks again, up to SQS's longest delay apart: the
# limit wait alarm stays in alarm while any report of the last that many minutes breached.
LIMIT_WAIT_PERIODS = -(-c.MAX_DELAY_SECONDS // int(FIVE_MINUTES.to_seconds()))


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Functions,
        queues: JobQueues,
        api: ApiMetrics,
        settings: Settings,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = self._topic(settings.alarm_email, functions.stage_key)
        self.alarms: list[cw.Alarm] = []
        self._job_alarms(queues, settings.start_lateness_p99_threshold_ms)
        self._streak_alarm(settings.dead_occurrences_in_a_row)
        self._missed_alarm(settings.missed_occurrences_alarm)
        self._limit_wait_alarm(settings.limit_wait_alarm_seconds)
        self._scheduler_alarms(functions.scheduler)
        self._tick_alarm(functions.scheduler)
        for priority, queue in queues.by_priority.items():
            age = queue.metric_approximate_age_of_oldest_message(statistic="Maximum", period=FIVE_MINUTES)
            self._alarm(
                f"OldestMessage{priority.value.capitalize()}",
                f"The {priority.value} queue's oldest message is older than expected (s)",
                age,
                OLDEST_MESSAGE_AGE_SECONDS,
            )
        self._let_alarms_publish()
        self.dashboard = (
            build_dashboard(
                self,
                "Dashboard",
                functions=functions,
                queues=queues,
                api=api,
                alarms=self.alarms,
                limit_wait_alarm_ms=settings.limit_wait_alarm_seconds * 1000,
            )
            if settings.dashboard
            else None
        )

    def _topic(self, email: str | None, key: kms.IKey) -> sns.Topic:
        # CloudWatch alarms cannot publish with the AWS managed SNS key, so the topic takes the
        # stage's key (Functions), whose policy lets CloudWatch use it for this topic alone: SNS
        # names the topic in the encryption context of every key it asks for.
        topic = sns.Topic(self, "Alarms", display_name="Sundial alarms", master_key=key, enforce_ssl=True)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsEncryptForTheAlarmTopic",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Stack.of(self).account},
                    # The topic's own ARN would make the key and the topic each other's dependency.
                    "StringLike": {f"kms:EncryptionContext:{SNS_CONTEXT_KEY}": self._own_topics_arn()},
                },
            )
        )
        if email:
            topic.add_subscription(subscriptions.EmailSubscription(email))
        return topic

    def _own_topics_arn(self) -> str:
        stack = Stack.of(self)
        return f"arn:{stack.partition}:sns:{stack.region}:{stack.account}:*"

    def _let_alarms_publish(self) -> None:
        """A topic policy replaces SNS's default one: with only enforce_ssl's Deny in it, nothing may
        publish, and every alarm action fails. This lets CloudWatch publish for these alarms alone."""
        stack = Stack.of(self)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": [alarm.alarm_arn for alarm in self.alarms]},
                },
            )
        )

    def _alarm(
        self,
        construct_id: str,
        description: str,
        metric: cw.IMetric,
        threshold: float,
        *,
        periods: int = 1,
        datapoints: int | None = None,
        comparison: cw.ComparisonOperator = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        # No data means nothing happened: no dead job, no tick error.
        missing: cw.TreatMissingData = cw.TreatMissingData.NOT_BREACHING,
    ) -> None:
        alarm = cw.Alarm(
            self,
            construct_id,
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=periods,
            datapoints_to_alarm=datapoints,
            treat_missing_data=missing,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms.append(alarm)

    def _job_alarms(self, queues: JobQueues, lateness_threshold_ms: int) -> None:
        dlq = queues.dead_letter.metric_approximate_number_of_messages_visible(
            statistic="Maximum", period=ONE_MINUTE
        )
        self._alarm("DeadLetterMessages", "The dead-letter queue holds messages", dlq, 1)
        stack_name = Stack.of(self).stack_name
        dead = sundial_metric(stack_name, c.Metric.DEAD, "Sum")
        self._alarm("DeadJobs", "A job exhausted its attempts and is DEAD", dead, 1)
        lateness = sundial_metric(stack_name, c.Metric.START_LATENESS_MS, "p99", FIVE_MINUTES)
        description = f"p99 of job start lateness is at least {lateness_threshold_ms} ms"
        self._alarm("StartLatenessP99", description, lateness, lateness_threshold_ms, periods=2, datapoints=2)

    def _streak_alarm(self, in_a_row: int) -> None:
        # Each death of a recurring job's occurrence reports how many in a row have died.
        streak = sundial_metric(Stack.of(self).stack_name, c.Metric.DEAD_OCCURRENCES_IN_A_ROW, "Maximum")
        description = f"A recurring job's occurrences died {in_a_row} times in a row"
        self._alarm("DeadOccurrencesInARow", description, streak, in_a_row)

    def _missed_alarm(self, threshold: int) -> None:
        # Instants passed over for a reason nobody chose: downtime (misfire) or runs that outlast
        # their interval (overlap). GET /jobs/{id}/occurrences and the jobs' `missed` say which.
        missed = sundial_metric(Stack.of(self).stack_name, c.Metric.MISSED_OCCURRENCES, "Sum", FIVE_MINUTES)
        description = (
            f"At least {threshold} instants of schedules were missed (misfire or overlap) in 5 minutes"
        )
        self._alarm("MissedOccurrences", description, missed, threshold)

    def _limit_wait_alarm(self, seconds: int) -> None:
        """An occurrence has waited longer than `seconds` for its limit key. Keys are the jobs' own and
        come and go, so no alarm can name them: a Metrics Insights query reads every key's series of
        this stack at once (an alarm cannot read a SEARCH)."""
        oldest = cw.MathExpression(
            expression=limit_wait_query(Stack.of(self).stack_name),
            period=FIVE_MINUTES,
            label="oldest wait on a limit key (ms)",
        )
        self._alarm(
            "LimitWait",
            f"An occurrence has waited more than {seconds} s for its limit key (the dashboard's "
            "limit key graphs show which key)",
            oldest,
            seconds * 1000,
            periods=LIMIT_WAIT_PERIODS,
            datapoints=1,
            comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        )

    def _scheduler_alarms(self, scheduler: lambda_.Function) -> None:
        # One failed tick is repaired by the next; two in three minutes is a broken scheduler.
        errors = scheduler.metric_errors(statistic="Sum", period=ONE_MINUTE)
        self._alarm("SchedulerErrors", "Scheduler ticks fail", errors, 1, periods=3, datapoints=2)
        throttles = scheduler.metric_throttles(statistic="Sum", period=FIVE_MINUTES)
        self._alarm(
            "SchedulerThrottles",
            "Scheduler ticks are throttled (the account's or the reserved concurrency is used up)",
            throttles,
            1,
        )
        timeout_ms = (scheduler.timeout or Duration.seconds(c.TICK_SECONDS)).to_milliseconds()
        duration = scheduler.metric_duration(statistic="Maximum", period=ONE_MINUTE)
        self._alarm(
            "SchedulerDuration",
            "Scheduler ticks run close to their timeout",
            duration,
            SCHEDULER_DURATION_SHARE * timeout_ms,
            periods=3,
            datapoints=2,
        )

    def _tick_alarm(self, scheduler: lambda_.Function) -> None:
        """The tick fires every minute. A disabled rule or a lost invoke permission leaves no errors,
        only no invocations, so here missing data is what breaches."""
        invocations = scheduler.metric_invocations(statistic="Sum", period=ONE_MINUTE)
        self._alarm(
            "TickStopped",
            f"The scheduler has not run for {TICK_STOPPED_MINUTES} minutes: jobs are not claimed",
            invocations,
            1,
            periods=TICK_STOPPED_MINUTES,
            datapoints=TICK_STOPPED_MINUTES,
            comparison=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            missing=cw.TreatMissingData.BREACHING,
        )
