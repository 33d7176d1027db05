"""The scale model's own machinery, where it was made cheaper for a million jobs: each shortcut must
leave what a run reports as it was."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

from bench.scale import cpu, scenario
from bench.scale.cpu import CpuTable
from bench.scale.dynamo import DueIndex
from bench.scale.runtime import Environment, GreenEvent, Sim, collector_off, green
from bench.scale.world import Aws, Settings
from sundial.local_stack.resources import table_definition
from sundial.shared import constants as c


def _two_tasks(midway: bool) -> list[tuple[str, float, str]]:
    """Two tasks whose steps fall on the same instants: one asks the way under test, the other
    sleeps beside it. Answers what ran, when, and as which task."""
    sim = Sim(0.0)
    seen: list[tuple[str, float, str]] = []

    def me() -> str:
        task = sim.current()
        assert task is not None
        return task.kind.rsplit(".", 1)[-1]

    def asking() -> None:
        def step() -> None:
            seen.append(("answered", sim.time(), me()))

        if midway:
            sim.sleep_around(0.5, step, 0.5)
        else:
            sim.sleep(0.5)
            step()
            sim.sleep(0.5, charge=False)
        seen.append(("resumed", sim.time(), me()))

    def beside() -> None:
        for _ in range(3):
            seen.append(("beside", sim.time(), me()))
            sim.sleep(0.5)

    with green(sim):
        # The other task first: at each instant it runs before the asking one, so a resume queued
        # at the first sleep, rather than by the step, would come before its third step.
        sim.spawn(beside)
        sim.spawn(asking)
        sim.run()
    return seen


def test_a_step_taken_midway_runs_as_the_task_when_and_in_the_order_its_sleeps_would() -> None:
    midway = _two_tasks(midway=True)

    assert ("answered", 0.5, "asking") in midway
    assert ("resumed", 1.0, "asking") in midway
    assert midway == _two_tasks(midway=False)


def _delivery(steps: bool) -> list[tuple[str, float]]:
    """A stand-in's shape: a delivery's task starts a heartbeat that waits on an event and an
    attempt that sleeps, joins the attempt, sets the event, joins the heartbeat; a second delivery
    shares the environment's CPU. Every segment is charged from a table, a different figure per
    kind, so that any change of order or of charge moves an instant."""
    kinds = ["delivery", "beat", "call"]
    seconds = {
        f"{kind}|{opened}|{closing}": 0.001 * (n + 1) + 0.0001 * m + 0.00001 * k
        for n, kind in enumerate(kinds)
        for m, opened in enumerate(["start", "wait", "sleep"])
        for k, closing in enumerate(["wait", "sleep", "end"])
    }
    sim = Sim(0.0, cpu=CpuTable(seconds, 0.5, 1.0, 1.0))
    env = Environment(1769)
    seen: list[tuple[str, float]] = []

    def delivery(name: str) -> None:
        me = sim.current()
        assert me is not None
        me.stand_in = True
        stop = GreenEvent()
        if steps:

            def beat(_: bool) -> None:
                stop.wait_step(30.0, lambda _: sim.finish())

            def call(_: bool) -> None:
                seen.append((f"{name} calls", sim.time()))
                sim.sleep_step(0.05, lambda _: sim.finish())

            beating, calling = sim.spawn_steps(beat, "beat"), sim.spawn_steps(call, "call")
        else:

            def beat_task() -> None:
                stop.wait(30.0)

            def call_task() -> None:
                seen.append((f"{name} calls", sim.time()))
                sim.sleep(0.05)

            beating, calling = sim.spawn(beat_task, kind="beat"), sim.spawn(call_task, kind="call")
        sim.join(calling)
        stop.set()
        sim.join(beating)
        seen.append((f"{name} done", sim.time()))

    with green(sim):
        for name in ("first", "second"):
            sim.spawn(delivery, name, env=env, kind="delivery")
        sim.run()
    assert sim.cpu.uncalibrated == {}  # every segment was of a kind the table has
    return [*seen, ("environment's CPU", env.cpu_seconds)]


def test_a_task_of_steps_is_charged_and_ordered_as_the_same_code_in_a_greenlet() -> None:
    steps = _delivery(steps=True)

    assert [what for what, _ in steps[:4]] == ["first calls", "second calls", "first done", "second done"]
    assert steps == _delivery(steps=False)


def test_the_collector_stays_off_until_the_outermost_run_ends() -> None:
    assert gc.isenabled()
    with collector_off():
        with collector_off():
            assert not gc.isenabled()
        # A report is built here, after the simulation's own use ended.
        assert not gc.isenabled()
        assert gc.get_freeze_count() > 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_a_report_is_built_with_the_collector_the_run_had(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    build = scenario.report

    def report(*args: Any) -> dict[str, Any]:
        seen.append(gc.isenabled())
        return build(*args)

    monkeypatch.setattr(scenario, "report", report)
    scenario.run(scenario.Scenario(due_at_once=30))
    assert seen == [False]


def test_the_due_index_answers_a_shard_in_order_after_entries_move_and_leave() -> None:
    index = DueIndex()
    index.put(("JOB#b", "JOB"), ("high#0", "0000000000002#run"))
    index.put(("JOB#a", "JOB"), ("high#0", "0000000000002#run"))
    index.put(("JOB#c", "JOB"), ("high#0", "0000000000001#run"))
    assert [row[1] for row in index.query("high#0", None, None, 10)] == ["JOB#c", "JOB#a", "JOB#b"]

    index.put(("JOB#c", "JOB"), ("high#1", "0000000000001#run"))  # a new shard: read again
    index.put(("JOB#a", "JOB"), None)
    index.put(("JOB#d", "JOB"), ("high#0", "0000000000003#lease"))

    assert index.query("high#0", None, None, 10) == [
        ("0000000000002#run", "JOB#b", "JOB"),
        ("0000000000003#lease", "JOB#d", "JOB"),
    ]
    assert index.query("high#0", "0000000000002#~", None, 10) == [("0000000000002#run", "JOB#b", "JOB")]
    assert index.query("high#0", None, ("0000000000002#run", "JOB#b", "JOB"), 10) == [
        ("0000000000003#lease", "JOB#d", "JOB")
    ]
    assert index.query("high#0", None, None, 1) == [("0000000000002#run", "JOB#b", "JOB")]
    assert index.query("high#1", None, None, 10) == [("0000000000001#run", "JOB#c", "JOB")]
    assert index.query("low#0", None, None, 10) == []


DUE_QUERY: dict[str, Any] = {
    "TableName": c.TABLE_NAME,
    "IndexName": c.DUE_INDEX_NAME,
    "KeyConditionExpression": "#shard = :shard",
    "ExpressionAttributeNames": {"#shard": c.DUE_SHARD_ATTRIBUTE},
    "ExpressionAttributeValues": {":shard": {"S": "high#0"}},
}


def _due_rows_client() -> Any:
    """The model's DynamoDB client, its table holding three rows due on one shard."""
    aws = Aws(Sim(0.0, cpu=cpu.committed()), Settings())
    client: Any = aws.client("dynamodb")
    client.create_table(**table_definition(c.TABLE_NAME))
    for n in range(3):
        client.put_item(
            TableName=c.TABLE_NAME,
            Item={
                c.PARTITION_KEY: {"S": f"JOB#{n}"},
                c.SORT_KEY: {"S": "JOB"},
                c.DUE_SHARD_ATTRIBUTE: {"S": "high#0"},
                c.DUE_KEY_ATTRIBUTE: {"S": f"{n:013d}#run"},
            },
        )
    return client


