"""Python handlers of one's own (docs/handlers.md): a package made here, run by `sundial local --handlers`."""

from __future__ import annotations

import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from sundial.client import InvalidInput, SundialClient
from tests.e2e.processes import start_local, sundial_command

pytestmark = pytest.mark.e2e

HANDLERS = """
from pathlib import Path

from sundial.shared.targets import Delivery, python_handler


@python_handler("greet")
def greet(delivery: Delivery) -> None:
    Path(delivery.payload["path"]).write_text(f"hello {delivery.job_id} attempt {delivery.attempt}")
"""


def _package(where: Path) -> None:
    package = where / "my_handlers"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(HANDLERS))


def test_a_handler_package_of_ones_own_runs_on_the_local_stack(
    tmp_path: Path, logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(tmp_path)
    # Found from the working directory, as `python -m` finds a module.
    monkeypatch.chdir(tmp_path)
    local, url = start_local(logs, "--handlers", "my_handlers", name="local-handlers")
    try:
        assert f"Console:   {url}/console/" in local.output()
        client = SundialClient(url, timeout=10)
        out = tmp_path / "greeted.txt"
        job = client.create_job(
            {"target": {"type": "python", "handler": "greet"}, "payload": {"path": str(out)}}
        )
        deadline = time.monotonic() + 30
        while client.get_job(job.id).status != "succeeded":
            assert time.monotonic() < deadline, client.get_job(job.id)
            time.sleep(0.2)
        assert out.read_text() == f"hello {job.id} attempt 1"
        with pytest.raises(InvalidInput, match=r"'nope' is not registered \(registered: fail, greet, noop\)"):
            client.create_job({"target": {"type": "python", "handler": "nope"}})
    finally:
        local.stop()


def test_a_handler_module_that_cannot_be_imported_stops_the_start(tmp_path: Path) -> None:
    result = subprocess.run(
        [*sundial_command(), "local", "--ephemeral", "--handlers", "no_such_handlers"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "--handlers: python handler module 'no_such_handlers' cannot be imported" in result.stderr
