"""The cost part of `make bench` (bench/cost.py) on the tests' emulator: its bill names where every
write unit comes from, so that a new write shows up as a cause, not only as a higher price."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from bench import cost
from bench.harness import Aws

RECURRING = next(s for s in cost.SCENARIOS if s.name == cost.PEAK_KIND)
ONE_OFF = next(s for s in cost.SCENARIOS if s.name == cost.PRECISION_KIND)


@pytest.fixture(scope="module")
def priced(bench_aws: Callable[[str], Aws]) -> dict[str, cost.Priced]:
    start_ms = (time.time_ns() // 1_000_000 // cost.MINUTE_MS) * cost.MINUTE_MS + 17_000
    fixed = cost.empty_tick(bench_aws("cost-test-empty-"), start_ms)
    return {
        scenario.name: cost.run_scenario(
            bench_aws(f"cost-test-{n}-"), scenario, fixed, start_ms, cost.FAILURES
        )
        for n, scenario in enumerate((RECURRING, ONE_OFF))
    }


def test_every_unit_of_an_execution_has_a_cause(priced: dict[str, cost.Priced]) -> None:
    # The causes are summed per execution apart from the bill (the tick's fixed share included), so
    # the two agree only if each is scaled as the other.
    for each in priced.values():
        for kind, billed in (("write", each.each.write_units), ("read", each.each.read_units)):
            causes = each.detail[f"{kind}_units_by_cause"]
            counted = sum(units for by_cause in causes.values() for units in by_cause.values())
            assert counted == pytest.approx(billed, abs=0.01), kind


def test_a_recurring_execution_with_failure_history_writes_its_fence_and_its_completion(
    priced: dict[str, cost.Priced],
) -> None:
    worker = priced[RECURRING.name].detail["write_units_by_cause"]["worker"]
    # The completion moves the due index's key to the next instant: a delete and a put.
    assert worker == {"fence JOB": 1.0, "complete JOB": 1.0, "complete index due": 2.0}


def test_a_one_off_pays_for_each_index_it_enters_and_no_history_under_failures(
    priced: dict[str, cost.Priced],
) -> None:
    api = priced[ONE_OFF.name].detail["write_units_by_cause"]["api"]
    assert api["create JOB"] == 1.0
    # A medium job is in no priority row, and a one-off that succeeds in no status row.
    assert {cause for cause in api if cause.startswith("create index ")} == {
        "create index due",
        "create index by_created",
        "create index by_name",
    }
    worker = priced[ONE_OFF.name].detail["write_units_by_cause"]["worker"]
    assert worker == {"fence JOB": 1.0, "complete JOB": 1.0, "complete index due": 1.0}
    lambdas = priced[ONE_OFF.name].detail["lambda_dollars_per_million"]
    assert set(lambdas) == {"api", "scheduler", "worker"}
    services = priced[ONE_OFF.name].detail["dollars_per_million"]
    assert sum(lambdas.values()) == pytest.approx(
        services["lambda_requests"] + services["lambda_gb_seconds"], abs=0.01
    )
