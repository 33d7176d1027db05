"""Each function's access to the jobs table: the DynamoDB actions its code calls, and no more.

`grant_read_write_data` would add Scan to every function (only the api scans, for GET /stats), and
BatchWriteItem, DescribeTable and the stream reads, which Sundial never calls, and ConditionCheckItem
to the functions that never check an item in a transaction.
The IAM contract test (tests/infra/test_iam_contract.py) records every call the functions make in
the test suite and fails on one that these do not allow.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam

from sundial.shared import constants as c


@dataclass(frozen=True)
class TableAccess:
    # On the table itself. TransactWriteItems is authorised item by item (its Update as UpdateItem,
    # its Put as PutItem, its ConditionCheck as ConditionCheckItem), and BatchGetItem is an action
    # of its own.
    actions: tuple[str, ...]
    # Indexes this function queries.
    indexes: tuple[str, ...] = ()


_WRITES = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")

TABLE_ACCESS: Mapping[str, TableAccess] = {
    # Jobs, payload items, idempotency reservations and history: read, create, change. The run
    # history is a query of the table; the listing queries the listing indexes and fetches what it
    # found in batches. The API never ends an occurrence DEAD, so it never clears an owed alert. GET /stats
    # counts jobs with a Scan kept for a bounded age and reads the earliest entry of each due shard.
    "Api": TableAccess(
        (*_WRITES, "dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:Scan"),
        (c.LIST_INDEX_NAME, *c.FILTER_INDEXES, c.DUE_INDEX_NAME),
    ),
    # Claims and reclaims what the due index holds; sends owed alerts and clears them; reads its
    # sent marks, one item per shard, in one query of their partition. Advances bulk operations: lists
    # their jobs as GET /jobs does, acts on each, and deletes an operation's pointer once it is done.
    "Scheduler": TableAccess(
        (*_WRITES, "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchGetItem"),
        (c.DUE_INDEX_NAME, c.LIST_INDEX_NAME, *c.FILTER_INDEXES),
    ),
    # Fences, heartbeats and settles one job by its key; clears the alert it sent. A booked start's
    # fence checks its limit shard's share in the same transaction.
    "Worker": TableAccess((*_WRITES, "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem")),
}


def grant_table(grantee: iam.IGrantable, table: dynamodb.ITable, access: TableAccess) -> None:
    iam.Grant.add_to_principal(grantee=grantee, actions=list(access.actions), resource_arns=[table.table_arn])
    if access.indexes:
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["dynamodb:Query"],
            resource_arns=[index_arn(table, name) for name in access.indexes],
        )


def index_arn(table: dynamodb.ITable, index_name: str) -> str:
    return f"{table.table_arn}/index/{index_name}"
