"""A schedules file (docs/schedules-as-code.md): a namespace and the jobs it manages, each entry a key and
a job body as POST /jobs takes it, checked against the API's own JobCreate model. Every problem is named
by its line and field, and all of them are reported at once, so one round of edits fixes a file."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from sundial.client.bodies import field_name
from sundial.contract.bounds import LIMIT_KEY_PATTERN, NAME_KEY_CHARS
from sundial.contract.jobs import JobCreate
from sundial.contract.limits import LimitPut
from sundial.contract.targets import SECRET_MASK, SHOWN_HEADERS

SEPARATOR = "/"
# Lower case because the name filter folds case (billing/ and Billing/ would list each other's
# jobs); no separator in a namespace or a key, so that no namespace holds another's jobs
# ("billing" would otherwise manage "billing/eu/x" of a file whose namespace is "billing/eu"). Long
# enough that "<namespace>/" is a name prefix the API can filter on.
NAMESPACE = re.compile(rf"[a-z0-9][a-z0-9_-]{{{NAME_KEY_CHARS - 2},62}}")
KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TOP_LEVEL = ("namespace", "jobs", "limits")
LIMIT_FIELDS = tuple(LimitPut.model_fields)
# The fields of an entry: the job's, but for the name, which apply makes of the namespace and the key.
ENTRY_FIELDS = ("key", *(name for name in JobCreate.model_fields if name != "name"))
ROUTES = ("target", "on_dead")  # the fields that hold a target, whose headers may hold secrets
_MERGE = "tag:yaml.org,2002:merge"


class _Loader(yaml.SafeLoader):
    """YAML as JSON sees it: an unquoted 2026-12-01T09:00:00Z stays the string the API reads, rather
    than a datetime (which would also turn a timestamp inside a payload into something else)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class Problem:
    line: int
    where: str
    message: str

    def text(self, path: str) -> str:
        return f"{path}:{self.line}: {self.where}: {self.message}"


class FileRefused(Exception):
    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = sorted(problems, key=lambda problem: problem.line)


@dataclass(frozen=True)
class Entry:
    key: str
    body: JobCreate  # named <namespace>/<key>
    node: yaml.MappingNode  # where its fields are, for the API's errors about them

    @property
    def line(self) -> int:
        return _line(self.node)

    def line_of(self, field: str | None) -> int:
        """The line of a field the API named ("target.url"), or the entry's when the file lacks it."""
        steps = [int(step) if step.isdigit() else step for step in (field or "").split(".") if step]
        return _line(_node_at(self.node, steps))


@dataclass(frozen=True)
class LimitEntry:
    """A key's limit as the file sets it (PUT /limits/{key})."""

    key: str
    body: LimitPut
    key_node: yaml.Node
    node: yaml.MappingNode  # its fields

    @property
    def line(self) -> int:
        return _line(self.key_node)

    def line_of(self, field: str | None) -> int:
        """The line of a field the API named, or the key's when the file lacks it."""
        found = _child(self.node, field) if field else None
        return _line(found[0]) if found else self.line


@dataclass(frozen=True)
class SchedulesFile:
    namespace: str
    entries: tuple[Entry, ...]
    limits: tuple[LimitEntry, ...] = ()

    @property
    def prefix(self) -> str:
        return self.namespace + SEPARATOR

    def key_of(self, name: str | None) -> str | None:
        """The key of a job this file's namespace manages by its name, or None for any other job. The
        match is exact: the API's prefix filter folds case, and "billing/eu/x" is not billing's."""
        if name is None or not name.startswith(self.prefix):
            return None
        key = name[len(self.prefix) :]
        return key if KEY.fullmatch(key) else None


def read(path: Path) -> SchedulesFile:
    """The file's namespace and entries; raises FileRefused with every problem found."""
    node, data = _load(path.read_text(encoding="utf-8"))
    problems = list(_duplicated_keys(node, set()))
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise FileRefused([*problems, Problem(1, "file", "must be a mapping with namespace and jobs")])
    problems += _unknown(node, TOP_LEVEL, "top-level key")
    namespace = _namespace(node, data, problems)
    entries: list[Entry] = []
    keys: dict[str, int] = {}
    for index, (item_node, item) in enumerate(_jobs(node, data, problems)):
        key = item.get("key") if isinstance(item, dict) else None
        if isinstance(key, str) and key in keys:
            where = _line(item_node)
            problems.append(Problem(where, key, f"key given twice (first on line {keys[key]})"))
        elif isinstance(key, str):
            keys[key] = _line(item_node)
        entry = _entry(index, item_node, item, namespace or "namespace", problems)
        if entry is not None:
            entries.append(entry)
    limits = list(_limits(node, data, problems))
    if problems or namespace is None:
        raise FileRefused(problems)
    return SchedulesFile(namespace, tuple(entries), tuple(limits))


def _load(text: str) -> tuple[yaml.Node | None, Any]:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise FileRefused([Problem(mark.line + 1 if mark else 1, "YAML", problem)]) from None
    finally:
        loader.dispose()


