"""The model mutations of `make mutants` (`--model-mutations`): each drops one of the AWS limits the
scale model enforces (tests/mutants/mutations.py, MODEL_MUTATIONS), and must change the report of
the `make scale` goals it names. A goal whose report is the same with and without the limit does not
measure that limit, however its verdict reads.

For each mutation and each of its goals, the goal runs on the scratch copy's bench/scale as it was
(once per goal and scale, shared by the mutations that name it) and with the mutation planted, each a
subprocess under PYTHONHASHSEED=0, so that the two runs differ only by the mutation. The report says
whether the verdict flipped and which headline figures changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.mutants.mutations import Mutation, MutationGone

PRISTINE_MODEL = ".pristine-scale"


@dataclass(frozen=True)
class GoalRun:
    holds: bool
    headline: dict[str, Any]
    report: dict[str, Any]
    wall_seconds: float


@dataclass(frozen=True)
class Comparison:
    goal: str
    scale: float
    pristine: GoalRun
    mutant: GoalRun

    @property
    def flipped(self) -> bool:
        return self.pristine.holds != self.mutant.holds

    @property
    def changed_figures(self) -> dict[str, tuple[Any, Any]]:
        names = sorted(set(self.pristine.headline) | set(self.mutant.headline))
        return {
            name: (self.pristine.headline.get(name), self.mutant.headline.get(name))
            for name in names
            if self.pristine.headline.get(name) != self.mutant.headline.get(name)
        }

    @property
    def report_changed(self) -> bool:
        return self.pristine.report != self.mutant.report


def run_model_mutations(mutations: list[Mutation], scratch: Path, env: dict[str, str]) -> int:
    """Runs each model mutation's goals pristine and mutated; non-zero when a mutation no longer
    applies or changes no headline figure of any goal it names."""
    shutil.copytree(scratch / "bench" / "scale", scratch / PRISTINE_MODEL)
    env = env | {"PYTHONHASHSEED": "0"}
    pristine: dict[tuple[str, float], GoalRun] = {}
    results: list[tuple[Mutation, list[Comparison] | str, float]] = []
    for mutation in mutations:
        started = time.monotonic()
        _restore(scratch)
        try:
            mutation.apply(scratch)
        except MutationGone as gone:
            print(f"\n== {mutation.name}: mutation no longer applies: {gone}", flush=True)
            results.append((mutation, f"no longer applies: {gone}", 0.0))
            continue
        print(f"\n== {mutation.name}: {mutation.bug}", flush=True)
        comparisons = []
        for goal, scale in mutation.scale_goals:
            mutant = _run_goal(scratch, env, goal, scale, mutation.name)
            if (goal, scale) not in pristine:
                _restore(scratch)
                pristine[goal, scale] = _run_goal(scratch, env, goal, scale, "pristine")
                mutation.apply(scratch)
            comparison = Comparison(goal, scale, pristine[goal, scale], mutant)
            comparisons.append(comparison)
            _print_comparison(comparison)
        results.append((mutation, comparisons, time.monotonic() - started))
    _restore(scratch)
    return _summary(results)


def _restore(scratch: Path) -> None:
    shutil.rmtree(scratch / "bench" / "scale")
    shutil.copytree(scratch / PRISTINE_MODEL, scratch / "bench" / "scale")


def _run_goal(scratch: Path, env: dict[str, str], goal: str, scale: float, label: str) -> GoalRun:
    out = scratch / f".scale-{label}-{goal.replace(':', '')}-{scale:g}.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, "-m", "tests.mutants.scale_run", goal, str(scale), str(out)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0 or not out.exists():
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"{goal} at scale {scale:g} ({label}) failed to run:\n{tail}")
    answer = json.loads(out.read_text())
    print(f"   {goal} at scale {scale:g}, {label}: holds {_yes(answer['holds'])} ({wall:.0f} s)", flush=True)
    return GoalRun(answer["holds"], answer["headline"], answer["report"], wall)


def _yes(holds: bool) -> str:
    return "yes" if holds else "NO"


def _print_comparison(comparison: Comparison) -> None:
    verdict = (
        f"verdict flipped: {_yes(comparison.pristine.holds)} -> {_yes(comparison.mutant.holds)}"
        if comparison.flipped
        else f"verdict unchanged ({_yes(comparison.pristine.holds)})"
    )
    changed = comparison.changed_figures
    print(f"   {comparison.goal}: {verdict}; {len(changed)} headline figures changed", flush=True)
    for name, (before, after) in changed.items():
        print(f"     {name}: {before} -> {after}")
    if not changed and comparison.report_changed:
        print("     (the full report differs, but in no headline figure)")


def _summary(results: list[tuple[Mutation, list[Comparison] | str, float]]) -> int:
    print("\n| model mutation | goal | scale | verdict | p99 lateness ms | other figures changed | time |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    bad = 0
    for mutation, comparisons, seconds in results:
        if isinstance(comparisons, str):
            print(f"| {mutation.name} | | | {comparisons} | | | |")
            bad += 1
            continue
        if not any(c.changed_figures for c in comparisons):
            bad += 1
        for c in comparisons:
            verdict = (
                f"**flipped** {_yes(c.pristine.holds)} -> {_yes(c.mutant.holds)}"
                if c.flipped
                else f"{_yes(c.pristine.holds)}, unchanged"
            )
            changed = c.changed_figures
            p99 = ", ".join(
                f"{name.rsplit('.', 1)[1]} {before} -> {after}"
                for name, (before, after) in changed.items()
                if name.startswith("lateness_ms.p99.")
            )
            # The limit's own refusals first: what the mutation took away.
            others = sorted(
                (name for name in changed if not name.startswith("lateness_ms.")),
                key=lambda name: "throttl" not in name,
            )
            shown = "; ".join(f"{name} {changed[name][0]} -> {changed[name][1]}" for name in others[:4])
            shown += f"; {len(others) - 4} more" if len(others) > 4 else ""
            print(
                f"| {mutation.name} | {c.goal} | {c.scale:g} | {verdict} | {p99 or 'unchanged'} "
                f"| {shown or ('**none**' if not changed else '')} | {seconds:.0f} s |"
            )
    print(f"\n{bad} of {len(results)} model mutations changing none of their goals or no longer applying")
    return 1 if bad else 0
