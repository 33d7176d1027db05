"""The scale model runs Sundial's own engine on modelled AWS: a small scenario on it must come out
exactly once, and a model that drops the store's conditions must be caught by the same checks."""

from __future__ import annotations

from typing import Any

import pytest

from bench.scale.scenario import Scenario, run


def _counts(report: dict[str, Any], name: str) -> int:
    return sum(p[name] for p in report["priorities"].values())


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    # Created through the API's code, every write a request; a tick killed mid-send leaves copies.
    scenario = Scenario(due_at_once=120, recurring=15, failing=0.2, kill_tick_at=0.3, through_api=True)
    return run(scenario)


def test_every_occurrence_is_called_once_on_time(small: dict[str, Any]) -> None:
    assert _counts(small, "occurrences") >= 120
    assert _counts(small, "never_called") == 0
    assert _counts(small, "called_twice") == 0
    assert _counts(small, "called_early") == 0


def test_the_killed_tick_and_failing_targets_really_happened(small: dict[str, Any]) -> None:
    assert any(tick["killed"] for tick in small["ticks"])
    assert small["calls"]["sqs.ChangeMessageVisibility"] == 0 or small["calls"]["sqs.SendMessage"] > 0
    assert small["dead_letter_messages"] > 0  # failing one-offs died and were reported


def test_a_model_without_conditions_is_caught() -> None:
    broken = Scenario(due_at_once=120, recurring=15, kill_tick_at=0.3, through_api=True, break_conditions=True)
    report = run(broken)
    assert _counts(report, "called_twice") > 0
