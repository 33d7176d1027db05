"""The bench's results file, part by part, and each figure held against the committed one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import parts, results


def figure(name: str, value: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "value": value, "unit": "s", "goal": None, "met": None, **extra}


def test_the_spread_is_the_range_its_line_names_and_a_figure_measured_once_is_its_own() -> None:
    assert results.spread(figure("p99", 0.06, spread="median of 3, range 0.051-0.088")) == (0.051, 0.088)
    assert results.spread(figure("ratio", 1.2, spread="ratio median of 5, range 0.28-1.70; p99 0.02 s")) == (
        0.28,
        1.70,
    )
    assert results.spread(figure("cost", 2.84)) == (2.84, 2.84)
    assert results.spread(figure("calls", 900, spread="earliest start +0.009 s")) == (900, 900)


def test_a_range_that_does_not_hold_the_figure_is_another_quantitys() -> None:
    burst = figure("burst", 1.05, spread="p99 median of 3, range 7.90-8.10")
    assert results.spread(burst) == (1.05, 1.05)


def test_a_range_printed_rounded_still_holds_its_median() -> None:
    assert results.spread(figure("p50", 0.0126, spread="median of 3, range 0.012-0.013")) == (0.012, 0.013)
    assert results.spread(figure("p50", 0.0126, spread="median of 3, range 0.013-0.013")) == (0.0126, 0.013)


@pytest.mark.parametrize(
    ("goal", "unit", "higher"),
    [
        (">= 0.8", "x", True),
        ("= 900, none early", "of 900", True),
        (None, "of 3000", True),
        ("<= 0.25 s", "s", False),
        ("< 1000", "ms", False),
        (None, "$/million", False),
        ("high p99 < medium p50 < low p50", "s (p99)", False),
    ],
)
def test_which_way_is_better_follows_the_goal_or_else_the_unit(
    goal: str | None, unit: str, higher: bool
) -> None:
    assert results.higher_is_better({"goal": goal, "unit": unit}) is higher


def test_a_figure_within_either_spread_is_the_same() -> None:
    before = figure("p99", 0.06, spread="median of 3, range 0.05-0.09")
    after = figure(
        "p99", 0.1, spread="median of 3, range 0.055-0.12"
    )  # beyond the old range, not the old beyond it
    assert results.compare_one(before, after) == results.SAME
    assert (
        results.compare_one(before, figure("p99", 0.07, spread="median of 3, range 0.069-0.071"))
        == results.SAME
    )


def test_a_figure_beyond_both_spreads_is_better_or_worse_as_its_goal_says() -> None:
    lateness = figure("p99", 0.06, goal="<= 0.25 s", spread="median of 3, range 0.05-0.07")
    slower = figure("p99", 0.2, goal="<= 0.25 s", spread="median of 3, range 0.15-0.22")
    assert results.compare_one(lateness, slower) == results.WORSE
    assert results.compare_one(slower, lateness) == results.BETTER
    throughput = figure("tick", 0.88, goal=">= 0.8", spread="median of 3, range 0.86-0.97")
    faster = figure("tick", 1.2, goal=">= 0.8", spread="median of 3, range 1.1-1.3")
    assert results.compare_one(throughput, faster) == results.BETTER


def test_a_figure_without_spread_moves_on_any_change_and_stays_on_none() -> None:
    assert results.compare_one(figure("cost", 2.84), figure("cost", 2.85)) == results.WORSE
    assert results.compare_one(figure("cost", 2.84), figure("cost", 2.84)) == results.SAME
    assert results.compare_one(figure("cost", 2.84), figure("cost", float("nan"))) == results.WORSE


def test_compare_lists_the_figures_of_the_parts_measured_new_and_no_longer_given() -> None:
    committed = [
        figure("a", 1.0, part="one"),
        figure("b", 1.0, part="one"),
        figure("c", 1.0, part="two"),
    ]
    current = [figure("a", 2.0, part="one"), figure("d", 1.0, part="one"), figure("c", 9.0, part="two")]
    changes = {
        change.name: change for change in results.compare(committed, current, {"one"}, every_part=False)
    }
    assert {name: change.verdict for name, change in changes.items()} == {
        "a": results.WORSE,
        "d": results.NEW,
        "b": results.NOT_MEASURED,
    }
    assert (changes["a"].before, changes["a"].after) == (1.0, 2.0)


def test_a_committed_figure_without_a_part_counts_as_not_measured_only_after_a_full_run() -> None:
    committed = [figure("old", 1.0), figure("a", 1.0)]
    current = [figure("a", 1.0, part="one")]
    assert [c.name for c in results.compare(committed, current, {"one"}, every_part=False)] == ["a"]
    full = results.compare(committed, current, {"one"}, every_part=True)
    assert [(c.name, c.verdict) for c in full] == [("a", results.SAME), ("old", results.NOT_MEASURED)]


def test_a_part_replaces_its_own_figures_in_place_and_keeps_the_others() -> None:
    document = {
        "figures": [
            figure("a", 1.0, part="one"),
            figure("b", 1.0, part="two"),
            figure("c", 1.0, part="three"),
        ],
        "parts": {"two": {"status": "ok"}},
    }
    run = {"date": "today"}
    updated = results.with_part(document, "two", [figure("b", 5.0), figure("b2", 6.0)], {"status": "ok"}, run)
    assert [(f["name"], f["value"], f["part"]) for f in updated["figures"]] == [
        ("a", 1.0, "one"),
        ("b", 5.0, "two"),
        ("b2", 6.0, "two"),
        ("c", 1.0, "three"),
    ]
    assert updated["date"] == "today"
    assert document["figures"][1]["value"] == 1.0  # the document given is left as it was


def test_a_failed_part_keeps_its_error_not_its_figures_and_one_from_before_parts_goes_by_name() -> None:
    document = {"figures": [figure("a", 1.0), figure("b", 1.0, part="two")]}
    failed = {"status": results.FAILED, "error": "TimeoutExpired: 30 s"}
    updated = results.with_part(document, "two", [], failed, {})
    assert [f["name"] for f in updated["figures"]] == ["a"]
    assert updated["parts"]["two"] == failed
    renamed = results.with_part(updated, "one", [figure("a", 3.0)], {"status": results.OK}, {})
    assert [(f["name"], f["value"], f["part"]) for f in renamed["figures"]] == [("a", 3.0, "one")]


def test_the_file_is_written_whole_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    assert results.read(path) == {}
    results.write(path, {"figures": [figure("a", 1.0)]})
    results.write(path, {"figures": [figure("a", 2.0)]})
    assert json.loads(path.read_text())["figures"][0]["value"] == 2.0
    assert [file.name for file in tmp_path.iterdir()] == ["results.json"]  # no temporary left behind


def test_a_part_is_chosen_by_name_and_an_unknown_one_is_refused_naming_the_parts() -> None:
    assert parts.selected(None) == parts.PARTS
    assert [part.name for part in parts.selected("local-state-startup")] == ["local-state-startup"]
    refusal = "no bench part 'startup'; the parts: in-process, idle, ledger, local-stack"
    with pytest.raises(ValueError, match=refusal):
        parts.selected("startup")
