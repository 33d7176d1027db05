"""The jobs table: the source of truth, with the sparse due index and the listing index."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from shared import constants as c


def _key(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class JobsTable(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            table_name=c.TABLE_NAME,
            partition_key=_key(c.PARTITION_KEY),
            sort_key=_key(c.SORT_KEY),
            # Load follows the schedule's peaks; on-demand needs no capacity planning or autoscaling.
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            time_to_live_attribute=c.TTL_ATTRIBUTE,
            # Jobs and their history outlive the stack: deleting it must not delete them.
            removal_policy=RemovalPolicy.RETAIN,
        )
        # Both indexes only locate items; the claim reads the item itself with a conditional write,
        # so projecting keys alone keeps every index write small.
        self.table.add_global_secondary_index(
            index_name=c.DUE_INDEX_NAME,
            partition_key=_key(c.DUE_SHARD_ATTRIBUTE),
            sort_key=_key(c.DUE_KEY_ATTRIBUTE),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
        self.table.add_global_secondary_index(
            index_name=c.LIST_INDEX_NAME,
            partition_key=_key(c.LIST_PARTITION_ATTRIBUTE),
            sort_key=_key(c.LIST_SORT_ATTRIBUTE),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
        )
