"""What `sundial apply` changes, decided from the schedules file and the namespace's jobs as the API
answers them, and the diff it prints. Pure: no call to the API, so every rule is tested as a table."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sundial.commands.schedules_file import Entry, LimitEntry, SchedulesFile
from sundial.contract.jobs import JobCreate, JobUpdate, JobView
from sundial.contract.limits import LimitView
from sundial.contract.vocabulary import JobStatus

# What a PATCH changes and the job answers (but the name, which is the key's); a new field of both
# joins the comparison by itself.
PATCHED_FIELDS = tuple(
    name for name in JobUpdate.model_fields if name in JobView.model_fields and name != "name"
)
# What only a create sets (the target): a change of one needs a new job.
REPLACED_FIELDS = tuple(
    name for name in JobCreate.model_fields if name not in JobUpdate.model_fields and name != "name"
)
INSTANT_FIELDS = frozenset({"run_at", "start_at", "end_at"})
# A PATCH cannot send these as null: the other one of the pair, sent instead, clears it (docs/api.md).
EXCLUSIVE_TIMING = frozenset({"schedule", "run_at"})
SHOWN_VALUE_CHARS = 120
LIMIT_FIELDS = ("max_concurrent", "per_second", "burst")


@dataclass(frozen=True)
class Change:
    field: str
    old: Any  # as the API answered it (JSON)
    new: Any  # as the file asks (JSON, with the API's defaults for what it leaves out)


@dataclass(frozen=True)
class Create:
    entry: Entry
    idempotency_key: str


@dataclass(frozen=True)
class Update:
    entry: Entry
    job: JobView
    changes: tuple[Change, ...]

    def patch(self) -> dict[str, Any]:
        """The PATCH body: only the fields that differ."""
        return {c.field: c.new for c in self.changes if not (c.field in EXCLUSIVE_TIMING and c.new is None)}


@dataclass(frozen=True)
class Replace:
    """A target change: a new job, then the old one cancelled."""

    entry: Entry
    job: JobView
    changes: tuple[Change, ...]
    idempotency_key: str


@dataclass(frozen=True)
class Stray:
    """A live job of the namespace whose key the file does not list."""

    key: str
    job: JobView


@dataclass(frozen=True)
class SetLimit:
    """A key's limit to put: `old` is None when the key has none yet."""

    entry: LimitEntry
    old: LimitView | None
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Plan:
    namespace: str
    creates: tuple[Create, ...]
    updates: tuple[Update, ...]
    replaces: tuple[Replace, ...]
    strays: tuple[Stray, ...]
    unchanged: tuple[Entry, ...]
    prune: bool
    limits: tuple[SetLimit, ...] = ()

    @property
    def cancels(self) -> tuple[Stray, ...]:
        return self.strays if self.prune else ()

    @property
    def changes(self) -> int:
        jobs = len(self.creates) + len(self.updates) + len(self.replaces) + len(self.cancels)
        return jobs + len(self.limits)


class DuplicateJobs(Exception):
    """Two live jobs carry one managed name: which one the file means is for a person to say."""

    def __init__(self, entry: Entry, name: str, ids: list[str]) -> None:
        super().__init__(
            f"key '{entry.key}' (line {entry.line}): live jobs {' and '.join(ids)} are both named '{name}', "
            f"so apply cannot tell which one the file manages. Cancel the one it should not "
            f"(`sundial jobs cancel <id>`; one cancelled while its attempt runs ends when the attempt does) "
            f"and apply again; nothing was changed"
        )


def plan(
    file: SchedulesFile,
    jobs: Iterable[JobView],
    *,
    prune: bool,
    limits: Mapping[str, LimitView | None] | None = None,
) -> Plan:
    """Raises DuplicateJobs when two live jobs carry the name of one of the file's keys. `limits`
    holds the limit of each key the file sets, as the API answered it (None: the key has none)."""
    live, last_cancelled = _managed(file, jobs)
    creates: list[Create] = []
    updates: list[Update] = []
    replaces: list[Replace] = []
    unchanged: list[Entry] = []
    for entry in file.entries:
        found = live.pop(entry.key, [])
        if len(found) > 1:
            raise DuplicateJobs(entry, entry.body.name or "", sorted(job.id for job in found))
        key = idempotency_key(file.namespace, entry, last_cancelled.get(entry.key))
        if not found:
            creates.append(Create(entry, key))
            continue
        job, changes = found[0], tuple(differences(entry.body, found[0]))
        if any(change.field in REPLACED_FIELDS for change in changes):
            replaces.append(Replace(entry, job, changes, key))
        elif changes:
            updates.append(Update(entry, job, changes))
        else:
            unchanged.append(entry)
    strays = tuple(Stray(key, job) for key, found in sorted(live.items()) for job in found)
    return Plan(
        file.namespace,
        tuple(creates),
        tuple(updates),
        tuple(replaces),
        strays,
        tuple(unchanged),
        prune,
        tuple(_limits_to_set(file, limits or {})),
    )


