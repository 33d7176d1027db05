"""DynamoDB's condition and update expressions, as far as Sundial's store writes them, evaluated
natively on items in DynamoDB's JSON form: comparisons (= <> < <= > >=), IN, BETWEEN, AND, OR, NOT,
parentheses, attribute_exists, attribute_not_exists, begins_with and size in conditions; SET (a value,
a sum or difference, if_not_exists), REMOVE and ADD of a number in updates.

An expression is parsed once and kept: the store sends the same few texts again and again. Anything
outside this grammar raises Unsupported, and the caller answers through moto instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from typing import Any

Item = dict[str, Any]
Values = dict[str, Any]
Names = dict[str, str]
Condition = Callable[[Item, Names, Values], bool]
Operand = Callable[[Item, Names, Values], Any]

# A document path one map deep (`#holders.#job`) is one token: the store writes no deeper path.
_TOKEN = re.compile(r"\s*(<>|<=|>=|[=<>(),+-]|#\w+\.#\w+|[#:]?\w+)")


class Unsupported(Exception):
    """An expression or request outside what this module answers."""


class Invalid(Exception):
    """An expression DynamoDB would refuse (ValidationException)."""


def _tokens(text: str) -> list[str]:
    tokens, at = [], 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            if text[at:].strip():
                raise Unsupported(text)
            break
        tokens.append(match.group(1))
        at = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token.upper() != expected):
            raise Unsupported(f"expected {expected} at {token!r}")
        self.at += 1
        return token

    def done(self) -> bool:
        return self.at == len(self.tokens)

    # --- conditions -------------------------------------------------------------------------------

    def condition(self) -> Condition:
        left = self._and()
        while (self.peek() or "").upper() == "OR":
            self.take()
            left = _or(left, self._and())
        return left

    def _and(self) -> Condition:
        left = self._not()
        while (self.peek() or "").upper() == "AND":
            self.take()
            left = _and(left, self._not())
        return left

    def _not(self) -> Condition:
        if (self.peek() or "").upper() == "NOT":
            self.take()
            inner = self._not()
            return lambda item, names, values: not inner(item, names, values)
        return self._primary()

    def _primary(self) -> Condition:
        if self.peek() == "(":
            self.take()
            inner = self.condition()
            self.take(")")
            return inner
        token = self.peek() or ""
        if token in ("attribute_exists", "attribute_not_exists", "begins_with"):
            return self._function()
        left = self.operand()
        word = (self.peek() or "").upper()
        if word == "IN":
            self.take()
            self.take("(")
            choices = [self.operand()]
            while self.peek() == ",":
                self.take()
                choices.append(self.operand())
            self.take(")")
            return _in(left, choices)
        if word == "BETWEEN":
            self.take()
            low = self.operand()
            self.take("AND")
            high = self.operand()
            return lambda i, n, v: (
                _compare(left(i, n, v), "<=", high(i, n, v)) and _compare(low(i, n, v), "<=", left(i, n, v))
            )
        op = self.take()
        if op not in ("=", "<>", "<", "<=", ">", ">="):
            raise Unsupported(op)
        right = self.operand()
        return lambda i, n, v: _compare(left(i, n, v), op, right(i, n, v))

    def _function(self) -> Condition:
        name = self.take()
        self.take("(")
        path = self.operand()
        if name == "begins_with":
            self.take(",")
            prefix = self.operand()
            self.take(")")
            return lambda i, n, v: _begins(path(i, n, v), prefix(i, n, v))
        self.take(")")
        if name == "attribute_exists":
            return lambda i, n, v: path(i, n, v) is not None
        return lambda i, n, v: path(i, n, v) is None

    def operand(self) -> Operand:
        token = self.take()
        if token == "size":
            self.take("(")
            path = self.operand()
            self.take(")")
            return lambda item, names, values: _size(path(item, names, values))
        if token.startswith("#") and "." in token:
            return lambda item, names, values: _in_map(item, names, token)
        if token.startswith("#"):
            return lambda item, names, values: item.get(_name(names, token))
        if token.startswith(":"):
            return lambda item, names, values: _value(values, token)
        raise Unsupported(token)

    # --- updates ------------------------------------------------------------------------------------

    def update(self) -> list[Callable[[Item, Item, Names, Values], None]]:
        steps: list[Callable[[Item, Item, Names, Values], None]] = []
        while not self.done():
            clause = self.take().upper()
            if clause == "SET":
                steps += self._list(self._assignment)
            elif clause == "REMOVE":
                steps += self._list(self._removal)
            elif clause == "ADD":
                steps += self._list(self._addition)
            else:
                raise Unsupported(clause)
        return steps

    def _list(self, one: Callable[[], Any]) -> list[Any]:
        found = [one()]
        while self.peek() == ",":
            self.take()
            found.append(one())
        return found

    def _assignment(self) -> Callable[[Item, Item, Names, Values], None]:
        target = self.take()
        if not target.startswith("#"):
            raise Unsupported(target)
        self.take("=")
        value = self._update_value()
        if self.peek() in ("+", "-"):
            sign = self.take()
            other = self._update_value()
            compute: Operand = lambda i, n, v: _arithmetic(value(i, n, v), sign, other(i, n, v))  # noqa: E731
        else:
            compute = value

        def assign(old: Item, new: Item, names: Names, values: Values) -> None:
            if "." in target:
                outer, inner = _path(names, target)
                new[outer] = {"M": {**_map(new, outer), inner: compute(old, names, values)}}
            else:
                new[_name(names, target)] = compute(old, names, values)

        return assign

    def _update_value(self) -> Operand:
        if self.peek() == "if_not_exists":
            self.take()
            self.take("(")
            path = self.operand()
            self.take(",")
            default = self.operand()
            self.take(")")

            def either(i: Item, n: Names, v: Values) -> Any:
                found = path(i, n, v)
                return default(i, n, v) if found is None else found

            return either
        return self.operand()

    def _addition(self) -> Callable[[Item, Item, Names, Values], None]:
        """ADD of a number to a number attribute (an absent one counts as 0); sets are not modelled."""
        target = self.take()
        if not target.startswith("#") or "." in target:
            raise Unsupported(target)
        value = self.operand()

        def add(old: Item, new: Item, names: Names, values: Values) -> None:
            amount = value(old, names, values)
            if amount is None or "N" not in amount:
                raise Unsupported("ADD of anything but a number")
            found = old.get(_name(names, target))
            new[_name(names, target)] = amount if found is None else _arithmetic(found, "+", amount)

        return add

    def _removal(self) -> Callable[[Item, Item, Names, Values], None]:
        target = self.take()
        if not target.startswith("#"):
            raise Unsupported(target)

        def remove(old: Item, new: Item, names: Names, values: Values) -> None:
            if "." in target:
                outer, inner = _path(names, target)
                if outer in new:
                    new[outer] = {"M": {k: v for k, v in _map(new, outer).items() if k != inner}}
            else:
                new.pop(_name(names, target), None)

        return remove


@lru_cache(maxsize=4096)
def condition(text: str) -> Condition:
    parser = _Parser(text)
    parsed = parser.condition()
    if not parser.done():
        raise Unsupported(text)
    return parsed


@lru_cache(maxsize=4096)
def update(text: str) -> list[Callable[[Item, Item, Names, Values], None]]:
    return _Parser(text).update()


def apply_update(text: str, item: Item, names: Names, values: Values) -> Item:
    """The item after the update; every right-hand side reads the item as it was (DynamoDB's rule)."""
    new = dict(item)
    for step in update(text):
        step(item, new, names, values)
    return new


def used_placeholders(*texts: str | None) -> set[str]:
    return set().union(*(_placeholders_in(text) for text in texts if text))


@lru_cache(maxsize=4096)
def _placeholders_in(text: str) -> frozenset[str]:
    return frozenset(part for token in _tokens(text) if token[0] in "#:" for part in token.split("."))


def _path(names: Names, token: str) -> tuple[str, str]:
    outer, inner = token.split(".")
    return _name(names, outer), _name(names, inner)


def _map(item: Item, name: str) -> dict[str, Any]:
    """A map attribute's members; DynamoDB refuses a path into an attribute that is not a map."""
    found = item.get(name)
    if found is None or "M" not in found:
        raise Invalid("The document path provided in the update expression is invalid for update")
    members: dict[str, Any] = found["M"]
    return members


def _in_map(item: Item, names: Names, token: str) -> Any:
    outer, inner = _path(names, token)
    found = item.get(outer)
    if found is None or "M" not in found:
        return None
    return found["M"].get(inner)


def _name(names: Names, token: str) -> str:
    if token not in names:
        raise Invalid(f"An expression attribute name used in the document path is not defined: {token}")
    return names[token]


def _value(values: Values, token: str) -> Any:
    if token not in values:
        raise Invalid(f"An expression attribute value used in expression is not defined: {token}")
    return values[token]


def _or(left: Condition, right: Condition) -> Condition:
    return lambda i, n, v: left(i, n, v) or right(i, n, v)


def _and(left: Condition, right: Condition) -> Condition:
    return lambda i, n, v: left(i, n, v) and right(i, n, v)


def _in(left: Operand, choices: list[Operand]) -> Condition:
    def inside(i: Item, n: Names, v: Values) -> bool:
        found = left(i, n, v)
        return found is not None and any(found == choice(i, n, v) for choice in choices)

    return inside


def _key(value: Any) -> tuple[str, Any]:
    (kind, raw), *_ = value.items()
    return kind, Decimal(raw) if kind == "N" else raw


def _size(value: Any) -> Any:
    """size(): the entries of a map or list, the characters of a string; None (every comparison
    false) for a missing attribute or any other type."""
    if value is None:
        return None
    kind, inner = next(iter(value.items()))
    if kind in ("M", "L", "S"):
        return {"N": str(len(inner))}
    return None


def _compare(left: Any, op: str, right: Any) -> bool:
    if left is None or right is None:
        return False
    (left_kind, a), (right_kind, b) = _key(left), _key(right)
    if left_kind != right_kind:
        return op == "<>"
    if op == "=":
        return bool(a == b)
    if op == "<>":
        return bool(a != b)
    if left_kind not in ("N", "S"):
        raise Invalid(f"Invalid conditional operator {op} for {left_kind}")
    if left_kind == "S":
        a, b = a.encode(), b.encode()  # DynamoDB orders strings by their UTF-8 bytes
    return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def _begins(value: Any, prefix: Any) -> bool:
    if value is None or prefix is None or "S" not in value or "S" not in prefix:
        return False
    return bool(value["S"].startswith(prefix["S"]))


def _arithmetic(left: Any, sign: str, right: Any) -> Any:
    if left is None or right is None or "N" not in left or "N" not in right:
        raise Invalid("An operand in the update expression has an incorrect data type")
    total = Decimal(left["N"]) + (Decimal(right["N"]) if sign == "+" else -Decimal(right["N"]))
    return {"N": _number(total)}


def _number(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if "." not in text else text.rstrip("0").rstrip(".")
