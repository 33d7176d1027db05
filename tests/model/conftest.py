"""Reports the model's budget (examples x steps) and wall time at the end of the run."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.model.test_engine_machine import BUDGET

    if BUDGET:
        terminalreporter.write_line(
            f"model: budget {BUDGET['max_examples']} examples x {BUDGET['step_count']} steps "
            f"(SUNDIAL_MODEL_EXAMPLES, SUNDIAL_MODEL_STEPS); ran {BUDGET['examples']} examples, "
            f"{BUDGET['steps']} steps in {BUDGET['seconds']:.0f} s"
        )
