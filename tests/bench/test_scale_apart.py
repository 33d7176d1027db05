"""`make scale` runs each scenario in a child process whose collector never comes back on
(bench/scale/scenario.py's `run_apart`): the report it hands back must be the report of the same run
made here, with the child's wall and CPU added, and a run that fails must come back as an error
rather than as nothing."""

from __future__ import annotations

import gc
import json
import os
from typing import Any

import pytest

from bench.scale import scenario as scenarios
from bench.scale.goals import RECOMMENDED, _settings
from bench.scale.scenario import Scenario, run, run_apart

SMALL = Scenario(due_at_once=300, failing=0.1, settings=_settings(RECOMMENDED), sample_every=5)


def _figures(report: dict[str, Any]) -> str:
    # What this host measured beside the run, and how long it took, are all a run may not repeat.
    kept = {k: v for k, v in report.items() if k not in ("cpu", "wall_seconds", "cpu_seconds")}
    return json.dumps(kept, sort_keys=True)


def test_a_run_apart_reports_what_the_same_run_here_does() -> None:
    here = run(SMALL)
    apart = run_apart(SMALL)
    assert _figures(apart) == _figures(here)
    assert apart["cpu"]["charged_s"] == here["cpu"]["charged_s"]
    assert apart["priorities"]["high"]["occurrences"] > 0
    # The child's own CPU, not this process's: a run of 300 jobs takes a second or so.
    assert apart["cpu_seconds"] > 0.1
    assert apart["wall_seconds"] >= apart["cpu_seconds"] * 0.5


def test_a_run_that_fails_apart_comes_back_as_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(scenario: Scenario, end_s: float | None = None) -> dict[str, Any]:
        raise RuntimeError("the model broke")

    monkeypatch.setattr(scenarios, "run", broken)
    result = run_apart(SMALL)
    assert "RuntimeError: the model broke" in result["error"]
    assert "priorities" not in result


def test_the_run_is_made_in_another_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def where(scenario: Scenario, end_s: float | None = None) -> dict[str, Any]:
        return {"pid": os.getpid()}

    monkeypatch.setattr(scenarios, "run", where)
    assert run_apart(SMALL)["pid"] != os.getpid()


def test_the_child_runs_with_the_collector_off_and_never_turns_it_back_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `run` turns the collector back on only when it found it on: off before it, the collection that
    # would read every object the run made never comes.
    def where(scenario: Scenario, end_s: float | None = None) -> dict[str, Any]:
        return {"collector_on": gc.isenabled()}

    monkeypatch.setattr(scenarios, "run", where)
    assert gc.isenabled()
    assert run_apart(SMALL)["collector_on"] is False
