"""bench/results.json as the bench keeps it, part by part, and each figure held against the
committed one.

The file is rewritten (atomically: a temporary file renamed over it) as soon as each part ends, with
that part's figures in place of its earlier ones, or its failure and error; the others' figures stay
as they were, so a run killed halfway keeps what it measured, and `make bench PART=...` changes only
that part's figures.

A figure moved when each run's value lies outside the other's spread (the range of the repetitions
behind it; a figure measured once is its own range, so any change moves it). Whether up is better
follows from its goal (">= ..." better higher), or for a count of good cases ("900 of 900") higher;
every other figure (seconds, dollars, ratios of times) is better lower.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Document = dict[str, Any]
Figure = dict[str, Any]
OK, FAILED = "ok", "failed"
SAME, BETTER, WORSE, NEW, NOT_MEASURED = "same", "better", "WORSE", "new", "not measured"
ROUNDING = 0.05
_RANGE = re.compile(r"range (-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class Change:
    name: str
    verdict: str  # SAME, BETTER, WORSE, NEW or NOT_MEASURED
    before: float | None
    after: float | None
    unit: str

    def describe(self) -> str:
        if self.before is None or self.after is None:
            return f"{self.verdict:<12} {self.name}"
        moved = _relative(self.before, self.after)
        return f"{self.verdict:<12} {self.name}: {self.before:g} -> {self.after:g} {self.unit} ({moved})"


def spread(figure: Figure) -> tuple[float, float]:
    """The range of the repetitions behind a figure: its own `low`/`high`, else the range its spread
    line names; a figure measured once is its own range."""
    value = float(figure["value"])
    low, high = figure.get("low"), figure.get("high")
    if low is not None and high is not None:
        return min(float(low), value), max(float(high), value)
    found = _RANGE.search(str(figure.get("spread") or ""))
    if found:
        low, high = float(found.group(1)), float(found.group(2))
        # A spread line may name the range of another quantity than the figure (a p99 in seconds
        # beside a ratio): a range that does not hold the figure is not its range. It is printed
        # rounded, so it may miss its own median by a rounding.
        rounding = ROUNDING * abs(value)
        if low - rounding <= value <= high + rounding:
            return min(low, value), max(high, value)
    return value, value


def higher_is_better(figure: Figure) -> bool:
    goal = str(figure.get("goal") or "").lstrip()
    return goal.startswith((">", "=")) or str(figure.get("unit", "")).startswith("of ")


def compare_one(before: Figure, after: Figure) -> str:
    """SAME, BETTER or WORSE: whether `after` moved beyond both spreads, and which way is good."""
    old, new = float(before["value"]), float(after["value"])
    if math.isnan(old) or math.isnan(new):
        return SAME if math.isnan(old) and math.isnan(new) else WORSE
    old_low, old_high = spread(before)
    new_low, new_high = spread(after)
    if new > old and new > old_high and old < new_low:
        went_up = True
    elif new < old and new < old_low and old > new_high:
        went_up = False
    else:
        return SAME
    return BETTER if went_up == higher_is_better(after) else WORSE


def compare(
    baseline: list[Figure], current: list[Figure], measured: set[str], every_part: bool
) -> list[Change]:
    """The figures of the parts measured in this run against the baseline's of the same name, and
    the baseline's figures that those parts no longer give (or failed to). A baseline figure without
    a part (a file from before parts) is taken as one of them only when every part was measured."""
    old = {figure["name"]: figure for figure in baseline}
    fresh = [figure for figure in current if figure.get("part") in measured]
    changes = [_change(old.get(figure["name"]), figure) for figure in fresh]
    names = {figure["name"] for figure in fresh}
    for figure in baseline:
        part = figure.get("part")
        ours = part in measured if part is not None else every_part
        if ours and figure["name"] not in names:
            changes.append(Change(figure["name"], NOT_MEASURED, float(figure["value"]), None, ""))
    return changes


def _change(before: Figure | None, after: Figure) -> Change:
    unit = str(after.get("unit", ""))
    if before is None:
        return Change(after["name"], NEW, None, float(after["value"]), unit)
    return Change(
        after["name"], compare_one(before, after), float(before["value"]), float(after["value"]), unit
    )


def with_part(
    document: Document, part: str, figures: list[Figure], status: dict[str, Any], run: dict[str, Any]
) -> Document:
    """The document with `part`'s figures replaced by these (none when it failed), its status, and
    the run's date, machine and versions; the other parts' figures as they were (a figure without a
    part, from a file from before parts, stays until one of the same name replaces it)."""
    names = {figure["name"] for figure in figures}
    fresh = [{**figure, "part": part} for figure in figures]
    merged: list[Figure] = []
    for figure in document.get("figures", []):
        if figure.get("part") == part or figure["name"] in names:
            merged += fresh  # where the part's figures were, so that the file keeps its order
            fresh = []
        else:
            merged.append(figure)
    parts = {**document.get("parts", {}), part: status}
    return {**document, **run, "parts": parts, "figures": merged + fresh}


def read(path: Path) -> Document:
    try:
        document: Document = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return document


def write(path: Path, document: Document) -> None:
    """Atomically: a reader, or a kill halfway, sees the whole old file or the whole new one."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as file:
            file.write(json.dumps(document, indent=2) + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _relative(before: float, after: float) -> str:
    if before == 0:
        return "from 0"
    return f"{(after - before) / abs(before):+.0%}"