def _limits_to_set(file: SchedulesFile, current: Mapping[str, LimitView | None]) -> Iterator[SetLimit]:
    for entry in file.limits:
        old = current.get(entry.key)
        wanted = {
            "max_concurrent": entry.body.max_concurrent,
            "per_second": entry.body.per_second,
            "burst": entry.body.effective_burst,
        }
        answered = old.model_dump(mode="json") if old is not None else dict.fromkeys(LIMIT_FIELDS)
        # Without a rate the burst bounds nothing, whatever the API answers for it.
        compared = LIMIT_FIELDS if entry.body.per_second is not None else LIMIT_FIELDS[:2]
        changes = tuple(
            Change(name, answered[name], wanted[name])
            for name in compared
            if not _same(name, answered[name], wanted[name])
        )
        if changes:
            yield SetLimit(entry, old, changes)


def _managed(file: SchedulesFile, jobs: Iterable[JobView]) -> tuple[dict[str, list[JobView]], dict[str, str]]:
    """The namespace's live jobs by key, and the newest cancelled job's id of each key."""
    live: dict[str, list[JobView]] = {}
    cancelled: dict[str, str] = {}
    for job in jobs:
        key = file.key_of(job.name)
        if key is None:
            continue
        if job.status is JobStatus.CANCELLED:
            cancelled[key] = max(cancelled.get(key, ""), job.id)  # ULIDs sort by creation
        else:
            live.setdefault(key, []).append(job)
    return live, cancelled


def differences(body: JobCreate, job: JobView) -> Iterator[Change]:
    """The fields whose value in the file (defaults filled in) differs from the job's."""
    wanted = body.model_dump(mode="json")
    answered = job.model_dump(mode="json")
    for field in (*REPLACED_FIELDS, *PATCHED_FIELDS):
        if not _same(field, answered.get(field), wanted.get(field)):
            yield Change(field, answered.get(field), wanted.get(field))


def _same(field: str, old: Any, new: Any) -> bool:
    if field in INSTANT_FIELDS and old is not None and new is not None:
        return datetime.fromisoformat(old) == datetime.fromisoformat(new)  # one instant, any offset
    # As JSON, so that true is not 1 and key order does not count.
    return json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)


def idempotency_key(namespace: str, entry: Entry, last_cancelled: str | None) -> str:
    """The key of the create of an entry: the same for a retry of the same apply (an answer lost, the
    job made), another once the job it made is cancelled (a key reused within 24 hours would answer
    that cancelled job) or the entry changes."""
    material = json.dumps([namespace, entry.key, entry.body.model_dump_json(), last_cancelled or ""])
    return "apply-" + hashlib.sha256(material.encode()).hexdigest()[:48]


def render(plan: Plan, source: str) -> Iterator[str]:
    """The diff, one line at a time: what changes, field by field, then what is left as it is."""
    for limit in plan.limits:
        verb = "+ set limit" if limit.old is None else "~ change limit"
        yield f"{verb} {limit.entry.key} (line {limit.entry.line})"
        yield from _fields(limit.changes)
    for create in plan.creates:
        yield f"+ create {create.entry.key} (line {create.entry.line})"
    for update in plan.updates:
        yield f"~ update {update.entry.key} ({update.job.id}, line {update.entry.line})"
        yield from _fields(update.changes)
    for replace in plan.replaces:
        yield (
            f"± replace {replace.entry.key} ({replace.job.id}, line {replace.entry.line}): a target "
            "change needs a new job; the old one is cancelled once the new one exists"
        )
        yield from _fields(replace.changes)
    for stray in plan.strays:
        if plan.prune:
            yield f"- cancel {stray.key} ({stray.job.id}): not in the file (--prune)"
        else:
            yield f"  {stray.key} ({stray.job.id}): not in the file (kept; --prune cancels)"
    yield _summary(plan, source)


def _summary(plan: Plan, source: str) -> str:
    if not plan.changes:
        return f"no changes: the {len(plan.unchanged)} jobs of namespace '{plan.namespace}' match {source}"
    counts = (
        (len(plan.limits), "limit(s) to set"),
        (len(plan.creates), "to create"),
        (len(plan.updates), "to update"),
        (len(plan.replaces), "to replace"),
        (len(plan.cancels), "to cancel"),
    )
    told = ", ".join(f"{count} {what}" for count, what in counts if count)
    return f"namespace '{plan.namespace}': {told}, {len(plan.unchanged)} unchanged"


def _fields(changes: Iterable[Change]) -> Iterator[str]:
    for change in changes:
        for where, old, new in _leaves(change.field, change.old, change.new):
            yield f"    {where}: {_shown(old)} → {_shown(new)}"


def _leaves(where: str, old: Any, new: Any) -> Iterator[tuple[str, Any, Any]]:
    """A change of an object (a target, a payload) as the changes of its members, so that a new URL
    reads as `target.url: ... → ...` rather than as two long objects."""
    if isinstance(old, dict) and isinstance(new, dict):
        for name in sorted({*old, *new}):
            if not _same("", old.get(name), new.get(name)):
                yield from _leaves(f"{where}.{name}", old.get(name), new.get(name))
    else:
        yield where, old, new


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 1] + "…"