def test_a_paginated_query_takes_the_direct_path_as_every_other_call() -> None:
    client = _due_rows_client()
    direct_before = client.direct_calls

    pages = client.get_paginator("query").paginate(**DUE_QUERY, Limit=2)
    rows = [item[c.PARTITION_KEY]["S"] for page in pages for item in page["Items"]]

    assert rows == ["JOB#0", "JOB#1", "JOB#2"]
    assert client.direct_calls - direct_before == 2  # two pages, each a direct call
    assert client.full_path_calls == 0


def test_a_due_page_comes_to_the_direct_path_as_it_comes_through_botocore(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The direct path takes the model's due page as it is, not encoded and decoded: the same page
    as botocore's full path parses from the model's JSON."""
    client = _due_rows_client()
    query = {**DUE_QUERY, "Limit": 2}
    pages_encoded: list[Any] = []
    dumps = json.dumps

    def counting(value: Any, *args: Any, **kwargs: Any) -> str:
        if isinstance(value, dict) and "Items" in value:
            pages_encoded.append(value)
        return dumps(value, *args, **kwargs)

    monkeypatch.setattr(json, "dumps", counting)
    direct = client.query(**query)
    full = client._client.query(**query)

    assert len(pages_encoded) == 1  # the full path's page only
    for page in (direct, full):
        page.pop("ResponseMetadata")
    assert direct == full
    assert [item[c.PARTITION_KEY]["S"] for item in direct["Items"]] == ["JOB#0", "JOB#1"]
    assert direct["LastEvaluatedKey"][c.PARTITION_KEY] == {"S": "JOB#1"}
