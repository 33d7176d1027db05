"""Dependencies point one way: the contract imports nothing of the service, the domain never imports
the handlers or the local stack, and the client side (client, command, console) imports the service
only inside the commands that run it (`sundial local`, `upgrade-listing`, `reseal-headers`)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sundial"
SERVICE = ("sundial.shared", "sundial.functions", "sundial.local_stack")
CONTRACT_MAY_IMPORT = ("pydantic", "pydantic_core", "sundial.contract")


def _modules(area: str) -> list[Path]:
    return sorted((PACKAGE / area).rglob("*.py")) if (PACKAGE / area).is_dir() else [PACKAGE / area]


def _imports(path: Path, *, top_level_only: bool) -> list[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def test_the_contract_imports_only_pydantic_the_standard_library_and_itself() -> None:
    stray = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in _modules("contract")
        for name in _imports(path, top_level_only=False)
        if name.split(".")[0] not in sys.stdlib_module_names and not _within(name, CONTRACT_MAY_IMPORT)
    ]
    assert stray == []


def test_the_domain_imports_no_handler_local_stack_or_client_side() -> None:
    outward = (
        "sundial.functions",
        "sundial.local_stack",
        "sundial.client",
        "sundial.commands",
        "sundial.console",
    )
    stray = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in _modules("shared")
        for name in _imports(path, top_level_only=False)
        if _within(name, outward) or name == "sundial.cli"
    ]
    assert stray == []


def test_the_client_side_loads_no_service_or_aws_sdk_at_import() -> None:
    stray = [
        f"{path.relative_to(PACKAGE)}: {name}"
        for area in ("client", "commands", "console", "cli.py")
        for path in _modules(area)
        for name in _imports(path, top_level_only=True)
        if _within(name, (*SERVICE, "boto3"))
    ]
    assert stray == []


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import sundial.shared.store\n")
    assert _imports(module, top_level_only=False) == ["sundial.shared.store"]
    assert _imports(module, top_level_only=True) == []
