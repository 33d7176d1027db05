"""Builds UpdateItem requests from plain values and named condition fragments.

Conditions are written with `#attribute` and `:value` placeholders, as Powertools' idempotency store
does, so each state change reads as the rule it enforces.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sundial.contract.vocabulary import JobStatus
from sundial.shared.lifecycle import Guard
from sundial.shared.store.items import serialize

# Named condition fragments: each guard of the transition table, and the fence's cheap variant.
NOT_EXISTS = "attribute_not_exists(#pk)"
GUARDS = {
    Guard.ABSENT: NOT_EXISTS,
    Guard.DUE_UNCHANGED: "#due_key = :seen_due_key",
    Guard.LEASE_EXPIRED: "#lease_until < :now",
    Guard.TOKEN: "#token = :token",
    Guard.REVISION: "#revision = :revision",
    Guard.VERSION: "#version = :version",
}
# A fence that finds this much lease left leaves the lease (and the index row) as they are.
LEASE_LASTS = "#lease_until >= :lease_needed"
# A fence that takes a slot keeps the lease only as the slot's end, so it needs that very lease.
LEASE_IS_KEPT = "#lease_until = :kept_lease"

_NAME = re.compile(r"#(\w+)")
_VALUE = re.compile(r":(\w+)")


def all_of(*fragments: str) -> str:
    return " AND ".join(f"({fragment})" for fragment in fragments)


def status_in(statuses: Iterable[JobStatus]) -> tuple[str, dict[str, str]]:
    """`#status IN (...)` over the given statuses, with the values it refers to."""
    values = {f":is_{status.value}": status.value for status in sorted(statuses)}
    return f"#status IN ({', '.join(values)})", values


def new_write_id() -> str:
    return secrets.token_hex(8)


def repeatable_write_id(*parts: str) -> str:
    """The id of a write that may be built again and sent again after an error: built from the same
    parts it has the same id, so a repeat finds its own earlier try applied, not a stranger's write."""
    return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).hexdigest()


@dataclass
class Change:
    """The SET and REMOVE parts of one UpdateItem, plus the values its condition refers to.

    Every write stamps its own `write_id`: when DynamoDB applied a write but its answer was lost, the
    SDK's retry fails its condition, and the item that comes back shows whether the write is there.
    """

    sets: dict[str, Any] = field(default_factory=dict)
    removes: set[str] = field(default_factory=set)
    increments: set[str] = field(default_factory=set)
    condition_values: dict[str, Any] = field(default_factory=dict)
    write_id: str = field(default_factory=new_write_id)
    # Attribute values that this write alone sets, and that later writes leave as they are (a
    # settle's last run): they show the write was applied even when a later one replaced write_id.
    proof: dict[str, str] = field(default_factory=dict)
    # Items put in the same transaction whatever else it holds (the skip ledger's stretches)
    records: list[dict[str, Any]] = field(default_factory=list)

    def applied_in(self, found: dict[str, Any] | None) -> bool:
        """True when the item `found` shows this write: its write_id, or its proof."""
        if not found:
            return False
        if found.get("write_id", {}).get("S") == self.write_id:
            return True
        return bool(self.proof) and all(found.get(k, {}).get("S") == v for k, v in self.proof.items())

    def set(self, **values: Any) -> Change:
        for name, value in values.items():
            if value is None:
                self.removes.add(name)
                self.sets.pop(name, None)
            else:
                self.sets[name] = value
                self.removes.discard(name)
        return self

    def remove(self, *names: str) -> Change:
        for name in names:
            self.sets.pop(name, None)
            self.removes.add(name)
        return self

    def increment(self, name: str) -> Change:
        self.increments.add(name)
        return self

    def request(self, condition: str) -> dict[str, Any]:
        """The UpdateItem keyword arguments; `version` always advances, for optimistic updates."""
        assignments = [f"#{name} = :set_{name}" for name in self.sets]
        assignments += [f"#{name} = #{name} + :one" for name in sorted(self.increments)]
        assignments.append("#version = if_not_exists(#version, :zero) + :one")
        assignments.append("#write_id = :write_id")
        expression = "SET " + ", ".join(assignments)
        if self.removes:
            expression += " REMOVE " + ", ".join(f"#{name}" for name in sorted(self.removes))
        text = f"{expression} {condition}"
        values = {f"set_{name}": value for name, value in self.sets.items()}
        values.update({name.lstrip(":"): v for name, v in self.condition_values.items()}, zero=0, one=1)
        values["write_id"] = self.write_id
        used_values = set(_VALUE.findall(text))
        return {
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {f"#{name}": name for name in set(_NAME.findall(text))},
            "ExpressionAttributeValues": {
                f":{name}": v for name, v in serialize(values).items() if name in used_values
            },
        }
