"""The model's fast table: DynamoDB's item semantics for the requests Sundial's store sends (GetItem,
PutItem, UpdateItem, DeleteItem, TransactWriteItems, Query of the base table, BatchGetItem), answered
natively on items kept in DynamoDB's JSON form. The test's small scenario (about 1,400 requests)
costs 2 s of CPU on it, and 13 s with moto answering every request beside it.

Conditions and updates are evaluated by bench/scale/expressions.py; a request outside what it
answers raises Unsupported rather than being answered loosely. The cross-check (dynamo.py's "both")
answers every request here and through moto, and counts where the answers differ.
"""

from __future__ import annotations

import json
from typing import Any

from bench.scale import expressions as ex
from bench.scale.expressions import Invalid, Unsupported
from sundial.shared import constants as c

Item = dict[str, Any]
KEY = tuple[str, str]
Answer = tuple[int, dict[str, str], bytes]
CHECK_FAILED = "The conditional request failed"


class NativeTable:
    def __init__(self, name: str) -> None:
        self.name = name
        self.items: dict[str, dict[str, Item]] = {}

    def item(self, key: KEY) -> Item | None:
        return self.items.get(key[0], {}).get(key[1])

    def put(self, item: Item) -> None:
        pk, sk = item[c.PARTITION_KEY]["S"], item[c.SORT_KEY]["S"]
        self.items.setdefault(pk, {})[sk] = item

    def answer(self, operation: str, body: dict[str, Any], request: Any = None) -> Answer:
        try:
            handler = getattr(self, "_" + operation)
        except AttributeError:
            raise Unsupported(operation) from None
        try:
            result: Answer = handler(body)
        except Invalid as exc:
            return _error("ValidationException", str(exc))
        return result

    # --- operations ---------------------------------------------------------------------------------

    def _CreateTable(self, body: dict[str, Any]) -> Answer:  # noqa: N802 - DynamoDB's operation names
        return _ok({"TableDescription": {"TableName": body["TableName"], "TableStatus": "ACTIVE"}})

    def _GetItem(self, body: dict[str, Any]) -> Answer:  # noqa: N802
        if body.get("ProjectionExpression") or body.get("AttributesToGet"):
            raise Unsupported("GetItem with a projection")
        found = self.item(_key(body["Key"]))
        return _ok({} if found is None else {"Item": found})

    def _BatchGetItem(self, body: dict[str, Any]) -> Answer:  # noqa: N802
        responses: dict[str, list[Item]] = {}
        for table, wanted in body["RequestItems"].items():
            if set(wanted) - {"Keys", "ConsistentRead"}:
                raise Unsupported("BatchGetItem with a projection")
            found = [self.item(_key(key)) for key in wanted["Keys"]]
            responses[table] = [item for item in found if item is not None]
        return _ok({"Responses": responses, "UnprocessedKeys": {}})

    def _PutItem(self, body: dict[str, Any]) -> Answer:  # noqa: N802
        item = body["Item"]
        _check_used(body, body.get("ConditionExpression"))
        old = self.item(_key(item))
        failed = self._failed(body, old)
        if failed:
            return failed
        self.put(item)
        return _ok(_returned(body, old, item))

    def _UpdateItem(self, body: dict[str, Any]) -> Answer:  # noqa: N802
        key = _key(body["Key"])
        _check_used(body, body.get("ConditionExpression"), body.get("UpdateExpression"))
        old = self.item(key)
        failed = self._failed(body, old)
        if failed:
            return failed
        new = ex.apply_update(body["UpdateExpression"], old or dict(body["Key"]), *_placeholders(body))
        self.put(new)
        return _ok(_returned(body, old, new))

    def _DeleteItem(self, body: dict[str, Any]) -> Answer:  # noqa: N802
        key = _key(body["Key"])
        _check_used(body, body.get("ConditionExpression"))
        old = self.item(key)
        failed = self._failed(body, old)
        if failed:
            return failed
        self.items.get(key[0], {}).pop(key[1], None)
        return _ok(_returned(body, old, None))

    def _TransactWriteItems(self, body: dict[str, Any]) -> Answer:  # noqa: N802
        parts = [next(iter(entry.items())) for entry in body["TransactItems"]]
        reasons: list[dict[str, Any]] = []
        for kind, part in parts:
            if kind not in ("Put", "Update", "Delete", "ConditionCheck"):
                raise Unsupported(kind)
            _check_used(part, part.get("ConditionExpression"), part.get("UpdateExpression"))
            old = self.item(_key(part["Item"] if kind == "Put" else part["Key"]))
            if _holds(part, old):
                reasons.append({"Code": "None"})
                continue
            reason: dict[str, Any] = {"Code": "ConditionalCheckFailed", "Message": CHECK_FAILED}
            if part.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and old is not None:
                reason["Item"] = old
            reasons.append(reason)
        if any(reason["Code"] != "None" for reason in reasons):
            codes = ", ".join(reason["Code"] for reason in reasons)
            message = (
                f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]"
            )
            answer = {"CancellationReasons": reasons, "Message": message}
            return _error("TransactionCanceledException", message, answer)
        for kind, part in parts:
            if kind == "Put":
                self.put(part["Item"])
            elif kind == "Update":
                key = _key(part["Key"])
                old = self.item(key)
                self.put(
                    ex.apply_update(part["UpdateExpression"], old or dict(part["Key"]), *_placeholders(part))
                )
            elif kind == "Delete":
                key = _key(part["Key"])
                self.items.get(key[0], {}).pop(key[1], None)
        return _ok({})

    def _Query(self, body: dict[str, Any]) -> Answer:  # noqa: N802
        if body.get("IndexName") or set(body) - QUERY_FIELDS:
            raise Unsupported(f"Query with {sorted(set(body) - QUERY_FIELDS)} or an index")
        text = body["KeyConditionExpression"]
        _check_used(body, text)
        names, values = _placeholders(body)
        partition = _partition_value(text, names, values)
        keyed = ex.condition(text)
        rows = sorted(self.items.get(partition, {}).items(), reverse=not body.get("ScanIndexForward", True))
        start = body.get("ExclusiveStartKey")
        if start is not None:
            after = start[c.SORT_KEY]["S"]
            forward = body.get("ScanIndexForward", True)
            rows = [(sk, item) for sk, item in rows if (sk > after if forward else sk < after)]
        matched = [item for _, item in rows if keyed(item, names, values)]
        limit = body.get("Limit")
        page = matched if limit is None else matched[:limit]
        answer: dict[str, Any] = {"Items": page, "Count": len(page), "ScannedCount": len(page)}
        if limit is not None and len(matched) > limit:
            last = page[-1]
            answer["LastEvaluatedKey"] = {k: last[k] for k in (c.PARTITION_KEY, c.SORT_KEY)}
        return _ok(answer)

    # --- conditions -----------------------------------------------------------------------------------

    def _failed(self, body: dict[str, Any], old: Item | None) -> Answer | None:
        if _holds(body, old):
            return None
        extra: dict[str, Any] = {}
        if body.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and old is not None:
            extra["Item"] = old
        return _error("ConditionalCheckFailedException", CHECK_FAILED, extra)


