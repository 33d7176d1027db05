"""What a listing's filters keep, and which index and partitions a listing of them reads."""

from __future__ import annotations

from dataclasses import dataclass

from sundial.contract.vocabulary import Health, JobStatus
from sundial.shared import constants as c
from sundial.shared.models import Job
from sundial.shared.store import items


@dataclass(frozen=True)
class ListFilter:
    status: str | None = None
    priority: str | None = None
    health: str | None = None
    name_prefix: str | None = None
    name: str | None = None  # a case-insensitive substring: checked on the items, never indexed

    def matches(self, job: Job) -> bool:
        health_ok = self.health is None or (
            job.health.value == self.health or (self.health == Health.FAILING and job.health is Health.DEAD)
        )
        return (
            health_ok
            and (self.status is None or job.status == self.status)
            and (self.priority is None or job.priority == self.priority)
            and (self.name_prefix is None or _folded(job.name).startswith(self.name_prefix.casefold()))
            and (self.name is None or self.name.casefold() in _folded(job.name))
        )


@dataclass(frozen=True)
class Plan:
    """The index a listing reads, its partitions, and whether the index alone decides the filter."""

    index: str
    partitions: tuple[str, ...]
    exact: bool

    @property
    def key_attribute(self) -> str:
        return c.LIST_INDEX_KEYS[self.index]


def plan(wanted: ListFilter, ready: frozenset[str]) -> Plan:
    """The most selective ready index: health, then name prefix, then status, then priority."""
    shards = range(c.LIST_SHARDS)
    choices: list[tuple[str, list[str]]] = []
    dead, failing = Health.DEAD.value, Health.FAILING.value
    if wanted.health in (dead, failing):  # healthy jobs are not in the index
        choices.append((c.HEALTH_INDEX_NAME, [dead] if wanted.health == dead else [failing, dead]))
    if wanted.name_prefix is not None:
        choices.append((c.NAME_INDEX_NAME, [items.name_key(wanted.name_prefix)]))
    if wanted.status in items.INDEXED_STATUSES:
        choices.append((c.STATUS_INDEX_NAME, [wanted.status]))
        # Without the status index, the jobs that are dead or failed are among the unhealthy ones.
        if wanted.status in (JobStatus.DEAD, JobStatus.FAILED):
            health = [dead] if wanted.status == JobStatus.DEAD else [failing, dead]
            choices.append((c.HEALTH_INDEX_NAME, health))
    if wanted.priority is not None and wanted.priority != items.UNINDEXED_PRIORITY:
        choices.append((c.PRIORITY_INDEX_NAME, [wanted.priority]))
    # The name index keys on a prefix of the name; each other index decides its own filter. A status
    # or a priority no index holds (live statuses, succeeded, medium) is checked on the items.
    unindexed_status = wanted.status is not None and wanted.status not in items.INDEXED_STATUSES
    refined = (
        wanted.name is not None
        or wanted.name_prefix is not None
        or wanted.health == Health.OK
        or unindexed_status
        or wanted.priority == items.UNINDEXED_PRIORITY
    )
    for index, values in choices:
        if index in ready:
            partitions = tuple(items.list_partition(value, shard) for value in values for shard in shards)
            exact = index == choices[0][0] and len({name for name, _ in choices}) == 1 and not refined
            return Plan(index, partitions, exact)
    everything = tuple(items.list_partition("JOBS", shard) for shard in shards)
    if c.LIST_INDEX_NAME not in ready:  # jobs written before the index was sharded
        everything += (items.LIST_PK,)
    return Plan(c.LIST_INDEX_NAME, everything, not choices and not refined)


def _folded(name: str | None) -> str:
    return name.casefold() if name is not None else ""
