"""Ticks cut short, driven by hand: a tick killed as it sends an ahead row's message, and a tick
stopped at its deadline between its claims and its sends. Each leaves its rows to the next tick,
which the machine's checks (tests/model/short_ticks.py) hold it to as the search does."""

from __future__ import annotations

from sundial.contract.vocabulary import JobStatus
from tests.model.test_engine_machine import EngineMachine, Env, model_env  # noqa: F401

# The stopped tick's looks at its clock: the tick's start, its first mark period, its first chunk,
# its first row; the fifth, as the row's batch would leave, finds the deadline passed.
UNTIL_THE_FIRST_ROW = 4


def sent_for(machine: EngineMachine, label: str) -> list[str]:
    return [sent.message.token for sent in machine.bag if sent.message.job_id == machine.labels[label]]


def test_a_tick_killed_as_it_sends_an_ahead_row_leaves_the_row_to_the_next_tick(
    model_env: Env,  # noqa: F811
) -> None:
    """A one-off waits ahead; the tick that sends its message dies as the send leaves. Its shard's
    mark stays below the row, and the next tick sends it (a mark written before the send would
    have lost it: the machine's check says so at the kill)."""
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "one-off in 3 min", "ok", 0, (5,), "high", "run_once", "skip")
        machine.kill_tick("before send", 1, 1)
        assert sent_for(machine, "A") == []
        assert len(machine._short.owed) == 1

        machine.tick()

        job = machine.checker.get(machine.labels["A"])
        assert sent_for(machine, "A") == [job.token]
        assert not machine._short.owed
    finally:
        machine.teardown()


def test_a_tick_stopped_between_its_resend_and_its_send_releases_the_job_to_the_next_tick(
    model_env: Env,  # noqa: F811
) -> None:
    """A one-off waits ahead, and another's create could not send its message, so the job waits
    for the next tick. That tick takes the job again and its deadline passes before the send: the
    job is released, and the next tick sends it; the ahead row, not reached, is sent then too."""
    machine = EngineMachine(model_env)
    try:
        machine.create("B", "one-off in 3 min", "ok", 0, (5,), "low", "run_once", "skip")
        machine.advance("120s")  # B due within the tick's horizon
        machine.create("A", "one-off now", "ok", 0, (5,), "high", "run_once", "skip", 300, "send refused")
        machine.stop_tick(UNTIL_THE_FIRST_ROW, 1)
        claimed = machine.checker.get(machine.labels["A"])
        assert claimed.status is JobStatus.QUEUED
        assert claimed.lease_until is not None and claimed.lease_until < machine.clock.now_ms()  # released
        assert sent_for(machine, "A") == sent_for(machine, "B") == []
        assert [owed.job_id for owed in machine._short.owed.values()] == [machine.labels["B"]]

        machine.tick()

        assert sent_for(machine, "A") == [claimed.token]
        assert len(sent_for(machine, "B")) == 1
        assert not machine._short.owed
    finally:
        machine.teardown()
