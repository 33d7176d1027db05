"""One's own python handlers in the deployed stack (docs/handlers.md): `-c sundial:handlers=...`."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.handlers import checked_modules, handler_sources
from sundial.shared import constants as c
from tests.infra.conftest import _synthesise
from tests.infra.test_functions import _functions

pytestmark = pytest.mark.infra


def _package(root: Path) -> Path:
    package = root / "billing"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "jobs.py").write_text(
        "from sundial.shared.targets import Delivery, python_handler\n\n\n"
        '@python_handler("invoice")\ndef invoice(delivery: Delivery) -> None:\n    pass\n'
    )
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "jobs.cpython-312.pyc").write_bytes(b"\0")
    return package


def test_the_handler_package_is_bundled_and_named_to_the_api_and_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(tmp_path / "project")
    # Found from the directory `cdk` runs in.
    monkeypatch.chdir(tmp_path / "project")
    stack = _synthesise(tmp_path / "cdk.out", {"sundial:handlers": "billing.jobs"})

    # The whole top-level package, beside Sundial's own, without bytecode.
    assert (stack.asset_dir / "billing" / "jobs.py").read_text().startswith("from sundial.shared.targets")
    assert (stack.asset_dir / "billing" / "__init__.py").is_file()
    assert (stack.asset_dir / "sundial" / "shared" / "constants.py").is_file()
    assert not (stack.asset_dir / "billing" / "__pycache__").exists()
    variables = {name: props["Environment"]["Variables"] for name, (_, props) in _functions(stack).items()}
    assert variables["api"][c.ENV_HANDLERS] == variables["worker"][c.ENV_HANDLERS] == "billing.jobs"
    assert c.ENV_HANDLERS not in variables["scheduler"]


def test_handler_modules_are_checked_at_synthesis(tmp_path: Path) -> None:
    package = _package(tmp_path)
    assert handler_sources(["billing.jobs", "billing"], [str(tmp_path)]) == (package,)
    with pytest.raises(ValueError, match=r"sundial:handlers: module 'nowhere' is not found"):
        handler_sources(["nowhere"], [str(tmp_path)])
    with pytest.raises(ValueError, match=r"'sundial.shared.mine' is inside Sundial's own packages"):
        checked_modules(["sundial.shared.mine"])
    with pytest.raises(ValueError, match=r"'my-handlers' is not a module name"):
        checked_modules(["my-handlers"])
