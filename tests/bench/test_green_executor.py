"""The scale model's stand-in for concurrent.futures: a burst of submits runs side by side, up to
the pool's maximum, as threads would."""

from __future__ import annotations

import re
from pathlib import Path

import sundial.shared.engine
from bench.scale.runtime import GREEN_MODULES, GreenExecutor, Sim, green


def finished_at(workers: int, tasks: int) -> float:
    sim = Sim(0.0)
    ended: list[float] = []

    def burst() -> None:
        pool = GreenExecutor(max_workers=workers)
        for future in [pool.submit(sim.sleep, 1.0) for _ in range(tasks)]:
            future.result()
        ended.append(sim.time())

    with green(sim):
        sim.spawn(burst, at=0.0)
        sim.run()
    return ended[0]


def test_a_burst_of_submits_runs_side_by_side_up_to_the_maximum() -> None:
    assert finished_at(workers=4, tasks=4) == 1.0
    assert finished_at(workers=4, tasks=8) == 2.0
    assert finished_at(workers=1, tasks=3) == 3.0


def test_every_engine_module_that_holds_threading_runs_on_the_green_threads() -> None:
    # A real lock held across a request deadlocks the model: every green task runs in one thread,
    # and the one that waits for the lock blocks the thread the holder needs to go on.
    engine = Path(sundial.shared.engine.__file__).parent
    holding = {
        f"sundial.shared.engine.{path.stem}"
        for path in engine.glob("*.py")
        if re.search(r"^import threading$", path.read_text(), re.MULTILINE)
    }
    assert holding and holding <= set(GREEN_MODULES), holding - set(GREEN_MODULES)
