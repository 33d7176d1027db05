"""Where the tables live: an option given wins over the environment, which wins over .sundial/."""

from __future__ import annotations

from pathlib import Path

import pytest

from sundial.local_stack.options import DEFAULT_STATE_DIR, state_dir, state_environment

HERE = {"SUNDIAL_STATE_DIR": "/srv/sundial"}
MEMORY = {"SUNDIAL_EPHEMERAL": "1"}


@pytest.mark.parametrize(
    ("given", "ephemeral", "environ", "expected"),
    [
        (None, None, {}, DEFAULT_STATE_DIR.absolute()),
        (None, None, HERE, Path("/srv/sundial")),
        (None, None, MEMORY, None),
        (None, None, {**MEMORY, **HERE}, None),
        ("/tmp/given", None, {**MEMORY, **HERE}, Path("/tmp/given")),
        (None, True, HERE, None),
        (None, None, {"SUNDIAL_EPHEMERAL": ""}, DEFAULT_STATE_DIR.absolute()),
    ],
)
def test_the_state_directory_is_the_first_of_option_environment_default(
    given: str | None, ephemeral: bool | None, environ: dict[str, str], expected: Path | None
) -> None:
    assert state_dir(given, ephemeral, environ) == expected


@pytest.mark.parametrize("path", [Path("/srv/sundial"), None])
def test_the_emulator_child_reads_back_what_local_hands_it(path: Path | None) -> None:
    assert state_dir(None, None, state_environment(path)) == path