def _namespace(node: yaml.MappingNode, data: dict[Any, Any], problems: list[Problem]) -> str | None:
    value = data.get("namespace")
    found = _child(node, "namespace")
    line = _line(found[0]) if found else 1
    if not isinstance(value, str) or not NAMESPACE.fullmatch(value):
        problems.append(
            Problem(
                line,
                "namespace",
                f"{'is required' if found is None else 'is ' + repr(value)}: give {NAME_KEY_CHARS - 1}-63 "
                "lower-case letters, digits, '-' or '_' (the jobs are named <namespace>/<key>)",
            )
        )
        return None
    return value


def _jobs(
    node: yaml.MappingNode, data: dict[Any, Any], problems: list[Problem]
) -> Iterator[tuple[yaml.Node, Any]]:
    found = _child(node, "jobs")
    if found is None or not isinstance(found[1], yaml.SequenceNode) or not isinstance(data["jobs"], list):
        line = _line(found[0]) if found else 1
        problems.append(Problem(line, "jobs", "must be a list of entries ([] for none)"))
        return
    yield from zip(found[1].value, data["jobs"], strict=True)


def _limits(node: yaml.MappingNode, data: dict[Any, Any], problems: list[Problem]) -> Iterator[LimitEntry]:
    """`limits:`, a mapping of key to limit; none when the file leaves it out."""
    found = _child(node, "limits")
    if found is None:
        return
    if not isinstance(found[1], yaml.MappingNode) or not isinstance(data["limits"], dict):
        problems.append(
            Problem(_line(found[0]), "limits", "must be a mapping of limit key to limit ({} for none)")
        )
        return
    for key_node, value_node in found[1].value:
        key = key_node.value
        label = f"limits.{key}"
        if not isinstance(key, str) or not re.fullmatch(LIMIT_KEY_PATTERN, key):
            problems.append(Problem(_line(key_node), label, "give 1-128 characters of A-Z a-z 0-9 . _ : / -"))
            continue
        value = data["limits"].get(key)
        if not isinstance(value, dict) or not isinstance(value_node, yaml.MappingNode):
            problems.append(
                Problem(_line(key_node), label, "must be a mapping: max_concurrent, per_second, burst")
            )
            continue
        found_here = list(_unknown(value_node, LIMIT_FIELDS, "field", label))
        body: LimitPut | None = None
        try:
            body = LimitPut.model_validate(value)
        except ValidationError as exc:
            # An unknown field written in the entry is reported above, with what it may have meant.
            errors = [
                error
                for error in exc.errors()
                if error["type"] != "extra_forbidden" or _child(value_node, error["loc"][0]) is None
            ]
            found_here += [_limit_problem(key_node, value_node, label, error) for error in errors]
        problems += found_here
        if body is not None and not found_here:
            yield LimitEntry(key, body, key_node, value_node)


def _limit_problem(key_node: yaml.Node, node: yaml.MappingNode, label: str, error: ErrorDetails) -> Problem:
    loc = tuple(error["loc"])
    if not loc:  # the limit as a whole: neither bound, or a burst without a rate
        return Problem(_line(key_node), label, error["msg"].removeprefix("Value error, "))
    return Problem(_line(_node_at(node, loc)), f"{label}: {loc[0]}", error["msg"])


def _entry(index: int, node: yaml.Node, item: Any, namespace: str, problems: list[Problem]) -> Entry | None:
    label = f"jobs[{index}]"
    if not isinstance(item, dict) or not isinstance(node, yaml.MappingNode):
        problems.append(Problem(_line(node), label, "must be a mapping: a key, a target and a schedule"))
        return None
    found: list[Problem] = []
    key = item.get("key")
    if not isinstance(key, str) or not KEY.fullmatch(key):
        what = "is required" if key is None else f"is {key!r}"
        rule = "1-128 letters, digits, '.', '_' or '-', starting with a letter or a digit"
        found.append(Problem(_line(node), f"{label}.key", f"{what}: give {rule}"))
        key = None
    else:
        label = key
    if "name" in item:
        where = _line(_node_at(node, ("name",)))
        found.append(Problem(where, f"{label}: name", f"apply names the job {namespace}/<key>: leave it out"))
    found += _unknown(node, (*ENTRY_FIELDS, "name"), "field", label)
    fields = {name: value for name, value in item.items() if name in ENTRY_FIELDS and name != "key"}
    found += _secrets(node, label, fields)
    found += _route_rules(node, label, fields)
    body = _validated(node, label, fields, f"{namespace}{SEPARATOR}{key or 'key'}", found)
    problems += found
    return Entry(key, body, node) if body is not None and key is not None and not found else None


def _validated(
    node: yaml.MappingNode, label: str, fields: dict[str, Any], name: str, problems: list[Problem]
) -> JobCreate | None:
    if fields.get("schedule") is None and fields.get("run_at") is None:
        why = "give schedule (recurring) or run_at (a one-off): without either it would run at every apply"
        problems.append(Problem(_line(node), label, why))
    try:
        return JobCreate.model_validate({**fields, "name": name})
    except ValidationError as exc:
        problems += [_pydantic_problem(node, label, fields, error) for error in exc.errors()]
        return None


