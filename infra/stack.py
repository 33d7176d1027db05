"""The Sundial stack: table, queues, functions, API, tick, alarms and dashboard."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.api import JobsApi
from infra.functions import Functions
from infra.http_api import HttpJobsApi
from infra.monitoring import Monitoring
from infra.queues import JobQueues
from infra.scheduler import Tick
from infra.settings import ApiKind, Settings
from infra.table import JobsTable


class SundialStack(Stack):
    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        settings = Settings.from_context(self.node)
        table = JobsTable(
            self,
            "Jobs",
            deletion_protection=settings.table_deletion_protection,
            capacity=settings.provisioned_capacity,
            list_indexes=settings.list_indexes,
            warm=settings.warm_throughput,
        )
        queues = JobQueues(self, "Queues")
        functions = Functions(self, "Functions", table=table.table, queues=queues, settings=settings)
        # The REST API unless the stage chose the cheaper HTTP API (docs/design.md, "Cost").
        api = (
            HttpJobsApi(self, "Api", handler=functions.api, settings=settings)
            if settings.api is ApiKind.HTTP
            else JobsApi(self, "Api", handler=functions.api, settings=settings)
        )
        Tick(self, "Tick", scheduler=functions.scheduler)
        monitoring = Monitoring(
            self, "Monitoring", functions=functions, queues=queues, api=api.metrics, settings=settings
        )
        CfnOutput(self, "ApiUrl", value=api.url, description="Base URL of the API (IAM auth)")
        CfnOutput(self, "TableName", value=table.table.table_name)
        # The smoke check (`make smoke`) reads the dead-letter queue and the alarms from these.
        CfnOutput(self, "DeadLetterQueueUrl", value=queues.dead_letter.queue_url)
        CfnOutput(self, "AlarmTopicArn", value=monitoring.topic.topic_arn)
        if monitoring.dashboard is not None:
            CfnOutput(self, "DashboardName", value=monitoring.dashboard.dashboard_name)
