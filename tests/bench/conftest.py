"""Fixtures of the bench's own tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from bench.harness import Aws
from sundial.local_stack.emulator import Emulator


@pytest.fixture(scope="module")
def bench_aws(emulator: Emulator) -> Iterator[Callable[[str], Aws]]:
    """The bench's Aws on the tests' emulator, under a prefix. Aws points this process at the
    emulator as the local stack does, metrics off included: the environment is put back after the
    module, since the tests after it publish and read metrics."""
    environment = dict(os.environ)
    yield lambda prefix: Aws(emulator, prefix)  # type: ignore[arg-type]  # the tests' emulator, in this process
    os.environ.clear()
    os.environ.update(environment)
