"""A sampled scale run (bench/scale/sampling.py): the real worker on a stratified sample of the
deliveries, stand-ins (bench/scale/standins.py) for the rest. Its figures must be the full run's,
its check must catch a stand-in that is wrong, and a seed must repeat it exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.scale import sampling, standins
from bench.scale.goals import RECOMMENDED, _settings
from bench.scale.scenario import Scenario, run

# Table and indexes capped at 800 write units a second: the workers' fences, settles and history
# writes are throttled thousands of times, so the stand-ins' retries are held to the real ones'.
THROTTLED = Scenario(due_at_once=2_000, settings=_settings({**RECOMMENDED, "quota_wcu": "800"}))
SAMPLED = Scenario(**{**THROTTLED.__dict__, "sample_every": 5})
SMALL = Scenario(due_at_once=1_500, settings=_settings(RECOMMENDED), sample_every=5)


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report.items() if key != "cpu"}


@pytest.fixture(scope="module")
def full_and_sampled() -> tuple[dict[str, Any], dict[str, Any]]:
    return run(THROTTLED), run(SAMPLED)


def test_small_runs_are_not_sampled_unless_asked() -> None:
    assert sampling.sampling_for(199_999, None) == 0
    assert sampling.sampling_for(200_000, None) == sampling.EVERY
    assert sampling.sampling_for(1_000_000, 0) == 0
    assert "sampling" not in run(Scenario(due_at_once=50))


def test_the_sample_agrees_with_the_full_run(full_and_sampled: tuple[dict[str, Any], dict[str, Any]]) -> None:
    full, sampled = full_and_sampled
    assert "sampling" not in full
    assert sampled.get("error") is None, sampled.get("error")
    figures = sampled["sampling"]
    stood = sum(s["stand_in"]["deliveries"] for s in figures["strata"].values())
    sample = sum(s["sample"]["deliveries"] for s in figures["strata"].values())
    assert stood > 3 * sample > 0 and figures["items_checked"] == sample
    assert full["throttles"]["table"] > 1_000  # the retries are exercised
    for priority, mine in sampled["priorities"].items():
        theirs = full["priorities"][priority]
        assert (mine["never_called"], mine["called_twice"], mine["called_early"]) == (0, 0, 0)
        assert mine["occurrences"] == theirs["occurrences"]
        for figure in ("p50", "p99"):
            assert mine["lateness_ms"][figure] == pytest.approx(theirs["lateness_ms"][figure], rel=0.05)
    assert sampled["throttles"]["table"] == pytest.approx(full["throttles"]["table"], rel=0.05)
    assert sampled["cpu"]["charged_s"] == pytest.approx(full["cpu"]["charged_s"], rel=0.05)
    assert sampled["calls"]["UpdateItem"] == pytest.approx(full["calls"]["UpdateItem"], rel=0.05)
    assert sampled["lambda"]["account_peak"] == pytest.approx(full["lambda"]["account_peak"], rel=0.05)


def test_the_same_seed_repeats_a_sampled_run(full_and_sampled: tuple[dict[str, Any], dict[str, Any]]) -> None:
    again = run(SAMPLED)
    assert json.dumps(_figures(again), sort_keys=True) == json.dumps(
        _figures(full_and_sampled[1]), sort_keys=True
    )


def test_a_stand_in_charged_for_the_wrong_code_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # The attempt's segments charged as a kind the CPU table lacks: its fallback figure, about 0.4 ms
    # more a delivery than the real attempt's.
    monkeypatch.setattr(standins, "ATTEMPT", "not.the.worker.attempt")
    report = run(SMALL)
    assert "cpu_s a delivery" in report["error"], report.get("error")
    assert any("cpu_s" in error for error in report["sampling"]["errors"])


def test_a_stand_in_that_writes_another_item_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    settled = standins.settled

    def with_more(running: Any, run_summary: Any, updated_ms: int) -> Any:
        return {**settled(running, run_summary, updated_ms), "extra": {"S": "x" * 2_000}}

    monkeypatch.setattr(standins, "settled", with_more)
    report = run(SMALL)
    errors = report["sampling"]["errors"]
    assert any("the settle differs in ['extra']" in error for error in errors), errors
    # Its bigger item costs more write units a settle, and the units' check sees that too.
    assert any("table_wcu" in error for error in errors), errors
    assert report["error"]


def test_the_early_strata_are_sampled_ten_times_as_densely_and_never_wholly() -> None:
    # A burst's early deliveries are a small share of it: at one in 50 a stratum compared a few
    # dozen, too few for the mean of a skewed duration (docs/operations.md).
    assert sampling.Sampler(every=50).every_in("high/early") == 5
    assert sampling.Sampler(every=50).every_in("high/on time") == 50
    assert sampling.Sampler(every=5).every_in("low/early") == 5


# Four concurrent executions in the account for 3,000 jobs due at once: deliveries come up to 50 s
# after their instant, past the 30 s a placed job's lease covers, so their fence finds the lease too
# short and writes a fresh one (sundial/shared/store/worker_writes.py), a request more.
LATE = Scenario(
    due_at_once=3_000,
    failing=0.02,
    settings=_settings({**RECOMMENDED, "account_concurrency": "4", "scheduler_reserved": "0"}),
)


def test_late_deliveries_renew_their_lease_on_the_stand_in_as_on_the_real_worker() -> None:
    full, sampled = run(LATE), run(Scenario(**{**LATE.__dict__, "sample_every": 5}))
    assert sampled.get("error") is None, sampled.get("error")
    renewed = {k: v for k, v in sampled["sampling"]["strata"].items() if k.endswith(f"/{sampling.RENEWS}")}
    assert sum(s["stand_in"]["deliveries"] for s in renewed.values()) > 500
    assert sum(s["sample"]["deliveries"] for s in renewed.values()) > 100
    # Every figure of the run is the one the real worker gave every delivery: the lateness, the
    # calls, the throttles, the CPU charged (only the sampling, the task switches and how the CPU was
    # charged differ).
    differ = ("scenario", "sampling", "cpu", "green_switches", "botocore_calls")
    assert {k: v for k, v in sampled.items() if k not in differ} == {
        k: v for k, v in full.items() if k not in differ
    }
    assert sampled["cpu"]["charged_s"] == full["cpu"]["charged_s"]


def test_a_stand_in_that_keeps_a_short_lease_fails_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    fenced = standins.fenced

    def keeping(before: Any, now_ms: int, worker: str, write_id: str, lease_until: int | None = None) -> Any:
        return fenced(before, now_ms, worker, write_id)

    monkeypatch.setattr(standins, "fenced", keeping)
    report = run(Scenario(**{**LATE.__dict__, "sample_every": 5}))
    errors = report["sampling"]["errors"]
    assert any("the fence differs in" in error and "lease_until" in error for error in errors), errors
    assert report["error"]
