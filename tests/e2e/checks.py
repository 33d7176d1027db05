"""Checks that all run before a test fails, so one run reports every broken promise with its numbers,
not just the first."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Checks:
    title: str
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def check(self, holds: bool, message: str) -> bool:
        if not holds:
            self.failures.append(message)
        return holds

    def note(self, message: str) -> None:
        """Context for whoever reads a failure: what was measured, whether or not it failed."""
        self.notes.append(message)

    def report(self) -> str:
        lines = [f"{self.title}: {len(self.failures)} check(s) failed"]
        lines += [f"  FAILED {failure}" for failure in self.failures]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def verify(self) -> None:
        print(self.report())  # shown with -s; pytest also shows it beside a failure
        assert not self.failures, self.report()
