"""Request bodies given as mappings, validated into the API's models with errors that name the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sundial.client.errors import InvalidInput

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], body: M | Mapping[str, Any]) -> M:
    """The body as the API's model; InvalidInput naming the field (as the API names it) if it is not."""
    if isinstance(body, model):
        return body
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = field_name(first["loc"], body)
        raise InvalidInput(f"{field}: {first['msg']}" if field else first["msg"], field) from None


def field_name(loc: tuple[Any, ...], body: Any) -> str | None:
    """("target", "http", "url") → "target.url": a union's tag is not a field anyone wrote."""
    parts: list[str] = []
    node = body
    for step in loc:
        if isinstance(node, Mapping) and step not in node and node.get("type") == step:
            continue
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
        node = _child(node, step)
    return "".join(parts).lstrip(".") or None


def _child(node: Any, step: Any) -> Any:
    if isinstance(node, Mapping):
        return node.get(step)
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None
