"""constraints.txt is the one list of tested versions: pyproject's ranges admit each of them, and the
Lambda requirements pin exactly them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from infra.pins import CONSTRAINTS, REQUIREMENTS, canonical, pins, repinned

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OWN = canonical(PROJECT["name"])


def _declared() -> list[Requirement]:
    declared = [Requirement(text) for text in PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        declared += [Requirement(text) for text in extra]
    return [requirement for requirement in declared if canonical(requirement.name) != OWN]


def test_every_declared_dependency_is_pinned_within_its_range() -> None:
    tested = pins(CONSTRAINTS.read_text())
    for requirement in _declared():
        version = tested.get(canonical(requirement.name))
        assert version is not None, f"{requirement.name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(version), f"{requirement} does not admit the tested {version}"


def test_every_declared_dependency_has_an_upper_bound_but_the_time_zone_data() -> None:
    unbounded = [
        str(requirement)
        for requirement in _declared()
        if not any(spec.operator in ("<", "<=", "==", "~=") for spec in requirement.specifier)
    ]
    # tzdata is data, released as the world's zones change; an old bound would only go stale.
    assert unbounded == ["tzdata>=2024.1"]


def test_the_lambda_requirements_pin_the_tested_versions() -> None:
    text = REQUIREMENTS.read_text()
    assert repinned(text, pins(CONSTRAINTS.read_text())) == text, "run `make pins`"


def test_a_requirement_missing_from_the_constraints_is_refused() -> None:
    with pytest.raises(KeyError, match="left-pad is not pinned"):
        repinned("left-pad==1.0\n", {"pydantic": "2.0"})


def test_repinning_keeps_extras_and_comments() -> None:
    text = "# why\naws-lambda-powertools[tracer]==3.0.0\n"
    assert (
        repinned(text, {"aws-lambda-powertools": "3.37.0"})
        == "# why\naws-lambda-powertools[tracer]==3.37.0\n"
    )
