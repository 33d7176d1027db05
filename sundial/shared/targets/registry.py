"""In-process targets: functions registered under a name that a `python` target refers to."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from sundial.shared.errors import InvalidInput
from sundial.shared.targets.errors import TargetError, TargetTimedOut, describe
from sundial.shared.targets.models import Delivery

Handler = Callable[[Delivery], None]
F = TypeVar("F", bound=Handler)

HANDLER_FIELD = "target.handler"
_handlers: dict[str, Handler] = {}


def python_handler(name: str) -> Callable[[F], F]:
    """Registers the decorated function(delivery) -> None as the handler called `name`.

    Raises ValueError when another function already holds the name (re-registering the same
    function, as a module reload does, is allowed).
    """

    def register(function: F) -> F:
        existing = _handlers.get(name)
        if existing is not None and _identity(existing) != _identity(function):
            raise ValueError(f"python handler {name!r} is already registered to {_identity(existing)}")
        _handlers[name] = function
        return function

    return register


def import_handler_modules(modules: Iterable[str]) -> None:
    """Imports each module, whose `@python_handler` functions register themselves as it loads.

    Raises ValueError naming the module when it cannot be imported or registers a name already
    taken.
    """
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ValueError(f"python handler module {module!r} cannot be imported: {exc}") from exc
        except ValueError as exc:
            raise ValueError(f"python handler module {module!r}: {exc}") from exc


def registered_handlers() -> list[str]:
    """The registered names, sorted."""
    return sorted(_handlers)


def check_handler(name: str) -> None:
    """Raises InvalidInput (field "target.handler") when no handler is registered as `name`."""
    if name not in _handlers:
        known = ", ".join(registered_handlers()) or "none"
        raise InvalidInput(f"python handler {name!r} is not registered (registered: {known})", HANDLER_FIELD)


def run_handler(name: str, delivery: Delivery, *, timeout_seconds: float) -> None:
    """Calls the handler.

    Raises TargetError (`TypeName: message`) when it raises or is not registered, and TargetTimedOut
    when it returned or raised after `timeout_seconds`: a handler runs in the worker's own thread
    and cannot be stopped, so its overrun is known only once it ends.
    """
    handler = _handlers.get(name)
    if handler is None:
        raise TargetError(f"python handler {name!r} is not registered")
    started = time.monotonic()
    try:
        handler(delivery)
    except Exception as exc:
        _check_overrun(name, time.monotonic() - started, timeout_seconds, exc)
        raise TargetError(describe(exc)) from exc
    _check_overrun(name, time.monotonic() - started, timeout_seconds, None)


def _check_overrun(name: str, elapsed: float, limit: float, cause: Exception | None) -> None:
    if elapsed > limit:
        raise TargetTimedOut(
            f"python handler {name!r} ran {elapsed:.1f} s, over its {limit:g} s limit"
        ) from cause


def _identity(function: Handler) -> str:
    return f"{function.__module__}.{getattr(function, '__qualname__', repr(function))}"
