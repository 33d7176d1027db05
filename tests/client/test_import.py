"""The client and the `sundial jobs` commands load without the service: no local stack or emulator (moto),
no store, engine or target delivery (sundial.shared), no handler (sundial.functions) and no boto3."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCKED = ("moto", "werkzeug", "flask", "boto3", "sundial.local_stack", "sundial.shared", "sundial.functions")

BLOCKER = textwrap.dedent(
    f"""
    import sys

    BLOCKED = {BLOCKED!r}

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ImportError(f"{{name}} is blocked in this test")
            return None

    sys.meta_path.insert(0, Blocker())
    """
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_blocker_blocks() -> None:
    result = _run("import sundial.local_stack.cli")
    assert result.returncode != 0 and "blocked in this test" in result.stderr


def test_the_client_imports_without_the_local_stack() -> None:
    result = _run(
        """
        from sundial.client import SundialClient, NotFound
        client = SundialClient("http://127.0.0.1:9")
        loaded = sorted(m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED))
        print("loaded:", loaded)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "loaded: []" in result.stdout


def test_the_api_commands_run_without_the_local_stack() -> None:
    result = _run(
        """
        from sundial.cli import main
        try:
            main(["jobs", "create", "--help"])
        except SystemExit as exit:
            print("exit:", exit.code)
        blocked = [m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED)]
        print("loaded:", sorted(blocked))
        """
    )
    assert result.returncode == 0, result.stderr
    assert "--target-url" in result.stdout
    assert "exit: 0" in result.stdout and "loaded: []" in result.stdout
