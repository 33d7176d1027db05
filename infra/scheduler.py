"""The tick: an EventBridge rule that invokes the scheduler function once a minute."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from sundial.shared import constants as c


class Tick(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, scheduler: lambda_.IFunction) -> None:
        super().__init__(scope, construct_id)
        self.rule = events.Rule(
            self,
            "Rule",
            description="Sundial tick: claim and dispatch the jobs due before the next tick",
            schedule=events.Schedule.rate(Duration.seconds(c.TICK_SECONDS)),
            targets=[
                # The next tick comes a minute later and covers whatever this one missed.
                targets.LambdaFunction(
                    scheduler, retry_attempts=0, max_event_age=Duration.seconds(c.TICK_SECONDS)
                )
            ],
        )
