"""docs/design.md shows the transition table the store enforces: the two must agree row for row."""

from __future__ import annotations

from pathlib import Path

from sundial.contract.vocabulary import JobStatus
from sundial.shared.lifecycle import TRANSITIONS, Transition

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"
ORDER = list(JobStatus)


def _statuses(statuses: frozenset[JobStatus]) -> str:
    return ", ".join(s.value for s in sorted(statuses, key=ORDER.index)) or "(none)"


def render(row: Transition) -> str:
    guards = ", ".join(guard.value for guard in row.guards)
    cells = [
        row.event.value,
        row.actor,
        _statuses(row.sources),
        guards,
        _statuses(row.targets),
        row.index,
        row.sends,
    ]
    return "| " + " | ".join(cells) + " |"


def test_every_row_of_the_table_is_in_the_design_document() -> None:
    text = DESIGN.read_text()
    missing = [render(row) for row in TRANSITIONS.values() if render(row) not in text]
    assert missing == [], "docs/design.md differs from sundial/shared/lifecycle/table.py:\n" + "\n".join(
        missing
    )


def test_the_design_document_has_no_row_the_code_lacks() -> None:
    lines = DESIGN.read_text().split("## Transitions", 1)[1].split("\n## ", 1)[0].splitlines()
    rows = [
        line
        for line in lines
        if line.startswith("| ") and not line.startswith("| event") and "---" not in line
    ]
    assert sorted(rows) == sorted(render(row) for row in TRANSITIONS.values())
