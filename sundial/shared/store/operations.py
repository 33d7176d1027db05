"""Bulk operations' items: the operation itself, and a pointer to it while it runs.

An operation is one item holding its request, cursor, slice and counts as JSON, with its version
and its runner's lease as attributes that the writes' conditions read. While it runs, a pointer
item in one partition names it, so that the tick finds the running ones with one query
(sundial/shared/service/operations.py); the tick deletes a pointer once its operation is done.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from sundial.contract.vocabulary import OperationState
from sundial.shared import constants as c
from sundial.shared.models import Operation
from sundial.shared.store import items
from sundial.shared.store.writes import StoreWrites, is_condition_failure

OPERATION_SK = "OPERATION"
RUNNING_PK = "OPERATIONS#running"
# Operations are kept this long after they start, as the record of who did what to how many jobs.
OPERATION_TTL_SECONDS = 90 * 24 * 3600
_TAKE_NAMES = {"#pk": c.PARTITION_KEY, "#state": "state", "#runner": "runner", "#lease": "lease_until"}


def operation_key(operation_id: str) -> dict[str, Any]:
    return {c.PARTITION_KEY: {"S": f"OP#{operation_id}"}, c.SORT_KEY: {"S": OPERATION_SK}}


def _pointer_key(operation_id: str) -> dict[str, Any]:
    return {c.PARTITION_KEY: {"S": RUNNING_PK}, c.SORT_KEY: {"S": operation_id}}


def _item(operation: Operation, runner: str, lease_until: int) -> dict[str, Any]:
    values = {
        "body": operation.model_dump_json(),
        "version": operation.version,
        "runner": runner,
        "lease_until": lease_until,
        "state": operation.state.value,
        c.TTL_ATTRIBUTE: operation.created_at // 1000 + OPERATION_TTL_SECONDS,
    }
    return {**operation_key(operation.id), **items.serialize(values)}


def _operation(item: dict[str, Any]) -> Operation:
    return Operation.model_validate_json(item["body"]["S"])


class OperationStore(StoreWrites):
    def put_operation(self, operation: Operation, runner: str, lease_until: int) -> None:
        """The new operation, its lease `runner`'s, and its pointer: both or neither."""
        pointer = {**_pointer_key(operation.id), **items.serialize({"created_at": operation.created_at})}
        self._client.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": _item(operation, runner, lease_until),
                        "ConditionExpression": "attribute_not_exists(#pk)",
                        "ExpressionAttributeNames": {"#pk": c.PARTITION_KEY},
                    }
                },
                {"Put": {"TableName": self._table, "Item": pointer}},
            ]
        )

    def operation(self, operation_id: str) -> Operation | None:
        response = self._client.get_item(
            TableName=self._table, Key=operation_key(operation_id), ConsistentRead=True
        )
        item = response.get("Item")
        return _operation(item) if item else None

    def running_operations(self) -> list[str]:
        """The ids of the operations whose pointer is still there, oldest first."""
        ids: list[str] = []
        paginator = self._client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": c.PARTITION_KEY},
            ExpressionAttributeValues={":pk": {"S": RUNNING_PK}},
            ConsistentRead=True,
        ):
            ids += [item[c.SORT_KEY]["S"] for item in page["Items"]]
        return ids

    def forget_operation(self, operation_id: str) -> None:
        """Deletes the pointer of an operation that is done."""
        self._client.delete_item(TableName=self._table, Key=_pointer_key(operation_id))

    def take_operation(self, operation_id: str, runner: str, lease_until: int) -> Operation | None:
        """The running operation, its lease now `runner`'s; None when done, gone, or another runner's
        lease has not run out."""
        try:
            response = self._client.update_item(
                TableName=self._table,
                Key=operation_key(operation_id),
                UpdateExpression="SET #runner = :runner, #lease = :lease",
                ConditionExpression="attribute_exists(#pk) AND #state = :running AND "
                "(#lease < :now OR #runner = :runner)",
                ExpressionAttributeNames=_TAKE_NAMES,
                ExpressionAttributeValues={
                    ":runner": {"S": runner},
                    ":lease": {"N": str(lease_until)},
                    ":now": {"N": str(self._clock.now_ms())},
                    ":running": {"S": OperationState.RUNNING.value},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return _operation(response["Attributes"])

    def save_operation(self, operation: Operation, runner: str, lease_until: int) -> Operation | None:
        """Writes the next version of an operation while `runner` holds its lease (lease_until 0
        gives it up). None when the lease was lost: another runner has taken the operation on."""
        saved = operation.model_copy(update={"version": operation.version + 1})
        item = _item(saved, runner, lease_until)
        try:
            self._client.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="#version = :version AND #runner = :runner",
                ExpressionAttributeNames={"#version": "version", "#runner": "runner"},
                ExpressionAttributeValues={
                    ":version": {"N": str(operation.version)},
                    ":runner": {"S": runner},
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            found: dict[str, Any] = exc.response.get("Item") or {}  # type: ignore[assignment]
            return saved if found.get("body") == item["body"] else None  # a retry of our own write
        return saved
