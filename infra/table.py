"""The jobs table: the source of truth, with the sparse due index and the listing indexes.

Keys and index names come from `shared.constants`; the table's name does not (see below), and the
functions read it from their environment.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from infra.capacity_settings import Capacity, WarmThroughput
from sundial.shared import constants as c


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
        list_indexes: int = len(c.FILTER_INDEXES),
        warm: WarmThroughput | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        # On-demand by default: load follows the schedules' peaks and needs no planning. A steady
        # load is cheaper provisioned (docs/operations.md prices both), with auto scaling on the table
        # and each index so a peak above the steady one is throttled only while it scales up.
        provisioned = capacity is not None
        # A burst warms the table and every index it writes at once: a job's writes move its due row,
        # and a create writes the listing indexes, each serving its own warm throughput.
        warm_throughput = (
            dynamodb.WarmThroughput(write_units_per_second=warm.write, read_units_per_second=warm.read)
            if warm is not None
            else None
        )
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
            warm_throughput=warm_throughput,
        )
        # Every index only locates items; the claim and the listing read the item itself, so
        # projecting keys alone keeps every index write small (docs/operations.md prices them).
        self.indexes = [c.DUE_INDEX_NAME, c.LIST_INDEX_NAME, *c.FILTER_INDEXES[:list_indexes]]
        keys = {c.DUE_INDEX_NAME: (c.DUE_SHARD_ATTRIBUTE, c.DUE_KEY_ATTRIBUTE)}
        keys.update({name: (c.LIST_INDEX_KEYS[name], c.LIST_SORT_ATTRIBUTE) for name in self.indexes[1:]})
        for name in self.indexes:
            self.table.add_global_secondary_index(
                index_name=name,
                partition_key=_key(keys[name][0]),
                sort_key=_key(keys[name][1]),
                projection_type=dynamodb.ProjectionType.KEYS_ONLY,
                read_capacity=capacity.read_min if capacity else None,
                write_capacity=capacity.write_min if capacity else None,
                warm_throughput=warm_throughput,
            )
        if capacity is not None:
            self._auto_scale(capacity)

    def _auto_scale(self, capacity: Capacity) -> None:
        """Target tracking on reads and writes of the table and of each index."""
        target = capacity.target_utilization
        table = self.table
        table.auto_scale_read_capacity(
            min_capacity=capacity.read_min, max_capacity=capacity.read_max
        ).scale_on_utilization(target_utilization_percent=target)
        table.auto_scale_write_capacity(
            min_capacity=capacity.write_min, max_capacity=capacity.write_max
        ).scale_on_utilization(target_utilization_percent=target)
        for index in self.indexes:
            table.auto_scale_global_secondary_index_read_capacity(
                index, min_capacity=capacity.read_min, max_capacity=capacity.read_max
            ).scale_on_utilization(target_utilization_percent=target)
            table.auto_scale_global_secondary_index_write_capacity(
                index, min_capacity=capacity.write_min, max_capacity=capacity.write_max
            ).scale_on_utilization(target_utilization_percent=target)
