"""The creates model (bench/scale/creates.py) runs `sundial jobs import` through modelled API Gateway
and api function invocations onto the modelled table: every line becomes one job item, each answered
as created; and an empty stage bucket answers 429, which the import waits out with a growing pause,
or, when the stage stays empty, reports, with no job made twice."""

from __future__ import annotations

from bench.scale.creates import Imports, run


def test_imports_side_by_side_create_every_line_once() -> None:
    report = run(Imports("small", importers=3, jobs_each=150, in_flight=1))

    assert report["imports_exited"] == {"ok": 3, "other": 0}
    assert report["created"] == report["jobs"] == report["job_items_in_table"] == 450
    assert report["requests"] == 6 and report["throttled_429"] == 0  # 100 lines a request
    assert report["cold_starts"] == report["peak_invocations"] == 3
    assert report["creates_per_second"] > 0


def test_a_stage_short_of_tokens_answers_429_and_the_imports_back_off_until_every_line_is_made() -> None:
    report = run(Imports("throttled", importers=8, jobs_each=100, stage_rate=0.5, stage_burst=1))

    assert report["throttled_429"] > 0
    assert report["imports_exited"] == {"ok": 8, "other": 0}
    assert report["job_items_in_table"] == report["created"] == report["jobs"]


def test_a_stage_out_of_tokens_for_long_ends_imports_and_no_job_is_made_twice() -> None:
    report = run(Imports("starved", importers=8, jobs_each=100, stage_rate=0.01, stage_burst=1))

    assert report["throttled_429"] > 0
    assert report["imports_exited"]["other"] >= 1  # gave up after eight failed requests in a row
    assert any("Throttled" in error for error in report["import_errors"])
    assert report["job_items_in_table"] == report["created"] < report["jobs"]


def test_one_import_with_requests_in_flight_creates_every_line_once_and_faster() -> None:
    one_at_a_time = run(Imports("one at a time", importers=1, jobs_each=1_200, in_flight=1))
    side_by_side = run(Imports("in flight", importers=1, jobs_each=1_200, in_flight=4))

    for report in (one_at_a_time, side_by_side):
        assert report["imports_exited"] == {"ok": 1, "other": 0}
        assert report["created"] == report["jobs"] == report["job_items_in_table"] == 1_200
        assert report["requests"] == 12
    assert one_at_a_time["peak_invocations"] == 1 < side_by_side["peak_invocations"] <= 4
    assert side_by_side["virtual_seconds"] < one_at_a_time["virtual_seconds"] / 2


def test_the_same_imports_repeat_exactly_charged_from_the_cpu_table() -> None:
    """The api function's CPU comes from the committed table (bench/scale/cpu.py), its kinds among
    them, so the figures do not follow the host: two runs give the same report."""
    imports = Imports("repeat", importers=4, jobs_each=300, in_flight=2)
    first, second = run(imports), run(imports)

    assert first["cpu"]["source"] == "table" and first["cpu"]["uncalibrated_segments"] == 0
    for report in (first, second):
        del report["wall_seconds"]
        report["cpu"] = {
            k: v for k, v in report["cpu"].items() if k.startswith(("source", "charged", "segments"))
        }
    assert first == second
