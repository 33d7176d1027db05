"""Python handlers of one's own in the deployed worker (docs/handlers.md): `-c sundial:handlers=my_package`.

Each module named is found as `python` would find it from the directory `cdk` runs in, and its
top-level package (or the module alone) is copied into the functions' code asset beside the `sundial` package;
the API and the worker import the modules at cold start from the variable SUNDIAL_HANDLERS.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

HANDLERS_KEY = "sundial:handlers"
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
# The asset's own top-level packages: a handler package of the same name would replace them.
_TAKEN = frozenset({"sundial"})


def checked_modules(modules: Sequence[str]) -> tuple[str, ...]:
    """Raises ValueError naming the context key for a name that is not a module path."""
    for module in modules:
        if not _MODULE.fullmatch(module):
            raise ValueError(f"context {HANDLERS_KEY}: {module!r} is not a module name such as my_package")
        if module.split(".")[0] in _TAKEN:
            raise ValueError(f"context {HANDLERS_KEY}: {module!r} is inside Sundial's own packages")
    return tuple(modules)


def handler_sources(modules: Sequence[str], search: Sequence[str] | None = None) -> tuple[Path, ...]:
    """The package directory or module file that holds each module's top level, found on `search`
    (default: the working directory, then this interpreter's path). Raises ValueError for a
    module that is not there."""
    where = list(search) if search is not None else [os.getcwd(), *sys.path]
    found: dict[str, Path] = {}
    for module in modules:
        top = module.split(".")[0]
        spec = importlib.machinery.PathFinder.find_spec(top, where)
        if spec is None or (spec.origin is None and not spec.submodule_search_locations):
            raise ValueError(
                f"context {HANDLERS_KEY}: module {top!r} is not found from {where[0]} or the Python path"
            )
        locations = list(spec.submodule_search_locations or [])
        found[top] = Path(locations[0]) if locations else Path(str(spec.origin))
    return tuple(found.values())
