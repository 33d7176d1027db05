"""Every named mutation of `make mutants` still applies to sundial/shared/ as it is, and plants valid Python:
a mutation whose anchor the code moved away from fails here, in `make test`, not only in a long
mutants run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.mutants.mutations import MODEL_MUTATIONS, MUTATIONS, Edit, Mutation, MutationGone

ROOT = Path(__file__).resolve().parents[2]


def _applies_and_compiles(mutation: Mutation, tmp_path: Path, tree: str) -> None:
    shutil.copytree(ROOT / tree, tmp_path / tree)

    mutation.apply(tmp_path)

    changed = [
        path
        for path in sorted((tmp_path / tree).rglob("*.py"))
        if path.read_text() != (ROOT / path.relative_to(tmp_path)).read_text()
    ]
    assert {str(path.relative_to(tmp_path)) for path in changed} == {edit.path for edit in mutation.edits}
    for path in changed:
        compile(path.read_text(), str(path), "exec")


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda mutation: mutation.name)
def test_mutation_applies_and_compiles(mutation: Mutation, tmp_path: Path) -> None:
    _applies_and_compiles(mutation, tmp_path, "sundial/shared")


@pytest.mark.parametrize("mutation", MODEL_MUTATIONS, ids=lambda mutation: mutation.name)
def test_model_mutation_applies_and_compiles(mutation: Mutation, tmp_path: Path) -> None:
    """The scale model's mutations (`make mutants MUTANTS_ARGS=--model-mutations`), on bench/scale."""
    _applies_and_compiles(mutation, tmp_path, "bench/scale")


def test_an_edit_whose_anchor_is_gone_says_so(tmp_path: Path) -> None:
    (tmp_path / "sundial" / "shared").mkdir(parents=True)
    (tmp_path / "sundial" / "shared" / "module.py").write_text("def kept():\n    return 1\n")
    edit = Edit("sundial/shared/module.py", r"^def renamed\(", r"return 1", "return 2")

    with pytest.raises(MutationGone, match="not found"):
        edit.apply(tmp_path)


def test_an_edit_changes_only_its_anchor_s_scope(tmp_path: Path) -> None:
    (tmp_path / "sundial" / "shared").mkdir(parents=True)
    source = "def first():\n    return 1\n\n\ndef second():\n    return 1\n"
    (tmp_path / "sundial" / "shared" / "module.py").write_text(source)

    Edit("sundial/shared/module.py", r"^def second\(", r"return 1", "return 2").apply(tmp_path)

    assert (tmp_path / "sundial" / "shared" / "module.py").read_text() == source.replace(
        "second():\n    return 1", "second():\n    return 2"
    )
