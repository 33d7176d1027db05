"""Each part of the scale model's DynamoDB (bench/scale/dynamo.py) against what AWS documents of it:
every test states the documented behaviour and the page it is read from, and drives the model's
own answering (the native table deciding items) to show the model does it. Where moto answers the
same question (the due index's Query), moto answers it too and the two must agree."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from bench.scale import dynamo, limits
from bench.scale.dynamo import DynamoModel, Throughput
from bench.scale.runtime import Sim
from bench.scale.tables import CrossChecked
from bench.scale.world import Aws, Settings
from sundial.local_stack.resources import table_definition
from sundial.shared import constants as c

OK = "ok"
TABLE_THROTTLE = "ThrottlingException"
PARTITION_THROTTLE = "ProvisionedThroughputExceededException"
NOW = 100.0


def _model(warm_wcu: float = 100_000, warm_rcu: float = 100_000, **capacity: Any) -> DynamoModel:
    # Warm throughput far above the figure under test unless the test is about it (capped at the
    # quota, which is raised too unless the test is about the quota).
    capacity.setdefault("quota", Throughput(10**9, 10**9))
    return DynamoModel("conformance", warm_wcu, warm_rcu, kind="native", **capacity)


def _send(model: DynamoModel, operation: str, body: dict[str, Any], at: float = NOW) -> tuple[str, Any]:
    status, headers, raw = model.answer(operation, SimpleNamespace(body=json.dumps(body).encode()), at)
    return (OK if status == 200 else headers["x-amzn-ErrorType"]), json.loads(raw)


def _item(pk: str, sk: str = "JOB", padding: int = 0, **attributes: str) -> dict[str, Any]:
    item = {c.PARTITION_KEY: {"S": pk}, c.SORT_KEY: {"S": sk}}
    item.update({name: {"S": value} for name, value in attributes.items()})
    if padding:
        item["padding"] = {"S": "x" * padding}
    return item


def _put(model: DynamoModel, item: dict[str, Any], at: float = NOW) -> str:
    return _send(model, "PutItem", {"TableName": "conformance", "Item": item}, at)[0]


def _get(model: DynamoModel, pk: str, consistent: bool = True, at: float = NOW) -> str:
    key = {c.PARTITION_KEY: {"S": pk}, c.SORT_KEY: {"S": "JOB"}}
    return _send(
        model, "GetItem", {"TableName": "conformance", "Key": key, "ConsistentRead": consistent}, at
    )[0]


def _table_units(model: DynamoModel, writing: bool, at: float = NOW) -> float:
    return (model.writes if writing else model.reads).at(dynamo.TABLE, int(at))


# --- partitions ---------------------------------------------------------------------------------


def test_a_partition_serves_1000_write_units_a_second() -> None:
    """ "By default, every partition in a DynamoDB table is designed to deliver a maximum capacity of
    3,000 read units per second and 1,000 write units per second." (Amazon DynamoDB: Best practices
    for designing and using partition keys effectively in DynamoDB —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html)"""
    model = _model()
    assert limits.PARTITION_WCU.value == 1000
    answers = [_put(model, _item("JOB#hot", f"S#{n}")) for n in range(1001)]
    assert answers[:1000] == [OK] * 1000
    assert answers[1000] == PARTITION_THROTTLE
    assert model.table.item(("JOB#hot", "S#1000")) is None  # a throttled write changes nothing
    assert _put(model, _item("JOB#hot", "S#1000"), at=NOW + 1) == OK  # the next second has room


def test_a_partition_serves_3000_read_units_a_second() -> None:
    """The same page: 3,000 read units a second a partition; a strongly consistent read of an item
    up to 4 KB is one read unit."""
    model = _model()
    _put(model, _item("JOB#hot"), at=NOW - 1)
    answers = [_get(model, "JOB#hot") for _ in range(3001)]
    assert answers[:3000] == [OK] * 3000
    assert answers[3000] == PARTITION_THROTTLE


def test_a_partition_shares_its_second_between_reads_and_writes() -> None:
    """A partition serves 3,000 read units or 1,000 write units a second, or a linear combination of
    the two: reads / 3,000 + writes / 1,000 <= 1. No AWS page found states the combination
    (limits.PARTITION_SHARED, an assumption: the partition count AWS gives for a provisioned table,
    RCU / 3,000 + WCU / 1,000, implies it), so the model keeps this, the stricter reading."""
    model = _model()
    _put(model, _item("JOB#hot"), at=NOW - 1)
    assert [_get(model, "JOB#hot") for _ in range(1500)] == [OK] * 1500  # half the partition's second
    writes = [_put(model, _item("JOB#hot", f"S#{n}")) for n in range(501)]
    assert writes[:500] == [OK] * 500  # the other half
    assert writes[500] == PARTITION_THROTTLE  # each alone is far under its own figure
    assert model.throttles.by_key == {"table": 1}


# --- warm throughput of the table and of each index ----------------------------------------------


def test_the_table_serves_its_warm_throughput_and_a_doubled_peak_only_once_it_is_old() -> None:
    """ "Warm throughput refers to the number of read and write operations your DynamoDB table can
    instantaneously support." (Amazon DynamoDB: Understanding DynamoDB warm throughput —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html); a new
    on-demand table's is 4,000 write and 12,000 read units a second; on-demand serves up to double
    a previous peak, reached over 30 minutes (Amazon DynamoDB: DynamoDB throughput capacity —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html)."""
    assert (limits.TABLE_WARM_WCU.value, limits.TABLE_WARM_RCU.value) == (4000, 12000)
    model = _model(warm_wcu=100)
    answers = [_put(model, _item(f"JOB#{n}")) for n in range(101)]
    assert answers[:100] == [OK] * 100 and answers[100] == TABLE_THROTTLE
    later = NOW + limits.PEAK_WINDOW_S.value + 1
    answers = [_put(model, _item(f"JOB#later-{n}"), at=later) for n in range(201)]
    assert answers[:200] == [OK] * 200 and answers[200] == TABLE_THROTTLE


def test_each_index_has_its_own_warm_throughput_and_a_write_it_cannot_take_is_throttled() -> None:
    """Warm throughput values "are available by default for all tables and global secondary indexes
    (GSI)" (Amazon DynamoDB: Understanding DynamoDB warm throughput —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html), each
    index its own; when an index has too little capacity for the updates a table's writes make to
    it, DynamoDB throttles the writes to the base table, GSI back-pressure (Amazon DynamoDB:
    Understanding global secondary index (GSI) write throttling and back pressure in DynamoDB —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/gsi-throttling.html); an index
    just added starts low (its warm throughput set to 50 here) while the table and the other
    indexes keep theirs."""
    model = _model()
    model.index_warm[c.LIST_INDEX_NAME] = Throughput(write=50, read=50)
    answers = [
        _put(
            model,
            _item(
                f"JOB#{n}", **{c.LIST_PARTITION_ATTRIBUTE: f"JOBS#{n % 16}", c.LIST_SORT_ATTRIBUTE: f"{n}"}
            ),
        )
        for n in range(51)
    ]
    assert answers[:50] == [OK] * 50
    assert answers[50] == TABLE_THROTTLE  # refused on the table: index back-pressure
    assert model.table.item(("JOB#50", "JOB")) is None
    assert model.throttles.by_index == {c.LIST_INDEX_NAME: 1}
    # Writes with no entry in that index still go, on the table and the other indexes.
    assert (
        _put(
            model,
            _item("JOB#other", **{c.STATUS_PARTITION_ATTRIBUTE: "active#1", c.LIST_SORT_ATTRIBUTE: "1"}),
        )
        == OK
    )
    assert _put(model, _item("JOB#plain")) == OK


def test_an_index_entry_moved_is_charged_twice_on_its_index() -> None:
    """ "If an update to the table changes the value of an indexed key attribute (from A to B), two
    writes are required, one to delete the previous item from the index and another write to put the
    new item into the index." (Amazon DynamoDB: Using global secondary indexes in DynamoDB, write
    activity — https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Writes)"""
    model = _model()
    due = {c.DUE_SHARD_ATTRIBUTE: "high#1", c.DUE_KEY_ATTRIBUTE: "0000000000001#run"}
    assert _put(model, _item("JOB#1", **due), at=NOW - 1) == OK
    moved = {c.DUE_SHARD_ATTRIBUTE: "high#2", c.DUE_KEY_ATTRIBUTE: "0000000000002#run"}
    assert _put(model, _item("JOB#1", **moved)) == OK
    assert model.writes.at(("index", c.DUE_INDEX_NAME), int(NOW)) == 2
    assert model.writes.at((c.DUE_SHARD_ATTRIBUTE, "high#1"), int(NOW)) == 1  # the entry removed
    assert model.writes.at((c.DUE_SHARD_ATTRIBUTE, "high#2"), int(NOW)) == 1  # the entry added


# --- the table quota ----------------------------------------------------------------------------


def test_the_table_quota_caps_warm_throughput_and_peaks_unless_raised() -> None:
    """Per table, on-demand: "40,000 read request units and 40,000 write request units", a default
    quota raised on request (Amazon DynamoDB: Quotas in Amazon DynamoDB, Throughput default quotas —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html): a warm
    throughput set above it, or a doubled peak, serves no more than the quota."""
    assert (limits.TABLE_QUOTA_WCU.value, limits.TABLE_QUOTA_RCU.value) == (40_000, 40_000)
    default_quota = DynamoModel("conformance", 100_000, 100_000, kind="native")
    assert default_quota.quota == Throughput(40_000, 40_000)
    # 10 KB items: ten write units each, on partitions of their own.
    answers = [_put(default_quota, _item(f"JOB#{n}", padding=10 * 1024 - 100)) for n in range(4001)]
    assert answers[:4000] == [OK] * 4000 and answers[4000] == TABLE_THROTTLE
    assert _table_units(default_quota, writing=True) == 40_000
    raised = DynamoModel("conformance", 100_000, 100_000, kind="native", quota=Throughput(50_000, 50_000))
    answers = [_put(raised, _item(f"JOB#{n}", padding=10 * 1024 - 100)) for n in range(4001)]
    assert answers == [OK] * 4001
    # A peak doubled past the quota is capped at it as well.
    small = _model(warm_wcu=100, quota=Throughput(150, 150))
    assert [_put(small, _item(f"JOB#{n}")) for n in range(100)] == [OK] * 100
    later = NOW + limits.PEAK_WINDOW_S.value + 1
    answers = [_put(small, _item(f"JOB#later-{n}"), at=later) for n in range(151)]
    assert answers[:150] == [OK] * 150 and answers[150] == TABLE_THROTTLE


# --- what requests consume ----------------------------------------------------------------------


def test_a_transaction_is_checked_and_charged_at_twice_its_units() -> None:
    """DynamoDB performs two underlying writes of every item in a transaction, one to prepare it and
    one to commit it: twice the units of the same writes outside one (Amazon DynamoDB: Amazon DynamoDB
    Transactions: How it works, Capacity management for transactions —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html)"""
    model = _model()
    body = {
        "TransactItems": [
            {"Put": {"TableName": "conformance", "Item": _item("JOB#a")}},
            {"Put": {"TableName": "conformance", "Item": _item("JOB#b")}},
        ]
    }
    assert _send(model, "TransactWriteItems", body)[0] == OK
    assert _table_units(model, writing=True) == 4  # two items of under 1 KB, twice each
    assert model.writes.at(("pk", "JOB#a"), int(NOW)) == 2
    tight = _model(warm_wcu=3)
    assert _send(tight, "TransactWriteItems", body)[0] == TABLE_THROTTLE  # 4 units do not fit in 3
    assert _put(tight, _item("JOB#a")) == OK and _put(tight, _item("JOB#b")) == OK  # 2 plain writes do


def test_a_read_is_charged_per_4_kb_of_its_item_and_half_when_eventually_consistent() -> None:
    """ "A strongly consistent read request of an item up to 4 KB requires one read unit. An eventually
    consistent read request of an item up to 4 KB requires one-half read unit." "Item sizes for
    reads are rounded up to the next 4 KB multiple." (Amazon DynamoDB: DynamoDB read and write
    operations — https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)"""
    model = _model()
    _put(model, _item("JOB#big", padding=5000), at=NOW - 1)
    _get(model, "JOB#big", consistent=True)
    assert _table_units(model, writing=False) == 2  # 5 KB rounds up to 8 KB
    _get(model, "JOB#big", consistent=False)
    assert _table_units(model, writing=False) == 3
    _get(model, "JOB#absent", consistent=True)
    assert _table_units(model, writing=False) == 4  # reading nothing still reads a unit


def test_a_batch_get_of_100_keys_is_charged_per_item() -> None:
    """BatchGetItem: "DynamoDB processes each item in the batch as an individual GetItem request.
    DynamoDB first rounds up the size of each item to the next 4 KB boundary, and then calculates
    the total size." (Amazon DynamoDB: DynamoDB read and write operations —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)"""
    model = _model()
    for n in range(100):
        _put(model, _item(f"JOB#{n}"), at=NOW - 1)
    keys = [{c.PARTITION_KEY: {"S": f"JOB#{n}"}, c.SORT_KEY: {"S": "JOB"}} for n in range(100)]
    answer, found = _send(
        model, "BatchGetItem", {"RequestItems": {"conformance": {"Keys": keys, "ConsistentRead": True}}}
    )
    assert answer == OK and len(found["Responses"]["conformance"]) == 100
    assert _table_units(model, writing=False) == 100
    _send(model, "BatchGetItem", {"RequestItems": {"conformance": {"Keys": keys}}})  # eventually consistent
    assert _table_units(model, writing=False) == 150


