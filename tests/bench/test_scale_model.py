"""The scale model runs Sundial's own engine on modelled AWS: a small scenario on it must come out
exactly once, its copies dropped at the fence; and the same scenario on a model that lies (DynamoDB
ignoring every condition) must not, or the model could not tell a correct engine from a broken one."""

from __future__ import annotations

from typing import Any

import pytest

from bench.scale.runtime import Sim
from bench.scale.scenario import Scenario, run
from bench.scale.world import Settings, World


def _counts(report: dict[str, Any], name: str) -> int:
    return sum(p[name] for p in report["priorities"].values())


def _small(**changes: Any) -> dict[str, Any]:
    # Created through the API's code, every write a request; a second tick overlapping the one that
    # sends 09:00's messages reads the same marks and sends them all again: copies.
    scenario = Scenario(
        due_at_once=120, recurring=15, failing=0.2, overlap_tick_at=-59.95, through_api=True, **changes
    )
    return run(scenario)


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    # Every request answered by moto and by the native table that `make scale` runs on, compared.
    return _small(settings=Settings(table="both"))


def test_every_occurrence_is_called_once_on_time(small: dict[str, Any]) -> None:
    assert _counts(small, "occurrences") >= 120
    assert _counts(small, "never_called") == 0
    assert _counts(small, "called_twice") == 0
    assert _counts(small, "called_early") == 0


def test_the_overlapping_tick_and_failing_targets_really_happened(small: dict[str, Any]) -> None:
    assert small["dropped_at_fence"] > 0  # the overlapping tick's copies
    assert small["dead_letter_messages"] > 0  # failing one-offs died and were reported


def test_a_model_whose_writes_ignore_their_conditions_shows_copies_called() -> None:
    lying = _small(break_conditions=True)
    assert _counts(lying, "called_twice") > 0
    assert lying["dropped_at_fence"] == 0


def test_the_native_table_answers_every_request_of_the_scenario_as_moto_does(small: dict[str, Any]) -> None:
    checked = small["cross_check"]
    assert checked["compared"] > 1000
    assert checked["answers_differing"] == []
    assert checked["items_differing"] == []


MID_SEND_DUE = 2000
KILLED_AT_SEND = 1505  # the message whose send the kill lands in, mid-batch


def test_a_tick_killed_mid_send_loses_nothing_and_the_fence_drops_its_copies() -> None:
    # Most of them low, on a slow queue: some still wait for a worker when the next tick claims them.
    slow_low = Settings()
    slow_low.set("max_concurrency.low", "2")
    scenario = Scenario(
        due_at_once=MID_SEND_DUE, mix=(1, 1, 8), kill_tick_after_sends=KILLED_AT_SEND, settings=slow_low
    )
    report = run(scenario)
    [killed] = [tick for tick in report["ticks"] if tick["killed"]]
    # The batch the kill lands in reached SQS whole; the tick never read its answer.
    assert KILLED_AT_SEND <= killed["sent_while_running"] < KILLED_AT_SEND + 10
    assert _counts(report, "never_called") == 0
    assert _counts(report, "called_twice") == 0
    # The next tick, after the instant, sent what the killed one had not, as it was (no claim), and
    # again only what the killed one sent after its last mark: copies the fence dropped.
    later = [tick for tick in report["ticks"] if not tick["killed"]]
    assert sum(tick["claimed"] for tick in later) == 0
    assert sum(tick["dispatched"] for tick in later) >= MID_SEND_DUE - killed["sent_while_running"]
    assert 0 < report["copies_sent"] < killed["sent_while_running"]
    assert report["dropped_at_fence"] == report["copies_sent"]


def test_a_spread_window_spreads_a_fan_out_and_no_start_comes_early() -> None:
    bunched = run(Scenario(due_at_once=200))
    spread = run(Scenario(due_at_once=200, window_seconds=60))
    assert bunched["first_calls_span_s"] <= 2
    assert spread["first_calls_span_s"] >= 50  # 200 starts over a minute
    assert spread["busiest_second_calls"] < bunched["busiest_second_calls"] / 4
    assert _counts(spread, "occurrences") == 200
    assert _counts(spread, "never_called") == _counts(spread, "called_twice") == 0
    assert _counts(spread, "called_early") == 0  # against each one's own start
    # A queue's first starts wait for new worker environments' cold starts; every other is within 1 s.
    cold_ms = 1000 * World(Sim(0), Settings()).functions["worker"].cold_start_s()
    assert max(p["lateness_ms"]["p99"] for p in spread["priorities"].values()) < 1_000 + cold_ms


@pytest.fixture(scope="module")
def limited() -> dict[str, Any]:
    # 60 due at once on one key of 5 a second with 2 at once; moto answers every request beside the
    # native table, the limits' map paths (holders, waiters) among them.
    scenario = Scenario(
        due_at_once=60, limit_per_second=5, limit_concurrent=2, settings=Settings(table="both")
    )
    return run(scenario)


def test_one_key_keeps_its_limit_at_scale_and_runs_each_occurrence_once(limited: dict[str, Any]) -> None:
    assert _counts(limited, "never_called") == 0 and _counts(limited, "called_twice") == 0
    figures = limited["limit"]
    assert figures["max_running"] <= 2
    assert figures["max_starts_in_a_second"] <= 5 + 5  # burst + per_second
    assert figures["held_back"] > 0 and limited["dead_letter_messages"] == 0
    checked = limited["cross_check"]
    assert checked["answers_differing"] == [] and checked["items_differing"] == []
