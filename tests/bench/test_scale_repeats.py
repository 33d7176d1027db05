"""A scale run repeats: the same seed gives the same report to the last figure, because the CPU the
engine's code costs is charged from a committed table (bench/scale/cpu.py) and every id and token
follows the seed. The table must still be this host's: measured beside the run, the same segments
may not cost more than 20% away from what the table charged."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from bench.scale import cpu, direct
from bench.scale.scenario import Scenario, run
from bench.scale.world import Settings

SMALL = cpu.check_scenario()


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    # What this host measured beside the run is the one thing a run may not repeat.
    return {key: value for key, value in report.items() if key != "cpu"}


def _full_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct, "FULL_PATH_EVERY", 1)


@pytest.fixture(scope="module")
def twice() -> tuple[dict[str, Any], dict[str, Any]]:
    return run(SMALL), run(SMALL)


def test_the_same_seed_gives_the_same_report(twice: tuple[dict[str, Any], dict[str, Any]]) -> None:
    first, second = twice
    assert first["cpu"]["source"] == "table"
    assert json.dumps(_figures(first), sort_keys=True) == json.dumps(_figures(second), sort_keys=True)


def test_another_seed_gives_another_run(twice: tuple[dict[str, Any], dict[str, Any]]) -> None:
    # The comparison above could not fail if a report did not depend on what the seed decides.
    other = run(Scenario(**{**SMALL.__dict__, "seed": SMALL.seed + 1}))
    assert _figures(other) != _figures(twice[0])


def test_the_check_scenario_is_of_kinds_the_table_has(twice: tuple[dict[str, Any], dict[str, Any]]) -> None:
    charged = twice[0]["cpu"]
    assert charged["segments"] > 1000
    # Nearly every segment is of a kind the table has, so its figures decide the run.
    assert charged["uncalibrated_segments"] <= charged["segments"] * 0.01


def test_the_check_tells_a_table_the_code_has_moved_away_from() -> None:
    # `make scale` checks the committed table on a quiet machine (bench/scale/cpu.py, `--check`); a
    # machine running suites side by side measures a quarter or a third away, so what holds here is
    # that a table 3 times off is told, on every try, and the drift is measured at all.
    table = cpu.committed()
    stale = replace(table, check_scenario_seconds=table.check_scenario_seconds * 3)
    drifts = cpu.check(stale)
    assert len(drifts) == 3 and not any(cpu.within(d) for d in drifts), drifts
    assert all(0 < d < 1 for d in drifts)


def test_measured_charges_are_what_the_table_is_made_from() -> None:
    measured = run(Scenario(**{**SMALL.__dict__, "settings": Settings(cpu="measured")}))["cpu"]
    assert measured["source"] == "measured"
    assert measured["charged_s"] == measured["measured_s"] > 0


def test_the_committed_table_names_the_machine_it_was_measured_on() -> None:
    data = json.loads(cpu.TABLE_PATH.read_text())
    assert data["machine"]["processor"] and data["machine"]["python"]
    assert len(data["seconds"]) >= 20
    assert all(seconds > 0 for seconds in data["seconds"].values())


LIMITED = Scenario(due_at_once=300, failing=0.1, limit_per_second=20.0, limit_concurrent=5)


@pytest.mark.parametrize("scenario", [SMALL, LIMITED], ids=["copies-and-failures", "one-limit-key"])
def test_calls_past_botocores_http_layer_change_nothing_a_run_reports(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    skipping = run(scenario)
    calls = skipping.pop("botocore_calls")
    assert calls["direct"] > 10 * calls["full_path"] > 0
    _full_path_only(monkeypatch)
    full = run(scenario)
    assert full.pop("botocore_calls")["direct"] == 0
    # Conditions refused, throttles retried, failed targets, and for the key its holds, places in
    # line and takes: every answer alike, so every figure.
    if scenario is LIMITED:
        assert skipping["limit"]["held_back"] > 0 and skipping["calls"]["TransactWriteItems"] > 0
    else:
        assert skipping["dropped_at_fence"] + skipping["throttles"]["partition"] > 0
    assert json.dumps(_figures(skipping), sort_keys=True) == json.dumps(_figures(full), sort_keys=True)
