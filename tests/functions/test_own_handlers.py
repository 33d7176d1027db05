"""The functions import one's own python handler modules at cold start (SUNDIAL_HANDLERS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sundial.functions import clients
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from tests.functions.conftest import api_event, invoke_api

HANDLERS = (
    "from sundial.shared.targets import Delivery, python_handler\n\n\n"
    '@python_handler("cold-start-greet")\ndef greet(delivery: Delivery) -> None:\n    pass\n'
)


def test_a_handler_module_named_in_the_environment_is_imported_at_cold_start(
    env: Resources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cold_start_handlers.py").write_text(HANDLERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(c.ENV_HANDLERS, "cold_start_handlers")
    clients.reset()

    created = invoke_api(
        api_event(
            "POST",
            "/jobs",
            {"schedule": "rate(1 hour)", "target": {"type": "python", "handler": "cold-start-greet"}},
        )
    )

    assert created.status == 201, created.body


def test_a_handler_module_that_cannot_be_imported_fails_the_cold_start(
    env: Resources, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(c.ENV_HANDLERS, "no_such_handler_module")
    clients.reset()
    with pytest.raises(ValueError, match="python handler module 'no_such_handler_module' cannot be imported"):
        clients.settings()
