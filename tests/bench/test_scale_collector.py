"""A run's figures do not depend on when Python's garbage collector runs. The model turns the
collector off for speed (bench/scale/runtime.py's `collector_off`), but a collection asked for
may still fall inside a run, and it may free objects, close generators or end greenlets at whatever
switch it falls on: none of that may reach a figure. The same sampled scenario (the real worker and
its stand-ins, a tick handing shares to claimers) runs with the collector off and with a full
collection forced every few task switches."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import greenlet

from bench.scale.goals import RECOMMENDED, _settings
from bench.scale.scenario import Scenario, run

# Small shares per tick invocation, so that claimers run too (as in a million due at once).
SAMPLED = Scenario(
    due_at_once=1_000,
    failing=0.05,
    settings=replace(_settings(RECOMMENDED), tick_capacity=200),
    sample_every=5,
)


def _figures(report: dict[str, Any]) -> str:
    # What this host measured beside the run is the one thing a run may not repeat.
    return json.dumps({key: value for key, value in report.items() if key != "cpu"}, sort_keys=True)


@contextmanager
def _collector_off() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _collecting_every(switches: int) -> Iterator[None]:
    """A full collection each `switches`-th time a task hands back to the simulation's loop."""
    count = 0

    def trace(event: str, args: tuple[greenlet.greenlet, greenlet.greenlet]) -> None:
        nonlocal count
        if event == "switch" and args[1].parent is None:
            count += 1
            if count % switches == 0:
                gc.collect()

    before = greenlet.settrace(trace)
    try:
        yield
    finally:
        greenlet.settrace(before)
    assert count > 10 * switches  # the collections did fall inside the run


def test_a_run_is_the_same_whenever_the_collector_runs() -> None:
    with _collector_off():
        quiet = run(SAMPLED)
    with _collecting_every(200):
        collected = run(SAMPLED)
    assert quiet.get("error") is None, quiet.get("error")
    assert quiet["sampling"]["items_checked"] > 0
    assert any(tick["kind"] == "claimer" for tick in quiet["ticks"])
    assert _figures(quiet) == _figures(collected)
