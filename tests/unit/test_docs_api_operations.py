"""docs/api.md lists every operation the API serves, as the OpenAPI document names it: its call,
its operationId, and exactly the statuses it answers (success and errors). The routes outside the
document (/openapi.json, /docs) are listed too."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
# Served, but not operations of the document itself.
OUTSIDE_THE_DOCUMENT = ("GET /openapi.json", "GET /docs")
ROW = re.compile(r"^\| `(?P<call>(?:GET|POST|PUT|PATCH|DELETE) /[^`]*)` \|(?P<cells>.*)\|\s*$")
STATUS = re.compile(r"\b[1-5]\d\d\b")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    from sundial.functions import api, api_openapi

    text = api.app.get_openapi_json_schema(
        title=api.TITLE, version=api.VERSION, description=api.DESCRIPTION, tags=api_openapi.TAGS
    )
    answer: dict[str, Any] = json.loads(text)
    return answer


def _operations(document: dict[str, Any]) -> dict[str, tuple[str, set[str]]]:
    """`METHOD /path`: its operationId and its statuses."""
    return {
        f"{method.upper()} {path}": (operation["operationId"], set(operation["responses"]))
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }


def _table() -> dict[str, list[str]]:
    """The Operations table of docs/api.md: `METHOD /path` to its cells."""
    section = API_DOC.read_text().split("\n## Operations\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            rows[match["call"]] = [cell.strip() for cell in match["cells"].split("|")]
    return rows


def test_the_document_has_the_operations_the_docs_expect(document: dict[str, Any]) -> None:
    # A guard on the fixture: if the document came back empty the other tests would prove nothing.
    assert len(_operations(document)) >= 17


def test_every_operation_is_in_the_operations_table(document: dict[str, Any]) -> None:
    table = _table()
    missing = sorted(set(_operations(document)) - set(table))
    assert missing == [], f"docs/api.md, Operations, lacks: {missing}"


def test_each_row_names_the_operation_id_and_exactly_its_statuses(document: dict[str, Any]) -> None:
    table = _table()
    wrong = []
    for call, (operation_id, statuses) in sorted(_operations(document).items()):
        operation_cell, _request, answer, errors, _more = table[call]
        documented = set(STATUS.findall(answer)) | set(STATUS.findall(errors))
        if operation_cell != f"`{operation_id}`" or documented != statuses:
            wrong.append(
                f"{call}: document {operation_id} {sorted(statuses)}, "
                f"docs {operation_cell} {sorted(documented)}"
            )
    assert wrong == [], "docs/api.md, Operations, differs from the OpenAPI document:\n" + "\n".join(wrong)


def test_the_table_has_no_call_the_api_does_not_serve(document: dict[str, Any]) -> None:
    extra = sorted(set(_table()) - set(_operations(document)) - set(OUTSIDE_THE_DOCUMENT))
    assert extra == [], f"docs/api.md, Operations, lists calls the API does not serve: {extra}"


def test_the_routes_outside_the_document_are_listed() -> None:
    assert set(OUTSIDE_THE_DOCUMENT) <= set(_table())


def test_every_call_appears_in_the_text_of_its_section(document: dict[str, Any]) -> None:
    """Each call is also described where its section is: the path with its parameter as `{id}` or
    as the document names it."""
    text = API_DOC.read_text().split("\n## Jobs\n", 1)[1]
    missing = []
    for call in _operations(document):
        method, path = call.split(" ", 1)
        shapes = {path, re.sub(r"\{[^}]+\}", "{id}", path)}
        if not any(f"{method} {shape}" in text for shape in shapes):
            missing.append(call)
    assert missing == [], f"docs/api.md describes nowhere below its Operations table: {sorted(missing)}"