def _pydantic_problem(node: yaml.MappingNode, label: str, fields: Any, error: ErrorDetails) -> Problem:
    loc = tuple(error["loc"])
    if loc[:1] == ("name",):  # the name is the namespace and the key
        return Problem(_line(node), f"{label}: key", f"makes the job's name, which {error['msg'].lower()}")
    where = field_name(loc, fields) or ""
    message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
    return Problem(_line(_node_at(node, loc)), f"{label}: {where}" if where else label, message)


# The alert route's options: (what each needs on_dead for, what only a recurring job has).
ROUTE_OPTIONS = {
    "on_failure_streak": ("narrows what on_dead hears", "counts dead occurrences in a row"),
    "alert_on_missed": ("sends its notices to on_dead", "tells of instants of a schedule passed over"),
}


def _route_rules(node: yaml.MappingNode, label: str, fields: Mapping[str, Any]) -> Iterator[Problem]:
    """What the API refuses about the alert route's options (docs/api.md, "Alert route"), named at
    their line before anything changes rather than by the API once other entries were applied."""
    schedule = fields.get("schedule")
    if schedule is None:
        one_off = fields.get("run_at") is not None
    else:
        one_off = str(schedule).strip().startswith("at(")
    streak = fields.get("on_failure_streak")
    given = {
        "on_failure_streak": isinstance(streak, int) and not isinstance(streak, bool),
        "alert_on_missed": fields.get("alert_on_missed") is True,
    }
    for option, (route, recurring) in ROUTE_OPTIONS.items():
        if not given[option]:
            continue
        where = _line(_node_at(node, (option,)))
        if fields.get("on_dead") is None:
            yield Problem(where, f"{label}: {option}", f"{route}: give on_dead too, or leave {option} out")
        elif one_off:
            why = f"{recurring}, which only a recurring job has: give a schedule, or leave {option} out"
            yield Problem(where, f"{label}: {option}", why)


def _secrets(node: yaml.MappingNode, label: str, fields: Mapping[str, Any]) -> Iterator[Problem]:
    """A header value other than a reference is answered masked, and so is a URL's query: apply could
    never compare them with the file, and a reviewed file is no place for a secret anyway."""
    for route in ROUTES:
        target = fields.get(route)
        if not isinstance(target, dict):
            continue
        headers = target.get("headers")
        for header, value in (headers if isinstance(headers, dict) else {}).items():
            if str(header).lower() in SHOWN_HEADERS or (isinstance(value, dict) and "secret" in value):
                continue
            where = (route, "headers", header)
            yield Problem(
                _line(_node_at(node, where)),
                f"{label}: {'.'.join(map(str, where))}",
                f"the API answers this header's value as {SECRET_MASK!r}, so a file cannot hold it inline: "
                'give a reference {"secret": "<Secrets Manager secret ARN or SSM parameter ARN>"} '
                f"(only {', '.join(sorted(SHOWN_HEADERS))} may be written out)",
            )
        url = target.get("url")
        if isinstance(url, str) and urlsplit(url).query:
            yield Problem(
                _line(_node_at(node, (route, "url"))),
                f"{label}: {route}.url",
                f"the API answers a URL's query values as {SECRET_MASK!r}, so apply cannot compare them: "
                "put the values in the path or the payload, or a secret in a header as a reference",
            )


def _unknown(node: yaml.MappingNode, allowed: Sequence[str], what: str, label: str = "") -> Iterator[Problem]:
    for key_node, _ in node.value:
        name = key_node.value
        if key_node.tag == _MERGE or name in allowed:
            continue
        close = difflib.get_close_matches(str(name), allowed, n=1)
        hint = f" (did you mean {close[0]}?)" if close else f"; one of {', '.join(allowed)}"
        where = f"{label}: {name}" if label else str(name)
        yield Problem(_line(key_node), where, f"unknown {what}{hint}")


def _duplicated_keys(node: yaml.Node | None, seen: set[int]) -> Iterator[Problem]:
    """A mapping that names a key twice: YAML keeps the last silently, so a reviewer reads the other."""
    if node is None or id(node) in seen:  # an alias names a node already checked
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE and key_node.value in lines:
                where = str(key_node.value)
                yield Problem(_line(key_node), where, f"given twice (first on line {lines[key_node.value]})")
            lines.setdefault(key_node.value, _line(key_node))
            yield from _duplicated_keys(value_node, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _duplicated_keys(item, seen)


def _node_at(node: yaml.Node, loc: Sequence[Any]) -> yaml.Node:
    """The key of the deepest field of the file on the path of an error: a union's tag names a branch
    of the model, not a field, and is skipped; a missing field is shown at its parent's key."""
    at = node
    for step in loc:
        found = _child(node, step)
        if found is not None:
            at, node = found
    return at


def _child(node: yaml.Node, step: Any) -> tuple[yaml.Node, yaml.Node] | None:
    """(key node, value node) of a mapping's key, or (item, item) of a sequence's index."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if key_node.value == str(step):
                return key_node, value_node
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
        item: yaml.Node = node.value[step]
        return item, item
    return None


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1
