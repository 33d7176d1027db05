"""The Lambda code asset: arm64 wheels for the runtime's Python, our packages, nothing from the host."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from infra.bundling import PYTHON_VERSION, RUNTIME, asset_hash, source_files
from tests.infra.conftest import Synthesised

pytestmark = pytest.mark.infra

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "sundial" / "functions" / "requirements.txt"
ABI = "cpython-" + PYTHON_VERSION.replace(".", "")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    pins = {}
    for raw in REQUIREMENTS.read_text().splitlines():
        line = raw.split("#")[0].strip()
        if line:
            match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[a-z,]+\])?==([0-9A-Za-z.]+)", line)
            assert match, f"not pinned exactly: {line}"
            pins[_normalise(match.group(1))] = match.group(3)
    return pins


def test_every_requirement_is_pinned_exactly() -> None:
    pins = _pins()
    for needed in (
        "aws-lambda-powertools",
        "pydantic",
        "croniter",
        "holidays",
        "tzdata",
        "python-ulid",
        "boto3",
    ):
        assert needed in pins


def test_runtime_matches_the_wheels() -> None:
    assert RUNTIME.name == f"python{PYTHON_VERSION}"


def test_asset_holds_our_packages_and_the_pinned_distributions(synthesised: Synthesised) -> None:
    asset = synthesised.asset_dir
    assert (asset / "sundial" / "shared" / "constants.py").is_file()
    assert (asset / "sundial" / "functions").is_dir()
    assert (asset / "sundial" / "contract").is_dir()
    # The client, the command and the console are not the functions' code.
    assert not (asset / "sundial" / "client").exists()
    assert not (asset / "sundial" / "commands").exists()
    installed = {}
    for dist_info in asset.glob("*.dist-info"):
        name, version = dist_info.name.removesuffix(".dist-info").rsplit("-", 1)
        installed[_normalise(name)] = version
    # Nothing unpinned sneaks in as a transitive dependency, and every pin is installed as written.
    assert installed == _pins()


def test_native_code_is_built_for_the_runtime_on_arm64(synthesised: Synthesised) -> None:
    extensions = list(synthesised.asset_dir.rglob("*.so"))
    assert any(p.parent.name == "pydantic_core" for p in extensions)
    for extension in extensions:
        assert extension.name.endswith(f".{ABI}-aarch64-linux-gnu.so") or ".abi3." in extension.name, (
            extension
        )
        assert extension.read_bytes()[18] == 0xB7, f"{extension} is not an AArch64 ELF"  # e_machine


def test_no_bytecode_or_host_artefacts(synthesised: Synthesised) -> None:
    asset = synthesised.asset_dir
    assert not list(asset.rglob("*.pyc"))
    assert not list(asset.rglob("__pycache__"))
    assert not (asset / "bin").exists()
    host = sys.prefix.encode()
    for path in asset.rglob("*.py"):
        with path.open("rb") as handle:
            assert host not in handle.readline(), path


def _tree(root: Path, requirements: str) -> Path:
    (root / "sundial" / "shared").mkdir(parents=True)
    (root / "sundial" / "functions").mkdir()
    (root / "sundial" / "shared" / "constants.py").write_text("TABLE = 'jobs'\n")
    (root / "sundial" / "functions" / "requirements.txt").write_text(requirements)
    return root


def test_asset_hash_follows_requirements_and_sources_but_not_bytecode(tmp_path: Path) -> None:
    root = _tree(tmp_path / "a", "pydantic==2.0.0\n")
    first = asset_hash(root)
    (root / "sundial" / "shared" / "__pycache__").mkdir()
    (root / "sundial" / "shared" / "__pycache__" / "constants.cpython-311.pyc").write_bytes(b"\0")
    assert asset_hash(root) == first
    (root / "sundial" / "functions" / "requirements.txt").write_text("pydantic==2.0.1\n")
    second = asset_hash(root)
    assert second != first
    (root / "sundial" / "shared" / "constants.py").write_text("TABLE = 'other'\n")
    assert asset_hash(root) != second
    assert [p.name for p in source_files(root)] == ["constants.py", "requirements.txt"]


def _runtime_imports(path: Path) -> set[str]:
    """Top-level modules imported at run time (imports under `if TYPE_CHECKING:` are for mypy only)."""
    tree = ast.parse(path.read_text(), str(path))
    type_checking = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_checking:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_every_module_the_code_imports_is_in_the_asset_or_the_standard_library(
    synthesised: Synthesised,
) -> None:
    asset = synthesised.asset_dir
    missing = {
        f"{name} (imported by {path.relative_to(asset)})"
        for package in ("shared", "functions")
        for path in (asset / package).rglob("*.py")
        for name in _runtime_imports(path)
        if name not in sys.stdlib_module_names
        and not (asset / name).is_dir()
        and not (asset / f"{name}.py").is_file()
    }
    assert not missing, "add to sundial/functions/requirements.txt: " + ", ".join(sorted(missing))
