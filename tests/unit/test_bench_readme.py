"""The README's cost table is what the committed bench figures say (bench/readme.py): a bench run
writes it, and a hand edit or a run that did not is caught here."""

from __future__ import annotations

import json

import pytest

from bench import readme

RESULTS = readme.README.parent / "bench" / "results.json"


def test_the_readme_s_cost_table_is_the_committed_figures() -> None:
    figures = json.loads(RESULTS.read_text())["figures"]
    text = readme.README.read_text()

    assert readme.rewritten(text, figures) == text, "run `make bench PART=in-process` (or PART=idle)"


def test_a_table_needs_every_price_it_shows() -> None:
    figures = json.loads(RESULTS.read_text())["figures"]
    kept = [figure for figure in figures if not figure["name"].startswith("idle stage")]

    with pytest.raises(KeyError, match="idle stage"):
        readme.cost_table(kept)


def test_a_readme_without_its_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="markers"):
        readme.rewritten("# no table here\n", [])