QUERY_FIELDS = frozenset(
    {
        "TableName",
        "KeyConditionExpression",
        "ExpressionAttributeNames",
        "ExpressionAttributeValues",
        "ScanIndexForward",
        "Limit",
        "ExclusiveStartKey",
        "ConsistentRead",
    }
)


def written(operation: str, body: dict[str, Any], old: Item | None) -> Item | None:
    """The item as a PutItem, UpdateItem or DeleteItem (or a transaction's Put, Update, Delete or
    ConditionCheck) would leave it over `old`: `old` itself when its condition fails. The capacity
    model charges a write's index entries from it before the write is answered."""
    if not _holds(body, old):
        return old
    if operation in ("PutItem", "Put"):
        return dict(body["Item"])
    if operation in ("DeleteItem", "Delete"):
        return None
    if operation in ("UpdateItem", "Update"):
        return ex.apply_update(body["UpdateExpression"], old or dict(body["Key"]), *_placeholders(body))
    return old


def condition_holds(body: dict[str, Any], old: Item | None) -> bool:
    """Whether a write's (or a transaction part's) condition holds on `old`."""
    return _holds(body, old)


def _holds(body: dict[str, Any], old: Item | None) -> bool:
    text = body.get("ConditionExpression")
    if not text:
        return True
    return ex.condition(text)(old or {}, *_placeholders(body))


def _placeholders(body: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    return body.get("ExpressionAttributeNames") or {}, body.get("ExpressionAttributeValues") or {}


def _check_used(body: dict[str, Any], *texts: str | None) -> None:
    """DynamoDB refuses a request that provides a name or value its expressions do not use."""
    used = ex.used_placeholders(*texts)
    for kind in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
        unused = set(body.get(kind) or {}) - used
        if unused:
            raise Invalid(f"Value provided in {kind} unused in expressions: keys: {{{min(unused)}}}")


def _partition_value(text: str, names: dict[str, str], values: dict[str, Any]) -> str:
    """The partition key's value a key condition names (`#pk = :pk ...`)."""
    tokens = text.split()
    if len(tokens) < 3 or tokens[1] != "=" or names.get(tokens[0]) != c.PARTITION_KEY:
        raise Unsupported(text)
    return str(values[tokens[2]]["S"])


def _returned(body: dict[str, Any], old: Item | None, new: Item | None) -> dict[str, Any]:
    wanted = body.get("ReturnValues", "NONE")
    if wanted == "NONE":
        return {}
    if wanted == "ALL_NEW" and new is not None:
        return {"Attributes": new}
    if wanted == "ALL_OLD":
        return {} if old is None else {"Attributes": old}
    raise Unsupported(f"ReturnValues {wanted}")


def _key(item: dict[str, Any]) -> KEY:
    return item[c.PARTITION_KEY]["S"], item[c.SORT_KEY]["S"]


def _ok(answer: dict[str, Any]) -> Answer:
    return 200, {}, json.dumps(answer).encode()


def _error(code: str, message: str, extra: dict[str, Any] | None = None) -> Answer:
    prefix = (
        "com.amazon.coral.validate" if code == "ValidationException" else "com.amazonaws.dynamodb.v20120810"
    )
    body = {"__type": f"{prefix}#{code}", "message": message, **(extra or {})}
    return 400, {"x-amzn-ErrorType": code}, json.dumps(body).encode()


def size(item: Item | None) -> int:
    """An item's size as DynamoDB counts it: names and values (string lengths taken as bytes)."""
    if item is None:
        return 0
    total = 0
    for name, value in item.items():
        text = value.get("S")
        total += len(name) + (len(text) if text is not None else _value_size(value))
    return total


def _value_size(value: dict[str, Any]) -> int:
    (kind, raw), *_ = value.items()
    if kind in ("S", "N"):
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k) + _value_size(v) for k, v in raw.items())
    if kind == "L":
        return 3 + sum(_value_size(v) for v in raw)
    return len(json.dumps(raw))
