"""The scale model runs Sundial's own engine on modelled AWS: a small scenario on it must come out
exactly once, its copies dropped at the fence."""

from __future__ import annotations

from typing import Any

import pytest

from bench.scale.scenario import Scenario, run


def _counts(report: dict[str, Any], name: str) -> int:
    return sum(p[name] for p in report["priorities"].values())


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    # Created through the API's code, every write a request; a second tick overlapping the one that
    # sends 09:00's messages reads the same marks and sends them all again: copies.
    scenario = Scenario(due_at_once=120, recurring=15, failing=0.2, overlap_tick_at=-59.95, through_api=True)
    return run(scenario)


def test_every_occurrence_is_called_once_on_time(small: dict[str, Any]) -> None:
    assert _counts(small, "occurrences") >= 120
    assert _counts(small, "never_called") == 0
    assert _counts(small, "called_twice") == 0
    assert _counts(small, "called_early") == 0


def test_the_overlapping_tick_and_failing_targets_really_happened(small: dict[str, Any]) -> None:
    assert small["dropped_at_fence"] > 0  # the overlapping tick's copies
    assert small["dead_letter_messages"] > 0  # failing one-offs died and were reported
