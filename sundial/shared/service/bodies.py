"""The shape of a JSON request body, checked on its text before anything parses it.

A parser recurses once per nesting level and turns every digit of a number into an integer, so a
body of a few kilobytes can exhaust the stack or the integer conversion limit: both are refused
first, naming `payload` when that is where they are, else `body`. The text is scanned once, for the
few tokens that matter; what is not valid JSON is left for the parser to say.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sundial.shared.errors import InvalidInput

MAX_DEPTH = 64  # arrays and objects inside each other: in the payload, or the body's own
MAX_NUMBER_DIGITS = 100

PAYLOAD_FIELD, BODY_FIELD = "payload", "body"
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|-?[0-9][0-9.eE+-]*|-?Infinity|NaN', re.DOTALL)


def check_json_shape(text: str) -> None:
    """Raises InvalidInput (field "payload" or "body") for nesting deeper than MAX_DEPTH, a number of
    more than MAX_NUMBER_DIGITS digits or beyond a float's range, or NaN and Infinity, which JSON lacks."""
    depth, limit = 0, MAX_DEPTH
    last_key = ""  # the last string at the body's top level: the key of the value that follows
    member = ""  # the top-level member the scan is in
    for match in _TOKENS.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            depth += 1
            if depth == 2:
                member = last_key
                limit = MAX_DEPTH + 1 if _is_payload(member) else MAX_DEPTH  # the payload's own levels
            if depth > limit:
                raise _refused(member, f"nests deeper than {MAX_DEPTH} arrays and objects")
        elif first in "]}":
            depth -= 1
        elif first == '"':
            if depth == 1:
                last_key = member = token
        else:
            _check_number(token, member if depth > 1 else last_key)


def _check_number(token: str, member: str) -> None:
    if token.lstrip("-")[:1] in ("I", "N"):
        raise _refused(member, f"holds {token}, which is not a JSON number")
    digits = sum(ch.isdigit() for ch in token) if len(token) > MAX_NUMBER_DIGITS else 0
    if digits > MAX_NUMBER_DIGITS:
        raise _refused(member, f"holds a number of {digits} digits; at most {MAX_NUMBER_DIGITS} are kept")
    if "e" in token or "E" in token:
        try:
            finite = math.isfinite(float(token))
        except ValueError:
            return  # not a number at all: the parser says so
        if not finite:
            raise _refused(member, f"holds the number {token[:40]}, beyond the range of a number")


def _refused(member: str, problem: str) -> InvalidInput:
    field = PAYLOAD_FIELD if _is_payload(member) else BODY_FIELD
    return InvalidInput(f"{field} {problem}", field=field)


def _is_payload(member: str) -> bool:
    if member == '"payload"':
        return True
    try:
        return member.startswith('"') and json.loads(member) == PAYLOAD_FIELD  # an escaped spelling
    except ValueError:
        return False


# Where Powertools reports a request error; the field is what follows it.
_SOURCES = ("body", "query", "header", "path", "cookie")


def field_name(loc: tuple[Any, ...], body: Any) -> str | None:
    """("body", "target", "http", "url") → "target.url": a union's tag is not a field the client sent."""
    parts: list[str] = []
    node = body
    for step in loc[1:] if loc[:1] in {(s,) for s in _SOURCES} else loc:
        if isinstance(node, dict) and step not in node and node.get("type") == step:
            continue  # the discriminator's value, which pydantic adds to the location
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
        node = node.get(step) if isinstance(node, dict) else _item(node, step)
    return "".join(parts).lstrip(".") or None


def _item(node: Any, step: Any) -> Any:
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None
