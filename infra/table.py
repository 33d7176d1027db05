"""The jobs table: the source of truth, with the sparse due index and the listing index.

Keys and index names come from `shared.constants`; the table's name does not (see below), and the
functions read it from their environment.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra.settings import Capacity
from shared import constants as c


def _key(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)


class JobsTable(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        deletion_protection: bool,
        capacity: Capacity | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        # On-demand by default: load follows the schedules' peaks and needs no planning. A steady
        # load is cheaper provisioned (docs/operations.md prices both), with auto scaling on the table
        # and each index so a peak above the steady one is throttled only while it scales up.
        provisioned = capacity is not None
        self.table = dynamodb.Table(
            self,
            "Table",
            # No table_name: CloudFormation derives one from the stack, so stages share an account and
            # a retry after a failed deploy never meets a name that is still taken.
            partition_key=_key(c.PARTITION_KEY),
            sort_key=_key(c.SORT_KEY),
            billing_mode=(
                dynamodb.BillingMode.PROVISIONED if provisioned else dynamodb.BillingMode.PAY_PER_REQUEST
            ),
            read_capacity=capacity.read_min if capacity else None,
            write_capacity=capacity.write_min if capacity else None,
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
            read_capacity=capacity.read_min if capacity else None,
            write_capacity=capacity.write_min if capacity else None,
        )
        self.table.add_global_secondary_index(
            index_name=c.LIST_INDEX_NAME,
            partition_key=_key(c.LIST_PARTITION_ATTRIBUTE),
            sort_key=_key(c.LIST_SORT_ATTRIBUTE),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
            read_capacity=capacity.read_min if capacity else None,
            write_capacity=capacity.write_min if capacity else None,
        )
        if capacity is not None:
            self._auto_scale(capacity)

    def _auto_scale(self, capacity: Capacity) -> None:
        """Target tracking on reads and writes of the table and of both indexes."""
        target = capacity.target_utilization
        table = self.table
        table.auto_scale_read_capacity(
            min_capacity=capacity.read_min, max_capacity=capacity.read_max
        ).scale_on_utilization(target_utilization_percent=target)
        table.auto_scale_write_capacity(
            min_capacity=capacity.write_min, max_capacity=capacity.write_max
        ).scale_on_utilization(target_utilization_percent=target)
        for index in (c.DUE_INDEX_NAME, c.LIST_INDEX_NAME):
            table.auto_scale_global_secondary_index_read_capacity(
                index, min_capacity=capacity.read_min, max_capacity=capacity.read_max
            ).scale_on_utilization(target_utilization_percent=target)
            table.auto_scale_global_secondary_index_write_capacity(
                index, min_capacity=capacity.write_min, max_capacity=capacity.write_max
            ).scale_on_utilization(target_utilization_percent=target)