def test_a_query_is_charged_on_the_total_size_of_its_items() -> None:
    """ "Query—Reads multiple items that have the same partition key value. All items returned are
    treated as a single read operation, where DynamoDB computes the total size of all items and then
    rounds up to the next 4 KB boundary." (Amazon DynamoDB: DynamoDB read and write operations —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)"""
    model = _model()
    for n in range(10):
        _put(model, _item("JOB#1", f"RUN#{n}", padding=450), at=NOW - 1)  # about 480 bytes each
    query = {
        "TableName": "conformance",
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {"#pk": c.PARTITION_KEY},
        "ExpressionAttributeValues": {":pk": {"S": "JOB#1"}},
        "ConsistentRead": True,
    }
    answer, found = _send(model, "Query", query)
    assert answer == OK and found["Count"] == 10
    assert _table_units(model, writing=False) == 2  # about 4.8 KB together: 8 KB, not ten reads
    _send(model, "Query", {**query, "ConsistentRead": False})
    assert _table_units(model, writing=False) == 3


# --- the due index answered as moto answers it ---------------------------------------------------


@pytest.fixture()
def both() -> tuple[Aws, Any]:
    """The model in front of both tables (moto's and the native one), through a real botocore client."""
    aws = Aws(Sim(0.0), Settings(table="both"))
    client = aws.client("dynamodb")
    client.create_table(**table_definition(c.TABLE_NAME))
    return aws, client


