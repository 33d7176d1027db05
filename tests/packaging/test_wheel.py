"""What `pip install .` puts into site-packages: the wheel built from this tree, read as pip installs it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import sundial

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[zipfile.ZipFile]:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("*.whl")
    with zipfile.ZipFile(built) as archive:
        yield archive


def _metadata(wheel: zipfile.ZipFile, name: str) -> str:
    (path,) = (n for n in wheel.namelist() if n.endswith(f".dist-info/{name}"))
    return wheel.read(path).decode()


def test_the_wheel_holds_one_top_level_package(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist() if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"sundial"}


def test_the_cdk_app_and_the_tests_stay_out(wheel: zipfile.ZipFile) -> None:
    assert not [n for n in wheel.namelist() if n.startswith(("infra/", "tests/", "bench/"))]


def test_the_wheel_is_typed_licensed_and_carries_the_console(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert "sundial/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert any(n.startswith("sundial/console/static/") for n in names)


def test_the_version_is_the_package_s_own(wheel: zipfile.ZipFile) -> None:
    metadata = _metadata(wheel, "METADATA")
    assert "Name: sundial-scheduler\n" in metadata
    assert f"Version: {sundial.__version__}\n" in metadata
    assert "License-Expression: Apache-2.0" in metadata


def test_the_command_is_the_package_s_cli(wheel: zipfile.ZipFile) -> None:
    assert "sundial = sundial.cli:main" in _metadata(wheel, "entry_points.txt")


def test_sundial_version_prints_the_version() -> None:
    printed = subprocess.run(
        [sys.executable, "-c", "from sundial.cli import main; main(['--version'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert printed == f"sundial {sundial.__version__}\n"
