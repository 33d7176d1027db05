"""Sequences of the model's backfill and window steps, driven by hand: each one's invariants checked
as the search checks them."""

from __future__ import annotations

from tests.model.test_engine_machine import EngineMachine, Env, model_env  # noqa: F401

MINUTE = 60_000


def check(machine: EngineMachine) -> None:
    for invariant in (
        machine.exactly_once,
        machine.no_orphans,
        machine.intent_holds,
        machine.triggers_kept,
        machine.backfills_kept,
        machine.starts_in_their_window,
    ):
        invariant()


def run_out(machine: EngineMachine, rounds: int) -> None:
    """Ticks and works what is due, `rounds` times (a recurring job never runs out), checking after
    each step."""
    for _ in range(rounds):
        machine.advance("next due")
        if machine._tick_has_work():
            machine.tick()
        if machine.bag:
            machine.work("A", "oldest")
        check(machine)


def test_a_backfill_asked_during_an_attempt_then_paused_runs_each_instant_once_after_resume(
    model_env: Env,  # noqa: F811
) -> None:
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "rate(1 minute)", "ok", 1, (5,), "high", "run_once", "buffer")
        job_id = machine.labels["A"]
        machine.deliver("A")  # the first occurrence runs
        machine.backfill("A", 130)  # two instants before the job existed, behind the attempt
        machine.user("A", "pause")
        machine.settle("A")
        check(machine)
        held = machine.checker.get(job_id)
        assert held.paused and not machine._snapshot().index[job_id]
        machine.user("A", "resume")
        run_out(machine, 8)
        taken = machine._backfills.taken[job_id]
        ran = [scheduled for (job, scheduled) in (a.occurrence for a in machine.attempts) if job == job_id]
        assert len(taken) == 2 and all(ran.count(instant) == 1 for instant in taken)
        machine.backfill("A", 130)  # asked again: nothing more runs
        assert machine.checker.get(job_id).backfill == ()
        check(machine)
    finally:
        machine.teardown()


def test_a_window_moves_the_waiting_occurrence_and_it_starts_at_its_point(model_env: Env) -> None:  # noqa: F811
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "rate(5 minutes)", "ok", 1, (5,), "high", "run_once", "skip")
        job_id = machine.labels["A"]
        instant = machine.checker.get(job_id).scheduled_at or 0
        machine.spread("A", 300)
        moved = machine.checker.get(job_id)
        assert moved.scheduled_at == instant and instant < (moved.due_at or 0) < instant + 5 * MINUTE
        run_out(machine, 6)
        first = next(a for a in machine.attempts if a.job.scheduled_at == instant)
        assert (first.job.started_at or 0) >= (moved.due_at or 0)
        check(machine)
    finally:
        machine.teardown()