def _due_item(n: int, shard: int) -> dict[str, Any]:
    # Some due keys equal: DynamoDB leaves their order open, the comparison too.
    due = {c.DUE_SHARD_ATTRIBUTE: f"high#{shard}", c.DUE_KEY_ATTRIBUTE: f"{1_000 + n // 3:013d}#run"}
    return _item(f"JOB#{n:03d}", **due)


def _due_rows(client: Any, shard: int, bound_ms: int) -> list[str]:
    answer = client.query(
        TableName=c.TABLE_NAME,
        IndexName=c.DUE_INDEX_NAME,
        KeyConditionExpression="#shard = :shard AND #due_key <= :bound",
        ExpressionAttributeNames={"#shard": c.DUE_SHARD_ATTRIBUTE, "#due_key": c.DUE_KEY_ATTRIBUTE},
        ExpressionAttributeValues={":shard": {"S": f"high#{shard}"}, ":bound": {"S": f"{bound_ms:013d}#~"}},
    )
    return [item[c.PARTITION_KEY]["S"] for item in answer["Items"]]


def test_the_due_index_query_returns_the_rows_moto_returns_over_the_same_items(
    both: tuple[Aws, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model answers the due index's Query from its own sorted copy of the index; moto, from the
    same items, answers it as DynamoDB's Query of a global secondary index does (Amazon DynamoDB:
    Using global secondary indexes in DynamoDB —
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html): the same rows."""
    aws, client = both
    monkeypatch.setattr(dynamo, "DUE_QUERY_SAMPLE_EVERY", 1)
    for n in range(60):
        client.put_item(TableName=c.TABLE_NAME, Item=_due_item(n, n % 4))
    # Entries moved and removed by updates, as the tick's claims and the worker's settles move them.
    for n in range(0, 60, 5):
        client.update_item(
            TableName=c.TABLE_NAME,
            Key={c.PARTITION_KEY: {"S": f"JOB#{n:03d}"}, c.SORT_KEY: {"S": "JOB"}},
            UpdateExpression="REMOVE #shard" if n % 10 else "SET #due_key = :later",
            ExpressionAttributeNames={"#shard": c.DUE_SHARD_ATTRIBUTE}
            if n % 10
            else {"#due_key": c.DUE_KEY_ATTRIBUTE},
            **({} if n % 10 else {"ExpressionAttributeValues": {":later": {"S": f"{2_000:013d}#run"}}}),
        )
    rows = {shard: _due_rows(client, shard, 1_000 + 10) for shard in range(4)}
    rows_all = {shard: _due_rows(client, shard, 9_999) for shard in range(4)}
    table = aws.dynamodb.table
    assert isinstance(table, CrossChecked)
    assert table.index_queries_compared == 8
    assert table.differences == []
    assert sum(len(r) for r in rows.values()) > 0 and sum(len(r) for r in rows_all.values()) == 54


def test_the_due_index_comparison_catches_a_model_whose_index_lost_an_entry(
    both: tuple[Aws, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    aws, client = both
    monkeypatch.setattr(dynamo, "DUE_QUERY_SAMPLE_EVERY", 1)
    for n in range(12):
        client.put_item(TableName=c.TABLE_NAME, Item=_due_item(n, 0))
    aws.dynamodb.due.put(("JOB#004", "JOB"), None)  # the model's copy forgets one entry
    assert len(_due_rows(client, 0, 9_999)) == 11
    table = aws.dynamodb.table
    assert isinstance(table, CrossChecked)
    assert len(table.differences) == 1 and "index Query" in table.differences[0]


def test_the_due_index_comparison_samples_the_queries() -> None:
    """One query in DUE_QUERY_SAMPLE_EVERY is answered by moto as well (the first always)."""
    aws = Aws(Sim(0.0), Settings(table="both"))
    client = aws.client("dynamodb")
    client.create_table(**table_definition(c.TABLE_NAME))
    client.put_item(TableName=c.TABLE_NAME, Item=_due_item(1, 0))
    for _ in range(2 * dynamo.DUE_QUERY_SAMPLE_EVERY + 1):
        _due_rows(client, 0, 9_999)
    table = aws.dynamodb.table
    assert isinstance(table, CrossChecked)
    assert table.index_queries_compared == 3 and table.differences == []
