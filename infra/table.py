"""The jobs table: the source of truth, with the sparse due index and the listing index.

Keys and index names come from `shared.constants`; the table's name does not (see below), and the
functions read it from their environment.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from shared import constants as c


def _key(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class JobsTable(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, deletion_protection: bool) -> None:
        super().__init__(scope, construct_id)
        self.table = dynamodb.Table(
            self,
            "Table",
            # No table_name: CloudFormation derives one from the stack, so stages share an account and
            # a retry after a failed deploy never meets a name that is still taken.
            partition_key=_key(c.PARTITION_KEY),
            sort_key=_key(c.SORT_KEY),
            # Load follows the schedule's peaks; on-demand needs no capacity planning or autoscaling.
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=deletion_protection,
            time_to_live_attribute=c.TTL_ATTRIBUTE,
            # Jobs and their history outlive the stack and any replacement: deleting either must not
            # delete them. A failed create is the exception, so that its rollback leaves nothing.
            removal_policy=RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
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
