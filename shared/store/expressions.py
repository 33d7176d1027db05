"""Builds UpdateItem requests from plain values and named condition fragments.

Conditions are written with `#attribute` and `:value` placeholders, as Powertools' idempotency store
does, so each state change reads as the rule it enforces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from shared.store.items import serialize

# Named condition fragments, combined by the store's state changes.
NOT_EXISTS = "attribute_not_exists(#pk)"
DUE_UNCHANGED = "#due_key = :seen_due_key"
IS_WAITING = "#status IN (:pending, :failed)"
IS_IN_FLIGHT = "#status IN (:queued, :running)"
IS_QUEUED = "#status = :queued"
IS_RUNNING = "#status = :running"
LEASE_EXPIRED = "#lease_until < :now"
HOLDS_TOKEN = "#token = :token"
AT_VERSION = "#version = :version"

_NAME = re.compile(r"#(\w+)")
_VALUE = re.compile(r":(\w+)")


def all_of(*fragments: str) -> str:
    return " AND ".join(f"({fragment})" for fragment in fragments)


@dataclass
class Change:
    """The SET and REMOVE parts of one UpdateItem, plus the values its condition refers to."""

    sets: dict[str, Any] = field(default_factory=dict)
    removes: set[str] = field(default_factory=set)
    increments: set[str] = field(default_factory=set)
    condition_values: dict[str, Any] = field(default_factory=dict)

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
        expression = "SET " + ", ".join(assignments)
        if self.removes:
            expression += " REMOVE " + ", ".join(f"#{name}" for name in sorted(self.removes))
        text = f"{expression} {condition}"
        values = {f"set_{name}": value for name, value in self.sets.items()}
        values.update({name.lstrip(":"): v for name, v in self.condition_values.items()}, zero=0, one=1)
        used_values = set(_VALUE.findall(text))
        return {
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {f"#{name}": name for name in set(_NAME.findall(text))},
            "ExpressionAttributeValues": {
                f":{name}": v for name, v in serialize(values).items() if name in used_values
            },
        }
