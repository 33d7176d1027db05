"""The scale model's stand-in for concurrent.futures: a burst of submits runs side by side, up to
the pool's maximum, as threads would."""

from __future__ import annotations

from bench.scale.runtime import GreenExecutor, Sim, green


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
