"""Sequences of the model's limit steps, driven by hand: each one's invariants checked as the search
checks them."""

from __future__ import annotations

from sundial.contract.vocabulary import JobStatus
from tests.model.limit_rules import AT_ITS_LIMIT, AT_ITS_RATE, BOOKED, HOLDER_GONE
from tests.model.test_engine_machine import EngineMachine, Env, model_env  # noqa: F401


def check(machine: EngineMachine) -> None:
    for invariant in (
        machine.exactly_once,
        machine.no_orphans,
        machine.intent_holds,
        machine.triggers_kept,
        machine.slots_within_limits,
        machine.slots_are_leases,
    ):
        invariant()


def start(machine: EngineMachine, how: str) -> None:
    machine.start(how, "rate(1 minute)", "ok", 1, "skip")
    check(machine)


def status(machine: EngineMachine, label: str) -> JobStatus:
    return machine.checker.get(machine.labels[label]).status


def test_a_second_job_of_a_full_key_is_held_back_and_starts_once_the_slot_is_given_back(
    model_env: Env,  # noqa: F811
) -> None:
    machine = EngineMachine(model_env)
    try:
        start(machine, AT_ITS_LIMIT)
        held = machine.checker.get(machine.labels["B"])
        assert (held.status, held.attempt) == (JobStatus.QUEUED, 0)
        machine.settle("A")
        check(machine)
        machine.advance("next due")
        machine.deliver("B")
        check(machine)
        assert status(machine, "B") is JobStatus.RUNNING
    finally:
        machine.teardown()


def test_a_vanished_holder_s_slot_comes_back_when_its_lease_ends(model_env: Env) -> None:  # noqa: F811
    machine = EngineMachine(model_env)
    try:
        start(machine, HOLDER_GONE)
        assert status(machine, "B") is JobStatus.RUNNING
        machine.tick()  # reclaims A: its retry waits for B's slot
        check(machine)
    finally:
        machine.teardown()


def test_a_rate_holds_the_second_start_back_for_its_token(model_env: Env) -> None:  # noqa: F811
    machine = EngineMachine(model_env)
    try:
        start(machine, AT_ITS_RATE)
        assert status(machine, "B") is JobStatus.QUEUED
        machine.advance("next due")
        machine.deliver("B")
        check(machine)
        assert status(machine, "B") is JobStatus.RUNNING
    finally:
        machine.teardown()


def test_a_booked_start_comes_back_in_its_window_and_starts_on_its_token(model_env: Env) -> None:  # noqa: F811
    machine = EngineMachine(model_env)
    try:
        start(machine, BOOKED)
        assert status(machine, "B") is JobStatus.QUEUED
        machine.advance("next due")
        machine.deliver("B")
        check(machine)
        assert status(machine, "B") is JobStatus.RUNNING
        assert model_env.seen["a booked occurrence started, in its window"] == 1
    finally:
        machine.teardown()


def test_a_limit_lowered_while_two_run_binds_only_the_fences_after_it(model_env: Env) -> None:  # noqa: F811
    machine = EngineMachine(model_env)
    try:
        machine.put_limit("k1", "max 2")
        machine.create("A", "one-off now", "ok", 0, (5,), "high", "run_once", "skip", limit_key="k1")
        machine.create("B", "one-off now", "ok", 0, (5,), "high", "run_once", "skip", limit_key="k1")
        machine.create("C", "one-off now", "ok", 0, (5,), "high", "run_once", "skip", limit_key="k1")
        machine.deliver("A")
        machine.deliver("B")
        machine.put_limit("k1", "max 1")
        check(machine)  # two run under a limit of one: both fenced under two
        machine.deliver("C")
        assert status(machine, "C") is JobStatus.QUEUED
        machine.settle("A")
        machine.advance("next due")
        machine.deliver("C")  # one still runs: the limit of one holds C back
        check(machine)
        assert status(machine, "C") is JobStatus.QUEUED
    finally:
        machine.teardown()


def test_a_heartbeat_after_its_lease_ended_gives_up_the_slot_another_attempt_took(
    model_env: Env,  # noqa: F811
) -> None:
    """A's worker stalls past its lease, and B takes the key's only slot. A's next heartbeat gives
    its lease up (renewing it would run two under a limit of one), with the job still RUNNING under
    A's token until the tick reclaims it: the model must not count that as a lease given up while
    held."""
    machine = EngineMachine(model_env)
    try:
        start(machine, AT_ITS_LIMIT)
        machine.advance("181s")
        machine.deliver("B")
        assert status(machine, "B") is JobStatus.RUNNING
        machine.heartbeat("A")
        attempt = machine._running("A", "newest")
        assert attempt is None or attempt.job.id != machine.labels["A"]
        assert status(machine, "A") is JobStatus.RUNNING
        check(machine)
    finally:
        machine.teardown()


def test_a_slot_ends_with_the_lease_the_tick_claimed_its_job_under(model_env: Env) -> None:  # noqa: F811
    """The create's send is refused, so the tick claims the job under the longest lease, not the one
    its 30 s timeout implies: the fence must not keep the lease the message implies, nor give its
    slot that end."""
    machine = EngineMachine(model_env)
    try:
        machine.put_limit("k1", "max 2")
        machine.create(
            "A", "one-off now", "ok", 0, (5,), "high", "run_once", "skip", 30, "send refused", limit_key="k1"
        )
        machine.tick()
        machine.deliver("A")
        check(machine)
        assert status(machine, "A") is JobStatus.RUNNING
        machine.settle("A")
        check(machine)
    finally:
        machine.teardown()


def test_a_slot_a_dead_worker_left_unreturned_holds_the_next_back_until_its_lease_ends(
    model_env: Env,  # noqa: F811
) -> None:
    """Found by the search at 300 examples of 40 steps. A's worker dies after its settle, before
    its slot's return: the slot stays held until A's lease ends, as designed, and B, held back
    meanwhile with no attempt running, is not held back for nothing. Once the lease ends B runs."""
    machine = EngineMachine(model_env)
    try:
        start(machine, AT_ITS_LIMIT)
        machine.user("A", "pause")
        machine.settle("A", crash="before its slot's return")
        machine.work("B")
        check(machine)
        assert status(machine, "B") is JobStatus.QUEUED
        machine.advance("181s")
        machine.work("B")
        check(machine)
        assert status(machine, "B") is not JobStatus.QUEUED
    finally:
        machine.teardown()


def test_a_slot_whose_last_beat_was_written_but_answered_with_an_error_is_given_back(
    model_env: Env,  # noqa: F811
) -> None:
    """Found by the search at 150 examples of 30 steps. A's heartbeat moves the job's lease and its
    slot's holder in one transaction, and the read after it is throttled: the worker is told the beat
    failed. Its slot's return after the settle must still recognise the holder as A's own, or the
    slot stays held by an attempt that has ended until that lease runs out."""
    machine = EngineMachine(model_env)
    try:
        start(machine, AT_ITS_LIMIT)
        machine.heartbeat("A", fault="2nd write throttled x3")
        check(machine)
        slot = machine.checker.get(machine.labels["A"]).limit_slot
        assert slot is not None and machine.labels["A"] in machine._snapshot().slots[slot].holders
        machine.settle("A")
        check(machine)
        assert machine.labels["A"] not in machine._snapshot().slots[slot].holders
    finally:
        machine.teardown()
