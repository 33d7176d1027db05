"""A rule-based state machine over the real store and engine on the emulator, hunting exactly-once
and user-intent violations.

One rule per actor step: the API (JobService), the tick, SQS (a bag of messages delivered in order,
twice, late or never), the worker split into fence, heartbeat, side effect and settle (with a crash
possible between any two), faults on AWS calls (throttles, transaction conflicts, writes applied
whose answer was lost, refused sends) and the clock. After every step the invariants are checked
against the table as it is. Budget: SUNDIAL_MODEL_EXAMPLES and SUNDIAL_MODEL_STEPS.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import botocore.endpoint
import pytest
import urllib3
from botocore.exceptions import BotoCoreError, ClientError
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import sundial.shared.engine.scheduler as scheduler_module
import sundial.shared.service.placing as placing_module
import sundial.shared.store.writes as writes_module
from sundial.contract.jobs import JobCreate, JobUpdate, JobView
from sundial.contract.vocabulary import JobStatus, RunStatus
from sundial.local_stack.emulator import Emulator
from sundial.local_stack.resources import table_definition
from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.clock import FixedClock, format_rfc3339, to_epoch_ms
from sundial.shared.dispatch import Dispatcher, JobMessage
from sundial.shared.engine.context import EngineContext
from sundial.shared.engine.gate import HeldBack, HoldFailed
from sundial.shared.engine.heartbeat import Heartbeat
from sundial.shared.engine.scheduler import Scheduler
from sundial.shared.engine.worker import AttemptEnd, Worker
from sundial.shared.errors import Conflict, InvalidInput, JobNotFound, StaleDelivery
from sundial.shared.models import Job
from sundial.shared.service.limits import LimitService
from sundial.shared.service.service import JobService
from sundial.shared.store import DueRow, JobStore
from tests.model import checks
from tests.model.backfill_rules import BackfillSteps
from tests.model.boundary import (
    CLIENT_CONFIG,
    Crash,
    DynamoFaults,
    Ids,
    InlineExecutor,
    NoWait,
    Sent,
    SqsBag,
)
from tests.model.intents import Intent, one_off_revived, pause_let_through, triggers_lost
from tests.model.ledger_rules import LedgerSteps
from tests.model.limit_rules import AT_ITS_LIMIT, AT_ITS_RATE, BOOKED, HOLDER_GONE, LimitSteps
from tests.model.short_ticks import WAITING_AHEAD, ShortTickSteps
from tests.model.windows import FROZEN_CREATE, TICK_MEETS, ZOMBIE_ENDS, WindowSteps

SECOND = 1000
QUEUE_BASE = "https://sqs.us-east-1.amazonaws.com/123456789012/"  # never called: the model holds SQS
START_MS = 1_772_442_000_000 + 7  # 2026-03-02T09:00:00.007Z: odd milliseconds, like a real clock
# Steps name jobs by a label given at their creation, and attempts by their job: deleting a step
# while shrinking never makes a later step refer to something else.
LABELS = "ABC"
labels = st.sampled_from(LABELS)
which = st.sampled_from(["newest", "oldest"])
TARGET_CALL_SECONDS = 0.2  # how long a target call takes on the model's clock
# A fence or heartbeat leaves the attempt at least a heartbeat period before the tick may reclaim it.
LEASE_FLOOR_MS = c.HEARTBEAT_EVERY_SECONDS * SECOND
EXAMPLES = int(os.environ.get("SUNDIAL_MODEL_EXAMPLES", "40"))
STEPS = int(os.environ.get("SUNDIAL_MODEL_STEPS", "30"))
# SUNDIAL_MODEL_SHRINK=0 reports the first failing example as found (`make mutants` times the
# search alone).
SHRINK = [Phase.shrink] if os.environ.get("SUNDIAL_MODEL_SHRINK", "1") != "0" else []
SETTINGS = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    # No explain phase; no target phase either: its hill-climbing spent half the budget on the
    # neighbours of one example, all from the same start.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, *SHRINK],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
ACTORS = ("api", "tick", "worker")
# Where a settle's worker may die after its settle write.
SETTLE_CRASHES = (None, "before its slot's return", "before history", "before alert")
RETRY_ERRORS = (ClientError, BotoCoreError)
REFUSALS = (Conflict, InvalidInput, JobNotFound)
# A claim of a missed occurrence at the very millisecond a later instant falls due.
DUE_AT_THE_CLAIM = "the latest instant falls due at the claim's very millisecond"
# Open engine bugs the machine found: a text of the violation → the strict xfail test that pins it.
# The machine notes them and explores on (SUNDIAL_MODEL_STRICT=1 fails on them too).
KNOWN_BUGS: dict[str, str] = {}
STRICT = os.environ.get("SUNDIAL_MODEL_STRICT") == "1"
# Faults a step may meet on its actor's AWS calls, from its first call on: throttles (the SDK retries
# two), transaction conflicts (the store repeats four), writes applied with their answer lost (the
# SDK resends them), and sends refused or delivered with their answer lost.
FAULTS: dict[str | None, tuple[tuple[str, str, int], ...]] = {
    None: (),
    "throttled": (("dynamodb", "throttle", 1),),
    "throttled x3": (("dynamodb", "throttle", 3),),
    "conflict": (("dynamodb", "conflict", 1),),
    "conflict x4": (("dynamodb", "conflict", 4),),
    "answer lost": (("dynamodb", "lost", 1),),
    "answer lost x3": (("dynamodb", "lost", 3),),
    "2nd write's answer lost": (("dynamodb", "pass", 1), ("dynamodb", "lost", 1)),
    # Past the SDK's retries on a step's first write (a fence, a claim, a user's write) or a worker's
    # settle (its second write, after the fence): the write, and the read that would recognise it
    # applied, fail until the caller tries again.
    "answer lost, then throttled": (("dynamodb", "lost", 1), ("dynamodb", "throttle", 3)),
    "2nd write throttled x3": (("dynamodb", "pass", 1), ("dynamodb", "throttle", 3)),
    "2nd write's answer lost, then throttled": (
        ("dynamodb", "pass", 1),
        ("dynamodb", "lost", 1),
        ("dynamodb", "throttle", 3),
    ),
    "send refused": (("sqs", "refused", 3),),
    "send answer lost": (("sqs", "lost", 1),),
}
faults = st.one_of(st.none(), st.sampled_from([kind for kind in FAULTS if kind]))  # none half the time
USER_ACTIONS = ["pause", "resume", "cancel", "trigger", "retry"]
# What a user does while an attempt of the job runs: where the races between intent and settle are.
DURING_ATTEMPT = [
    *("pause", "cancel") * 2,  # the intents a settle must not overwrite
    "trigger",
    "resume",
    "PATCH max_retries 0",
    "PATCH run_at now",
]
# Another actor's step that lands between an API call's read and its write (the settle of the job's
# running attempt, or a tick), and between a tick's read and its write (a user's call on the job the
# tick is writing, or the job's running attempt beating): the windows each conditional write guards.
API_RACES = ["the attempt settles", "a tick"]
TICK_RACES = [*("pause", "cancel") * 2, "trigger", "resume", "PATCH run_at in 2 min", "a heartbeat"]
FIELD_CHANGES = ["priority high", "priority low", "payload small", "payload large", "name", "max_retries 0"]
TIMING_CHANGES = [
    "run_at now",
    "run_at in 2 min",
    "run_at = its current occurrence",
    "run_at = its last run",
    "schedule rate(1 minute)",
    "schedule rate(10 seconds)",
]
# Hypothesis draws each value as simple as it can in the first examples it makes (the first of a
# list, after a few random choices), and repeats the values of each example in its next few: so a
# start's first argument varies most, and each argument's first value is one that leads somewhere.
# The starts before a window (docs/testing.md) are listed twice.
STARTS = [
    "running",
    "running, target called",
    # The race each version guard of a user call exists for: listed three times, since a user call
    # met it a few times in 150 examples otherwise (the call is drawn, pause and cancel first).
    *("running, its settle inside a user call",) * 3,
    # The race the settle's revision guard exists for: a user call acknowledged while the attempt ran.
    "running, a user call, then its settle",
    "delivered twice",
    # A zombie's settle over its successor is what the settle's token guard exists for.
    *("a zombie beside its retry", "its worker gone, its lease run out") * 2,
    "run once",
    "triggered",
    # Claims are rare otherwise: most runs are sent by their writer.
    *("a finished one-off", "due for its claim", FROZEN_CREATE) * 2,
    # Two jobs of one key, the second held back behind the first's slot (or token); in the last,
    # the first's worker vanishes, and the second arrives again once the first's lease has ended.
    AT_ITS_LIMIT,
    AT_ITS_RATE,
    HOLDER_GONE,
    # Three: two take a burst, the third books its start.
    BOOKED,
    # Two jobs waiting ahead, their messages sent by a tick from their rows (a tick cut short, in
    # ShortTickSteps, moves the clock to it): where the sent marks matter.
    *(WAITING_AHEAD,) * 3,
    "nothing",
]
api_races = st.one_of(st.none(), st.sampled_from(API_RACES))
tick_races = st.sampled_from([None, *TICK_RACES])  # a tick races something most of the time
# During an attempt, the call may also be followed at once by the attempt's settle. The settle
# landing inside the call comes first: it is the race a version guard exists for, and Hypothesis
# draws a list's first value most (without it first, a pause met that race 4 times in 40 examples).
THEN_SETTLES = "then the attempt settles"
during_races = st.sampled_from(["the attempt settles", None, THEN_SETTLES, "a tick", THEN_SETTLES])
BUDGET: dict[str, Any] = {}  # what the last run used, for the terminal summary (conftest.py)

# --- what the model remembers ---------------------------------------------------------------------


@dataclass
class Attempt:
    """One delivery the worker fenced: what it runs, how far it got, how it ended."""

    n: int
    sent: Sent
    job: Job  # as the fence returned it
    worker: Worker
    heartbeat: Heartbeat
    effect: bool | None = None  # None before the target call, then whether it succeeded
    state: str = "running"  # running, settled, crashed, lost (lease), failed (AWS error)
    kept: bool = False  # the job kept this attempt's outcome (its settle write applied)
    tick_history_faults: int = 0  # the tick's history-write faults when it was fenced

    @property
    def token(self) -> str:
        return self.sent.message.token

    @property
    def occurrence(self) -> tuple[str, int]:
        return self.job.id, self.job.scheduled_at or 0

    def __repr__(self) -> str:
        return f"<attempt {self.n}: {checks.short(self.job.id)} @{self.job.scheduled_at} #{self.job.attempt}>"


@dataclass
class Effect:
    attempt: Attempt
    ok: bool
    idempotency_key: str


# --- the machine ----------------------------------------------------------------------------------


class Env:
    """Clients built once per test (building them is slow); each example gets a fresh table."""

    def __init__(self, endpoint_url: str, ids: Ids) -> None:
        aws = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
        self.ids = ids
        self.plain_ddb = boto3.client("dynamodb", **aws)
        http = urllib3.PoolManager()
        self.ddb: dict[str, Any] = {}
        self.sqs: dict[str, Any] = {}
        self.faults: dict[str, DynamoFaults] = {}
        self.bags: dict[str, SqsBag] = {}
        for actor in ACTORS:
            ddb = boto3.client("dynamodb", config=CLIENT_CONFIG, **aws)
            sqs = boto3.client("sqs", config=CLIENT_CONFIG, **aws)
            self.faults[actor] = DynamoFaults(http)
            self.bags[actor] = SqsBag(lambda: 0, lambda *_: None, lambda _: None)
            ddb.meta.events.register("before-send.dynamodb", self.faults[actor].before_send)
            sqs.meta.events.register("before-send.sqs", self.bags[actor].before_send)
            self.ddb[actor], self.sqs[actor] = ddb, sqs
        self.prefixes = itertools.count()
        self.examples = 0
        self.steps = 0
        self.seen: Counter[str] = Counter()  # what the examples reached, printed with -s
        self.ledger_seconds = 0.0  # spent on the occurrence ledger's invariant (ledger_rules.py)


class EngineMachine(
    BackfillSteps, WindowSteps, LimitSteps, LedgerSteps, ShortTickSteps, RuleBasedStateMachine
):
    def __init__(self, env: Env) -> None:
        super().__init__()
        env.examples += 1
        env.ids.reset()
        self.env = env
        self.clock = FixedClock(START_MS)
        # A fresh table per example; no queues, since the model holds every message itself.
        table = f"model{next(env.prefixes)}-{c.TABLE_NAME}"
        env.plain_ddb.create_table(**table_definition(table))
        self.table = table
        queues = {priority: f"{QUEUE_BASE}{name}" for priority, name in c.QUEUE_NAMES.items()}
        dlq = f"{QUEUE_BASE}{c.DEAD_LETTER_QUEUE_NAME}"
        self.stores = {actor: JobStore(env.ddb[actor], table, self.clock) for actor in ACTORS}
        dispatchers = {actor: Dispatcher(env.sqs[actor], queues, dlq, self.clock) for actor in ACTORS}
        self.worker_dispatcher = dispatchers["worker"]
        self.tick_dispatcher = dispatchers["tick"]
        self.checker = JobStore(env.plain_ddb, table, self.clock)
        self.service = JobService(
            self.stores["api"], dispatchers["api"], self.clock, allow_private_targets=True
        )
        self.limit_service = LimitService(self.stores["api"], self.clock)
        self.scheduler = Scheduler(
            EngineContext(self.stores["tick"], dispatchers["tick"], self.clock), parallelism=1
        )
        self.labels: dict[str, str] = {}  # label → job id
        self.attempts: list[Attempt] = []
        self.bag: list[Sent] = []
        self.sent_log: list[JobMessage] = []  # every job message sent, delivered or not since
        self.dead_letters: list[dict[str, Any]] = []
        self.sent_seq = itertools.count()
        self.attempt_seq = itertools.count(1)
        self.intents: dict[str, Intent] = defaultdict(Intent)
        self.effects: list[Effect] = []
        self.kept_runs: set[tuple[str, int, int]] = set()
        self.log: list[str] = []
        self.step = 0
        # Attempts whose history the model has looked for, and those a crash or a fault on a history
        # write excuses; violations found when a dead-letter alert went out.
        self.history_checked: set[int] = set()
        self.history_excused: set[int] = set()
        self.history_faults = 0
        # Holders (job, end) a worker left in a shard when it died between its settle and its slot's
        # return: the slot is the key's again when that end passes, and only then.
        self.slots_left: set[tuple[str, int]] = set()
        self.alert_violations: list[str] = []
        self.last_read: dict[str, Job] = {}  # the jobs as the invariants last read them
        self.versions: dict[str, int] = {}  # each job's version as the invariants last read it
        # Jobs whose create's first try froze with its job's write held: the version answered.
        self.frozen_creates: dict[str, int] = {}
        self.answer: JobView | None = None  # the last API call's answer
        self._snap: tuple[int, checks.Snapshot] | None = None
        for actor in ACTORS:
            env.faults[actor].reset()
            bag = env.bags[actor]
            bag.reset()
            bag.now, bag.on_job_message, bag.on_dead_letter = self.clock.now_ms, self._sent, self._dead_letter

    def teardown(self) -> None:
        try:
            self.reader_agrees()
        finally:
            self.env.plain_ddb.delete_table(TableName=self.table)

    # --- bookkeeping ------------------------------------------------------------------------------

    def _sent(self, message: JobMessage, visible_at: int) -> None:
        self.bag.append(Sent(next(self.sent_seq), message, visible_at))
        self.sent_log.append(message)

    def _dead_letter(self, body: dict[str, Any]) -> None:
        self.dead_letters.append(body)
        intent = self.intents.get(body["job_id"])
        if intent is not None and intent.cancelled_at is not None:
            self.alert_violations.append(
                f"{checks.short(body['job_id'])}: a dead-letter alert for occurrence {body['scheduled_at']} "
                f"went out after its cancel was acknowledged (step {intent.cancelled_step})"
            )

    def _begin(self, what: str) -> None:
        self.step += 1
        self.env.steps += 1
        self.env.seen["step: " + what.split(maxsplit=1)[0]] += 1
        self._note(what)

    def _note(self, what: str, kind: str | None = None) -> None:
        if kind is not None:
            self.env.seen[kind] += 1
        self.log.append(f"[{self.step}] t+{(self.clock.now_ms() - START_MS) / SECOND:g}s {what}")

    def _snapshot(self) -> checks.Snapshot:
        if self._snap is None or self._snap[0] != self.step:
            self._snap = (self.step, checks.read_table(self.env.plain_ddb, self.table))
        return self._snap[1]

    def _violation(self, *found: str) -> None:
        known = [line for line in found if _known(line)]
        for line in known:
            self._note(f"  !! {line} (known: {_known(line)})", f"known bug: {_known(line)}")
        if len(known) < len(found) or (known and STRICT):
            trace = "\n".join(self.log[-40:])
            raise AssertionError("\n".join(found) + "\n--- what happened (last steps) ---\n" + trace)

    def _job(self, job_id: str) -> Job | None:
        try:
            return self.checker.get(job_id)
        except JobNotFound:
            return None

    @contextmanager
    def _faults(self, actor: str, fault: str | None) -> Iterator[None]:
        """Arms the step's fault on its actor's clients; what the step did not meet is disarmed."""
        for client, kind, count in FAULTS[fault]:
            (self.env.faults if client == "dynamodb" else self.env.bags)[actor].arm(kind, count)
        try:
            yield
        finally:
            self.env.faults[actor].pending.clear()
            self.env.faults[actor].race = None
            self.env.bags[actor].pending.clear()

    @staticmethod
    def _with(fault: str | None) -> str:
        return f" [fault: {fault}]" if fault else ""

    # --- the API ----------------------------------------------------------------------------------

    @rule(
        label=labels,
        kind=st.sampled_from(["one-off now", "one-off in 3 min", *checks.RATE_PERIODS_MS]),
        behaviour=st.sampled_from(["ok", "fails", "flaky"]),
        max_retries=st.sampled_from([0, 1, 2]),
        backoff=st.sampled_from([(5,), (0,), (30, 120)]),
        priority=st.sampled_from(["high", "medium", "low"]),
        misfire=st.sampled_from(["run_once", "skip", "run_all"]),
        overlap=st.sampled_from(["skip", "buffer"]),
        timeout=st.sampled_from([300, 30]),
        fault=faults,
        limit_key=st.sampled_from([None, "k1", None, "k2"]),
    )
    def create(
        self,
        label: str,
        kind: str,
        behaviour: str,
        max_retries: int,
        backoff: tuple[int, ...],
        priority: str,
        misfire: str,
        overlap: str,
        timeout: int = 300,
        fault: str | None = None,
        limit_key: str | None = None,
        frozen_first_try: bool = False,
    ) -> None:
        """POST /jobs, for a job labelled `label` (unless there is one). The target's behaviour (ok,
        fails, flaky: fails every odd attempt) is the job's name. With `frozen_first_try`, the call
        carries an Idempotency-Key and its first try freezes after reserving it, its job's write
        held back (see WindowSteps.frozen_create_lands); the client's retry is what is answered.
        `limit_key` is the job's limit key, if any."""
        if label in self.labels:
            return
        if kind.startswith("one-off"):
            run_at = self.clock.now_ms() + (0 if kind.endswith("now") else 180 * SECOND)
            body: dict[str, Any] = {"run_at": format_rfc3339(run_at)}
        else:
            body = {"schedule": kind, "misfire_policy": misfire, "overlap_policy": overlap}
        self._begin(
            f"api create {label}: {body} target={behaviour} retries={max_retries} backoff={backoff} "
            f"timeout={timeout}{f' key={limit_key}' if limit_key else ''}{self._with(fault)}"
        )
        spec = {
            **body,
            "name": behaviour,
            "target": {"type": "python", "handler": "noop"},
            "max_retries": max_retries,
            "backoff": list(backoff),
            "priority": priority,
            "timeout_seconds": timeout,
            **({"limit_key": limit_key} if limit_key else {}),
        }
        key = f"create-{label}" if frozen_first_try else None
        try:
            if key is not None:
                self._frozen_first_try(JobCreate.model_validate(spec), label, key)
            with self._faults("api", fault):
                self.env.ids.label = label
                view, _ = self.service.create(JobCreate.model_validate(spec), key)
        except RETRY_ERRORS as exc:
            self._note(f"  → not acknowledged: {_code(exc)}", "create not acknowledged")
            return
        self.labels[label] = view.id
        self.intents[view.id] = Intent()
        self._note(f"  → {checks.short(view.id)} {view.status.value}", "create ack")
        if frozen_first_try and (stored := self._job(view.id)) is not None:
            self.frozen_creates[view.id] = stored.version

    def _frozen_first_try(self, spec: JobCreate, label: str, key: str) -> None:
        """A create's first try reserves its key, then freezes before its job's write leaves."""
        faults = self.env.faults["api"]
        faults.arm("pass", 1)
        faults.arm("held", 1)
        try:
            self.env.ids.label = label
            self.service.create(spec, key)
        except Crash as exc:
            self._note(f"  first try frozen at {exc}; the client retries", "create's first try frozen")
        finally:
            faults.pending.clear()

    def _labelled(self, label: str, fits: Callable[[str], bool] = lambda _: True) -> str | None:
        """The job labelled `label`, or when it does not fit (missing, nothing to deliver, no
        attempt running) the next labelled job that does: a step acts when it can, and refers to
        the same job after the shrinker removed unrelated steps."""
        start = LABELS.index(label)
        for name in LABELS[start:] + LABELS[:start]:
            job_id = self.labels.get(name)
            if job_id is not None and fits(job_id):
                return job_id
        return None

    @precondition(lambda self: bool(self.labels))
    @rule(job=labels, action=st.sampled_from(USER_ACTIONS), fault=faults, race=api_races)
    def user(self, job: str, action: str, fault: str | None = None, race: str | None = None) -> None:
        """POST /jobs/{id}/pause, /resume, /trigger, /retry and DELETE /jobs/{id}."""
        job_id = self._labelled(job)
        if job_id is not None:
            self._user_action(job_id, action, fault, race)

    def _user_action(self, job_id: str, action: str, fault: str | None, race: str | None = None) -> str:
        intent, now = self.intents[job_id], self.clock.now_ms()
        answer = self._call(action, job_id, getattr(self.service, action), fault, race)
        after = self._job(job_id)
        # Read after the call: a race may have changed what the call decided from.
        state_says_retrying = (
            after is not None and after.attempt > 0 and after.status in (JobStatus.FAILED, JobStatus.QUEUED)
        )
        if answer == "ack" and after is not None and after.status is JobStatus.RUNNING:
            self.env.seen["user call acknowledged while an attempt ran"] += 1
        if action in ("trigger", "retry") and answer != "refused":
            intent.revived()
        self._remember(job_id, action, answer, now, state_says_retrying)
        if answer == "error" and after is not None and action in ("trigger", "pause", "cancel"):
            self.intents[job_id].owed = lifecycle.waiting_triggers(after)  # applied or not: unknown
        return answer

    def _remember(self, job_id: str, action: str, answer: str, now: int, state_says_retrying: bool) -> None:
        """What the user was told: the intents the invariants hold the engine to."""
        intent = self.intents[job_id]
        # Whether a trigger ran a retry that waited for its backoff rather than asking for an extra
        # run. An answer that came decides, not the job's state after it: a second trigger behind a
        # retry that waits finds the same state as the trigger that runs that retry. A lost answer
        # leaves the state's guess, which can only be stricter.
        retrying = state_says_retrying
        if action == "trigger" and answer != "refused":
            intent.triggered_at.add(now)
        if action == "trigger" and answer == "ack":
            effects = [(e.subject, e.fate) for e in self.answer.effects] if self.answer else []
            retrying = ("retry", "runs_now") in effects
            if intent.cancelled_at is not None:
                self._violation(
                    f"{checks.short(job_id)}: a trigger was acknowledged ({effects}) after a cancel was "
                    f"acknowledged at step {intent.cancelled_step}: it never runs"
                )
            else:
                intent.owed += 0 if retrying else 1
        if action == "trigger" and answer != "refused" and not retrying:
            intent.triggers.append((now, self.step))  # an extra run, now or after the running attempt
        elif action == "pause" and answer == "ack":
            intent.paused_since = intent.paused_since or now
            intent.paused_at_step = self.step
            intent.dropped()  # a pause drops (or holds) the extra runs asked before it
        elif action == "cancel" and answer == "ack":
            intent.dropped()
            if intent.cancelled_at is None:
                intent.cancelled_at, intent.cancelled_step = now, self.step
        elif action == "resume":
            job = self._job(job_id)
            if answer == "ack" or (job is not None and not job.paused):
                intent.paused_since = None

    @precondition(lambda self: bool(self.labels))
    @rule(
        job=labels,
        change=st.sampled_from(FIELD_CHANGES + TIMING_CHANGES),
        fault=faults,
        race=api_races,
    )
    def patch(self, job: str, change: str, fault: str | None = None, race: str | None = None) -> None:
        """PATCH /jobs/{id}."""
        job_id = self._labelled(job)
        if job_id is not None:
            self._patch_action(job_id, change, fault, race)

    @precondition(lambda self: bool(self.labels))
    @rule(job=labels, change=st.sampled_from(TIMING_CHANGES), fault=faults, race=api_races)
    def retime(self, job: str, change: str, fault: str | None = None, race: str | None = None) -> None:
        """PATCH /jobs/{id} of run_at or schedule: what may move an occurrence, or bring one back."""
        self.patch(job, change, fault, race)

    def _patch_action(self, job_id: str, change: str, fault: str | None, race: str | None = None) -> None:
        fields = self._patch_fields(job_id, change)
        if fields is None:
            return
        update = lambda _: self.service.update(job_id, fields)  # noqa: E731
        answer = self._call(f"PATCH {change}", job_id, update, fault, race)
        intent = self.intents[job_id]
        if answer == "ack":
            intent.patched_at.append(self.clock.now_ms())
        if answer != "refused" and fields.run_at is not None:
            intent.patched_run_at.add(to_epoch_ms(fields.run_at))

    def _patch_fields(self, job_id: str, change: str) -> JobUpdate | None:
        now = self.clock.now_ms()
        what, _, value = change.partition(" ")
        if what == "priority":
            return JobUpdate(priority=value)  # type: ignore[arg-type]
        if what == "payload":
            return JobUpdate(payload={"n": self.step, "blob": "x" * (600 if value == "large" else 8)})
        if what == "name":
            job = self._job(job_id)
            behaviour = ((job.name if job else None) or "ok").split(":")[0]
            return JobUpdate(name=f"{behaviour}:{self.step}")  # the target's behaviour stays
        if what == "max_retries":
            return JobUpdate(max_retries=int(value))
        if what == "schedule":
            return JobUpdate(schedule=value)
        if value == "now":
            return JobUpdate.model_validate({"run_at": format_rfc3339(now)})
        if value == "in 2 min":
            return JobUpdate.model_validate({"run_at": format_rfc3339(now + 120 * SECOND)})
        job = self._job(job_id)
        last = job.last_run if job is not None else None
        instant = job.scheduled_at if value.endswith("occurrence") and job else last and last.scheduled_at
        return None if instant is None else JobUpdate.model_validate({"run_at": format_rfc3339(instant)})

    def _call(
        self, name: str, job_id: str, call: Callable[[str], Any], fault: str | None, race: str | None = None
    ) -> str:
        """One API call: "ack" (answered 200), "refused" (a 4xx) or "error" (AWS error, unknown);
        `race` is another actor's step that lands between the call's read and its write."""
        racing = f" [race: {race}]" if race else ""
        self._begin(f"api {name} {checks.short(job_id)}{self._with(fault)}{racing}")
        before = self._job(job_id)
        raced: list[str] = []
        self.answer = None
        try:
            with self._faults("api", fault):
                if race is not None:
                    self.env.faults["api"].race = lambda written: raced.append(self._api_race(race, written))
                view = call(job_id)
        except REFUSALS as exc:
            self._note(f"  → refused: {type(exc).__name__}: {exc}", f"{name.split(maxsplit=1)[0]} refused")
            after = self._job(job_id)
            changed = before is not None and after is not None and after.version != before.version
            if changed and not raced:
                self._violation(
                    f"{checks.short(job_id)}: {name} was refused ({exc}) yet changed the job: "
                    f"{before.status.value} v{before.version} → {after.status.value} v{after.version}"
                )
            return "refused"
        except RETRY_ERRORS as exc:
            self._note(f"  → not acknowledged: {_code(exc)}", f"{name.split(maxsplit=1)[0]} not acknowledged")
            return "error"
        self.answer = view
        self._note(
            f"  → ack: {view.status.value}{' paused' if view.paused else ''}",
            f"{name.split(maxsplit=1)[0]} ack ({view.status.value})",
        )
        return "ack"

    def _api_race(self, race: str, job_id: str) -> str:
        """Between an API call's read and its write: the job's running attempt settles, or a tick runs."""
        if race == "a tick":
            self._note("  ~ meanwhile, a tick")
            self._run_tick()
            return race
        attempt = self._running_attempt_of(job_id)
        if attempt is not None:
            self._note(f"  ~ meanwhile, {attempt} settles")
            self._settle(attempt, None)
        return race

    def _tick_race(self, race: str, job_id: str) -> str:
        """Between a tick's read and its write to `job_id`: a user's call on it, or its running
        attempt's heartbeat."""
        self._note(f"  ~ meanwhile, {race} on {checks.short(job_id)}")
        if race == "a heartbeat":
            attempt = self._running_attempt_of(job_id)
            if attempt is not None:
                attempt.heartbeat.beat()
                if attempt.heartbeat.lost:
                    attempt.state = "lost"
        elif race.startswith("PATCH "):
            self._patch_action(job_id, race.removeprefix("PATCH "), None)
        else:
            self._user_action(job_id, race, None)
        return race

    def _running_attempt_of(self, job_id: str) -> Attempt | None:
        mine = [a for a in self.attempts if a.state == "running" and a.job.id == job_id]
        return mine[-1] if mine else None

    # Hypothesis sorts the rules by how many arguments they take and favours the first it may run:
    # with its arguments drawn inside, this one comes first whenever an attempt runs.
    @precondition(lambda self: any(a.state == "running" for a in self.attempts))
    @rule(data=st.data())
    def during(self, data: st.DataObject) -> None:
        """A user acts on a job while one of its attempts runs (on a worker: the job may have moved on)."""
        self._during(
            data.draw(labels, "job"),
            data.draw(which, "which"),
            data.draw(st.sampled_from(DURING_ATTEMPT), "action"),
            data.draw(faults, "fault"),
            data.draw(during_races, "race"),
        )

    def _during(
        self, job: str, which: str, action: str, fault: str | None = None, race: str | None = None
    ) -> None:
        attempt = self._running(job, which)
        if attempt is None:
            return
        self.env.seen[f"during an attempt: {action}, {race or 'no race'}"] += 1
        # The job as it stood before the call, for the checks that compare two reads: within a start
        # no invariant has read it since its create (in a step, this is what they last read).
        job_now = self._job(attempt.job.id)
        if job_now is not None:
            self.last_read[job_now.id] = job_now
        settles_after = race == THEN_SETTLES
        race = None if settles_after else race
        if action.startswith("PATCH "):
            self._patch_action(attempt.job.id, action.removeprefix("PATCH "), fault, race)
        else:
            self._user_action(attempt.job.id, action, fault, race)
        if settles_after and attempt.state == "running":
            self._begin(f"settle {attempt}, right after")
            self._settle(attempt, None)

    # --- the tick ---------------------------------------------------------------------------------

    def _tick_has_work(self) -> bool:
        """A tick now would act on something: a run time within its horizon, or a lease or an owed
        alert that ran out."""
        now = self.clock.now_ms()
        horizon = now + c.DISPATCH_HORIZON_SECONDS * SECOND
        snap = self._snapshot()
        rows = [row for rows in snap.index.values() for row in rows]

        def has_work(row: DueRow) -> bool:
            if row.expires_at is not None and row.expires_at < now:
                return True
            if row.ahead_token is not None:  # its message not sent yet
                return snap.sent_until(row.job_id) < row.due_at <= horizon
            return not (row.is_lease or row.is_alert) and row.due_at <= horizon

        return any(has_work(row) for row in rows)

    @precondition(lambda self: self._tick_has_work())
    @rule(fault=faults, race=tick_races)
    def tick(self, fault: str | None = None, race: str | None = None) -> None:
        before = self._snapshot()
        self._begin(f"tick{self._with(fault)}{f' [race: {race}]' if race else ''}")
        now = self.clock.now_ms()
        raced: list[str] = []
        with self._faults("tick", fault):
            if race is not None:
                self.env.faults["tick"].race = lambda job_id: raced.append(self._tick_race(race, job_id))
            report = self._run_tick()
        if report is not None and not raced:
            self._check_misfires(before, now)

    def _run_tick(self, scheduler: Scheduler | None = None, deadline_ms: int | None = None) -> Any:
        """A tick, by the model's scheduler (or `scheduler`, by its deadline), held to its sent marks
        and to what ticks cut short before it left (ShortTickSteps)."""
        view = self._tick_view()
        try:
            report = (scheduler or self.scheduler).tick(deadline_ms)
        except Crash as exc:
            self._note(f"  → tick killed {exc}", "tick killed")
            self._tick_ended(view, f"killed {exc}")
            return None
        except RETRY_ERRORS as exc:
            self._note(f"  → tick failed: {_code(exc)}")
            self._tick_ended(view, f"failed ({_code(exc)})")
            return None
        except AssertionError as exc:
            if STRICT or not _known(str(exc)):
                raise
            self._note(
                f"  → tick crashed: {exc} (known: {_known(str(exc))})", f"known bug: {_known(str(exc))}"
            )
            return None
        for name in ("claimed", "sent_ahead", "resent", "reclaimed", "caught_up", "alerts_sent", "errors"):
            if getattr(report, name):
                self.env.seen[f"tick {name}"] += 1
        stopped = f" out of time, unsent={report.unsent}" if report.out_of_time else ""
        self._note(
            f"  → claimed={report.claimed} sent_ahead={report.sent_ahead} resent={report.resent} "
            f"reclaimed={report.reclaimed} "
            f"caught_up={report.caught_up} alerts={report.alerts_sent} errors={report.errors}{stopped}"
        )
        self._tick_ended(view, "stopped at its deadline" if report.out_of_time else None)
        return report

    def _check_misfires(self, before: checks.Snapshot, now: int) -> None:
        """7. A waiting rate job the tick claimed runs the occurrence its misfire policy picks (or
        nothing yet, when a write after the claim failed)."""
        after = self._snapshot()
        sent_tokens = {sent.message.token for sent in self.bag}
        found = []
        for job_id, job in before.jobs.items():
            moved = after.jobs.get(job_id)
            if job.status is not JobStatus.PENDING or job.paused or moved is None:
                continue
            if moved.version == job.version or moved.status not in (JobStatus.PENDING, JobStatus.QUEUED):
                continue
            if moved.status is JobStatus.QUEUED and moved.token not in sent_tokens:
                # Claimed, but its catch-up write failed: nothing was sent, so nothing runs the
                # missed occurrence; the resend after its lease decides again.
                continue
            want = checks.misfire_target(job, now)
            if job.token is not None and (job.due_at or 0) <= before.sent_until(job_id):
                # Its message went out on time from its ahead row: claimed again after the row's
                # lease, the occurrence is not a misfire (as a queued job's resend is not).
                want = job.scheduled_at
            if want is not None and moved.scheduled_at != want:
                exactly = f" ({DUE_AT_THE_CLAIM})" if want == now else ""
                found.append(
                    f"{checks.short(job_id)} ({job.schedule}, misfire {job.misfire_policy}): occurrence "
                    f"{job.scheduled_at} claimed at {now} became {moved.scheduled_at}, policy says {want}"
                    f"{exactly}"
                )
        self._violation(*found)

    # --- SQS and the worker -----------------------------------------------------------------------

    def _pick(self, label: str, which: str) -> Sent | None:
        """The newest (or oldest) message held for the labelled job (see _labelled)."""
        job_id = self._labelled(label, lambda job_id: any(s.message.job_id == job_id for s in self.bag))
        mine = [sent for sent in self.bag if sent.message.job_id == job_id]
        return (mine[-1] if which == "newest" else mine[0]) if mine else None

    @precondition(lambda self: bool(self.bag))
    @rule(
        job=labels,
        which=which,
        how=st.sampled_from(["on time", "late", "twice", "never"]),
        fault=faults,
    )
    def deliver(
        self, job: str, which: str = "newest", how: str = "on time", fault: str | None = None
    ) -> None:
        """SQS hands the job's newest (or oldest) held message to a worker, which fences it: on time
        (once its delay is over), late (after the job's lease ran out), twice (a copy stays for later),
        or never (the message is dropped)."""
        sent = self._pick(job, which)
        if sent is None:
            return
        self._begin(f"deliver {sent} {how}{self._with(fault)}")
        if how != "twice":
            self.bag.remove(sent)
        if how == "never":
            return
        with self._faults("worker", fault):
            self._fence(sent, late=how == "late", keep=how == "twice")

    @precondition(lambda self: bool(self.bag))
    @rule(job=labels, which=which, fault=faults)
    def work(self, job: str, which: str = "newest", fault: str | None = None) -> None:
        """A worker runs the job's newest (or oldest) held message start to end: fence, target call,
        settle."""
        sent = self._pick(job, which)
        if sent is None:
            return
        self._begin(f"work {sent}{self._with(fault)}")
        self.bag.remove(sent)
        with self._faults("worker", fault):
            attempt = self._fence(sent, late=False, keep=False)
            if attempt is not None:
                self._settle(attempt, None)

    def _fence(self, sent: Sent, late: bool, keep: bool) -> Attempt | None:
        message = sent.message
        current = self._job(message.job_id)
        if late and current is not None and current.lease_until is not None:
            self.clock.set(max(self.clock.now_ms(), current.lease_until + 1))
        # SQS holds a message for its delay (a held-back one's until it looks again), and the worker
        # waits out the rest.
        self.clock.set(max(self.clock.now_ms(), message.starts_after))
        n = next(self.attempt_seq)
        worker_id = f"worker-{n}"
        # A worker's wait between tries of a write takes time on the model's clock (a fixed second,
        # so that an example replays the same).
        worker = Worker(
            EngineContext(self.stores["worker"], self.worker_dispatcher, self.clock),
            _no_target,
            worker_id,
            sleep=lambda _seconds: self.clock.advance(1),
        )
        now = self.clock.now_ms()
        faults_before = self._worker_faults()
        try:
            # As Worker.process fences: by the key the job names, whatever the message says.
            job = worker._fence_by_its_key(message)
        except StaleDelivery:
            self._note("  → dropped by the fence", "fence dropped")
            self._check_fence_not_applied(message, worker_id)
            return None
        except HeldBack as held:
            self._note(
                f"  → held back by {held.message.limit_key} for {held.delay_ms / SECOND:g}s", "held back"
            )
            self._limit_held(held, current, now, self._worker_faults() != faults_before)
            return None
        except HoldFailed:
            # The delivery fails: SQS delivers the message again after its visibility timeout.
            self._note("  → held back, its message not sent again: SQS delivers it again", "hold failed")
            if not keep:
                self.bag.append(sent)
            return None
        except RETRY_ERRORS as exc:
            self._note(f"  → fence failed: {_code(exc)}; SQS delivers it again later", "fence failed")
            if not keep:
                self.bag.append(sent)
            # The model's faults all pass within a few tries: a fence that gives up on one leaves the
            # job to SQS's redelivery (minutes late), or, applied, to the lease as a lost attempt.
            self._violation(f"{checks.short(message.job_id)}: the fence gave up on {_code(exc)}")
            return None
        heartbeat = Heartbeat(
            EngineContext(self.stores["worker"], self.worker_dispatcher, self.clock),
            job,
            message.token,
            c.HEARTBEAT_EVERY_SECONDS,
        )
        attempt = Attempt(
            n, sent, job, worker, heartbeat, tick_history_faults=self._history_faults(("tick",))
        )
        self.attempts.append(attempt)
        lease = ((job.lease_until or 0) - now) / SECOND
        self._note(f"  → {attempt} started, lease until +{lease:g}s", "started")
        self._check_start(attempt, now, current)
        self._limit_started(attempt, current)
        return attempt

    def _worker_faults(self) -> int:
        return sum(self.env.faults["worker"].counts.values()) + sum(self.env.bags["worker"].counts.values())

    def _check_fence_not_applied(self, message: JobMessage, worker_id: str) -> None:
        job = self._job(message.job_id)
        if job is not None and job.status is JobStatus.RUNNING and job.worker == worker_id:
            self._violation(
                f"{checks.short(job.id)}: the fence was applied (RUNNING under {worker_id}) "
                "but the worker was told the delivery was stale: nobody runs the attempt"
            )

    def _check_start(self, attempt: Attempt, now: int, before: Job | None) -> None:
        """3, 4 and 6 at the moment an attempt starts, and a fresh lease under it."""
        job, intent = attempt.job, self.intents[attempt.job.id]
        found = []
        if before is not None and before.token != attempt.token:
            found.append(f"{attempt} started from a delivery whose token the job no longer held")
        if before is not None and lifecycle.unstarted_extra(before) and not lifecycle.is_backfill_run(before):
            intent.owed -= 1  # a triggered run started
        if intent.cancelled_at is not None:
            found.append(f"{attempt} started after a cancel acknowledged at {intent.cancelled_at}")
        if job.attempt == 1:  # a new occurrence: the first start after a trigger is its extra run
            scheduled, paused = job.scheduled_at or 0, intent.paused_since
            extra = intent.started(scheduled)
            if (
                paused is not None
                and scheduled > paused
                and (extra is None or extra[1] < intent.paused_at_step)
            ):
                why = f" (triggered at step {extra[1]}, before the pause)" if extra is not None else ""
                found.append(
                    f"{attempt}: a new occurrence started after a pause acknowledged at {paused}{why}"
                )
        paused = intent.paused_since
        retry = job.attempt > job.retried_after + 1
        # A trigger asked since the pause runs the held retry (docs/design.md).
        if retry and paused is not None and not any(t >= paused for t in intent.triggered_at):
            found.append(f"{attempt}: a retry started after a pause acknowledged at {paused} held it")
        if job.scheduled_at in intent.succeeded:
            since = [t for t in intent.patched_at if t >= intent.succeeded[job.scheduled_at]]
            why = f" (PATCHed at {since} after it succeeded)" if since else ""
            why += self._patched_to(job.id, job.scheduled_at)
            found.append(f"{attempt} re-runs occurrence {job.scheduled_at}, which already succeeded{why}")
        if job.lease_until is None or job.lease_until < now + LEASE_FLOOR_MS:
            found.append(f"{attempt} started under a lease that ends at {job.lease_until} (now {now})")
        self._violation(*found)

    def _running(self, label: str, which: str) -> Attempt | None:
        """The job's newest (or oldest) attempt still running on a worker."""
        running = [attempt for attempt in self.attempts if attempt.state == "running"]
        job_id = self._labelled(label, lambda job_id: any(a.job.id == job_id for a in running))
        mine = [attempt for attempt in running if attempt.job.id == job_id]
        return (mine[-1] if which == "newest" else mine[0]) if mine else None

    @precondition(lambda self: any(a.state == "running" for a in self.attempts))
    @rule(job=labels, which=which, fault=faults)
    def heartbeat(self, job: str, which: str = "newest", fault: str | None = None) -> None:
        """The attempt's heartbeat beats once more, a heartbeat period after the step before (its
        target still running): it renews the lease when it runs short."""
        attempt = self._running(job, which)
        if attempt is None:
            return
        self.clock.advance(c.HEARTBEAT_EVERY_SECONDS + 1)  # the thread's period, and a little work
        self._begin(f"heartbeat {attempt} {c.HEARTBEAT_EVERY_SECONDS + 1} s on{self._with(fault)}")
        before = self._job(attempt.job.id)
        with self._faults("worker", fault):
            ok = attempt.heartbeat.beat()
        job = self._job(attempt.job.id)
        ours = job is not None and job.status is JobStatus.RUNNING and job.token == attempt.token
        # A slot is a lease: once the attempt's lease ended (its worker stalled past it), its key's
        # slot was free for another fence to take, and a heartbeat must not take it back.
        shard = self._snapshot().slots.get(before.limit_slot or "") if before is not None else None
        slot_ended = (
            before is not None
            and (before.lease_until or 0) < self.clock.now_ms()
            and shard is not None
            and before.id not in shard.holders
        )
        if attempt.heartbeat.lost:
            attempt.state = "lost"
            self._note("  → lease lost: the attempt stops, records nothing", "heartbeat lost")
            if ours and not slot_ended:
                self._violation(f"{attempt}: the heartbeat gave up a lease the attempt still holds")
        elif not ok:
            self._note("  → AWS error: beats again sooner")
        elif ours and job is not None and (job.lease_until or 0) < self.clock.now_ms() + LEASE_FLOOR_MS:
            self._violation(f"{attempt}: after a heartbeat the lease ends at {job.lease_until}")

    @precondition(lambda self: any(a.state == "running" for a in self.attempts))
    @rule(job=labels, which=which)
    def side_effect(self, job: str, which: str = "newest") -> None:
        attempt = self._running(job, which)
        if attempt is None or attempt.effect is not None:
            return
        self._begin(f"target call {attempt}")
        self._target_call(attempt)

    def _target_call(self, attempt: Attempt) -> None:
        """The target runs: the ledger records the occurrence's idempotency key and whether it worked."""
        try:
            delivery = attempt.worker._delivery(attempt.job)
        except RETRY_ERRORS as exc:
            self._note(f"  → could not load the payload: {_code(exc)}; the invocation fails")
            self._abandon(attempt, "crashed")
            return
        behaviour = (attempt.job.name or "ok").split(":")[0]
        ok = behaviour == "ok" or (behaviour == "flaky" and attempt.job.attempt % 2 == 0)
        self.effects.append(Effect(attempt, ok, delivery.idempotency_key))
        attempt.effect = ok
        self.clock.advance(TARGET_CALL_SECONDS)
        self._note(f"  → {'succeeded' if ok else 'failed'} ({delivery.idempotency_key})", "target called")

    @precondition(lambda self: any(a.state == "running" for a in self.attempts))
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        """An attempt settles (arguments drawn inside, so that it sorts next to `during`: see there)."""
        self.settle(
            data.draw(labels, "job"),
            data.draw(which, "which"),
            data.draw(st.sampled_from(SETTLE_CRASHES), "crash"),
            data.draw(faults, "fault"),
        )

    def settle(
        self, job: str, which: str = "newest", crash: str | None = None, fault: str | None = None
    ) -> None:
        """The target call (when not made yet), then Worker.finish; `crash` kills the worker after its
        settle write, before its slot's return, the history item or the dead-letter alert."""
        attempt = self._running(job, which)
        if attempt is None:
            return
        self._begin(f"settle {attempt}{f', crash {crash}' if crash else ''}{self._with(fault)}")
        with self._faults("worker", fault):
            self._settle(attempt, crash)

    def _record_kept(self, attempt: Attempt, successor: Job | None) -> None:
        """A settle applied; `successor` is the job as it stood when a zombie settled over it."""
        if successor is not None:
            self._violation(
                f"{attempt}: a zombie's settle was applied over the job's attempt "
                f"{successor.attempt} (the job held token {successor.token}, the zombie {attempt.token})"
            )
        if attempt.effect:
            job_id, scheduled = attempt.occurrence
            self.kept_runs.add((job_id, scheduled, attempt.job.attempt))
            self.intents[job_id].succeeded.setdefault(scheduled, self.clock.now_ms())

    def _settle_attempt(self, attempt: Attempt) -> None:
        self._begin(f"settle {attempt}")
        self._settle(attempt, None)

    def _settle(self, attempt: Attempt, crash: str | None) -> None:
        if attempt.effect is None:
            self._target_call(attempt)
            if attempt.state != "running":
                return
        self._arm_crash(crash)
        # Whether the lease was reclaimed under it: a zombie's settle must change nothing.
        holder = self._job(attempt.job.id)
        zombie = holder is not None and holder.token != attempt.token
        end = AttemptEnd(_error(attempt))
        finish = getattr(attempt.worker, "finish", None) or attempt.worker._finish
        try:
            ends = attempt.heartbeat.holder_ends
            settled = finish(attempt.job, attempt.token, attempt.job.started_at, end, 0, None, ends)
            outcome = settled.outcome
        except StaleDelivery:
            self._settle_refused(attempt)
        except Crash as exc:
            self._settle_broken(attempt, f"crashed at {exc}")
        except RETRY_ERRORS as exc:
            self._settle_broken(attempt, f"failed: {_code(exc)}")
            # The model's faults all pass within a few tries: a settle that gives up on one leaves
            # a finished call to the lease, and the tick would run the occurrence again.
            self._violation(f"{attempt}: the settle gave up on {_code(exc)}, which a later try would pass")
        else:
            attempt.state, attempt.kept = "settled", True
            self._note(f"  → {outcome.value}", f"settled {outcome.value}")
            intent = self.intents[attempt.job.id]
            for action, since in (("cancel", intent.cancelled_at), ("pause", intent.paused_since)):
                if since is not None and since >= (attempt.job.started_at or 0):
                    self.env.seen[f"settled after a {action} during the attempt"] += 1
        finally:
            self.env.faults["worker"].crash_when = None
            self.env.bags["worker"].crash_on_dead_letter = False
        if attempt.kept:
            self._record_kept(attempt, holder if zombie else None)

    def _arm_crash(self, crash: str | None) -> None:
        if crash == "before its slot's return":
            self.env.faults["worker"].crash_when = lambda operation, body: (
                operation == "UpdateItem"
                and str(body.get("ConditionExpression", "")).startswith("#holders.#job IN (:until0")
            )
        elif crash == "before history":
            self.env.faults["worker"].crash_when = lambda operation, body: (
                operation == "PutItem" and body["Item"][c.SORT_KEY]["S"].startswith("RUN#")
            )
        elif crash == "before alert":
            self.env.bags["worker"].crash_on_dead_letter = True

    def _settle_refused(self, attempt: Attempt) -> None:
        attempt.state = "lost"
        self._note("  → the lease was lost: nothing recorded", "settle lost lease")
        if self._kept(attempt):
            self._violation(f"{attempt}: its settle was applied, yet the worker was told the lease was lost")

    def _settle_broken(self, attempt: Attempt, why: str) -> None:
        attempt.kept = self._kept(attempt)
        if attempt.kept and attempt.job.limit_slot is not None:
            # The worker died before the slot's return: its holder ends at a lease it wrote.
            for lease in attempt.heartbeat.holder_ends:
                self.slots_left.add((attempt.job.id, lease))
        self._abandon(attempt, "crashed" if "crash" in why else "failed")
        self._note(
            f"  → {why}; the job {'kept' if attempt.kept else 'did not keep'} the outcome",
            f"settle {why.split(':', maxsplit=1)[0]}",
        )

    def _kept(self, attempt: Attempt) -> bool:
        """Whether the job's last run is this attempt's own settle (a reclaim of the same attempt
        names the same worker, but says the lease expired)."""
        job = self._job(attempt.job.id)
        last = job.last_run if job is not None else None
        mine = (attempt.worker._worker_id, attempt.job.scheduled_at, attempt.job.attempt, _error(attempt))
        return last is not None and (last.worker, last.scheduled_at, last.attempt, last.error) == mine

    @precondition(lambda self: any(a.state == "running" for a in self.attempts))
    @rule(job=labels, which=which)
    def crash(self, job: str, which: str = "newest") -> None:
        """The worker dies mid-attempt; SQS delivers the message again after its visibility timeout."""
        attempt = self._running(job, which)
        if attempt is None:
            return
        self._begin(
            f"crash {attempt} ({'after' if attempt.effect is not None else 'before'} its target call)"
        )
        self._abandon(attempt, "crashed")

    def _abandon(self, attempt: Attempt, state: str) -> None:
        attempt.state = state
        self.bag.append(attempt.sent)

    # --- faults and the clock ---------------------------------------------------------------------

    @precondition(lambda self: bool(self.labels))
    @rule(by=st.sampled_from(["next due", "1s", "5s", "10s", "30s", "61s", "181s", "600s"]))
    def wait(self, by: str) -> None:
        """The clock moves (a rule named to sort after `during`, see there)."""
        self.advance(by)

    def advance(self, by: str) -> None:
        """The clock moves: small steps, past the misfire grace, past a lease, or to the next instant
        something falls due (a message, a run time, a lease's end)."""
        now = self.clock.now_ms()
        if by != "next due":
            self.clock.advance(int(by.removesuffix("s")))
        else:
            snap = self._snapshot()
            upcoming = [sent.message.starts_after for sent in self.bag]
            for rows in snap.index.values():
                upcoming += [row.due_at + (1 if row.is_lease or row.is_alert else 0) for row in rows]
                for row in rows:
                    if row.ahead_token and row.expires_at:
                        # The first tick that sends its message, and the end of its implied lease.
                        upcoming += [row.due_at - c.DISPATCH_HORIZON_SECONDS * SECOND, row.expires_at + 1]
            later = [instant for instant in upcoming if instant > now]
            self.clock.set(min(later, default=now))
        self._begin(f"clock +{(self.clock.now_ms() - now) / SECOND:g}s ({by})")

    # Hypothesis picks among the rules evenly; a rule listed again here is picked that much more
    # often. Steps that move an attempt along are where the races are.
    deliver_again = deliver
    heartbeat_again = heartbeat
    finish_again = finish
    work_again = work
    tick_again = tick
    side_effect_again = side_effect
    crash_again = crash
    killed_tick_again = ShortTickSteps.killed_tick
    stopped_tick_again = ShortTickSteps.stopped_tick

    during_again = during
    during_more = during
    user_again = user

    def _a_message(self) -> bool:
        return any(sent.message.job_id == self.labels.get("A") for sent in self.bag)

    @initialize(
        how=st.sampled_from(STARTS),  # drawn first: see STARTS
        # Every five minutes: each occurrence waits ahead, its message sent by a tick from its row.
        kind=st.sampled_from(
            ["rate(1 minute)", "one-off now", "rate(10 seconds)", "rate(2 minutes)", "rate(5 minutes)"]
        ),
        behaviour=st.sampled_from(["flaky", "ok", "fails"]),
        max_retries=st.sampled_from([1, 2, 0]),
        overlap=st.sampled_from(["skip", "buffer"]),
        meets=st.sampled_from([*TICK_MEETS, None]),
        zombie=st.sampled_from(ZOMBIE_ENDS),
        call=st.sampled_from(DURING_ATTEMPT),
    )
    def start(
        self,
        how: str,
        kind: str,
        behaviour: str,
        max_retries: int,
        overlap: str,
        meets: str | None = None,
        zombie: str | None = None,
        call: str = "pause",
    ) -> None:
        """Most examples start with job A's first attempt running (or just past it), so that the
        steps after it land while it runs, or while the tick deals with what it left; some start
        empty. A job every two minutes waits in a run row for the tick's claim; a zombie beside its
        retry often settles at once (`zombie`); a user call (`call`) may have the attempt settle
        between its read and its write."""
        self.env.seen[f"start: {how}"] += 1
        if how == "nothing" or self._start_at_window(how, behaviour, max_retries, overlap, meets):
            return
        if how == WAITING_AHEAD:
            self.create("A", "rate(5 minutes)", behaviour, max_retries, (5,), "high", "run_once", overlap)
            self.create("B", "one-off in 3 min", behaviour, max_retries, (5,), "low", "run_once", overlap)
            return
        if self._start_at_limit(how, kind, behaviour, max_retries, overlap):
            return
        self.create("A", kind, behaviour, max_retries, (5,), "high", "run_once", overlap)
        if how == "triggered":
            self.user("A", "trigger")
            return
        if not self._a_message():
            # A job every two minutes waits in a run row: the tick claims it when it falls due.
            self.advance("next due")
            self.tick()
        if not self._a_message():
            return
        if how == "run once":
            self.work("A")
            return
        self.deliver("A", how="twice" if how == "delivered twice" else "on time")
        self._start_running(how, meets, zombie, call)

    def _start_running(self, how: str, meets: str | None, zombie: str | None, call: str) -> None:
        """The rest of a start whose first attempt was delivered."""
        if how == "running, target called":
            self.side_effect("A")
        elif how == "running, its settle inside a user call":
            self._during("A", "newest", call, None, "the attempt settles")
        elif how == "running, a user call, then its settle":
            self._during("A", "newest", call, None, THEN_SETTLES)
        elif how == "its worker gone, its lease run out":
            # The tick reclaims it, conditional on the revision it read: a user's call may land between.
            self.crash("A")
            self.advance("181s")
            self.tick(None, meets)
        elif how == "a zombie beside its retry":
            # The attempt's lease runs out under it; the tick retries; the retry starts. The first
            # attempt still runs on its worker, which has not heard.
            self.advance("181s")
            self.tick()
            if any(sent.message.job_id == self.labels["A"] for sent in self.bag):
                self.deliver("A")
                self._zombie_ends(zombie)

    # --- the invariants, after every step ---------------------------------------------------------

    @invariant()
    def exactly_once(self) -> None:
        """1. An occurrence's side effect succeeds at most once, unless an attempt that made it was
        abandoned after it (a crash, or a lease that was really lost) or is a zombie now."""
        snap = self._snapshot()
        by_occurrence: dict[tuple[str, int], list[Effect]] = defaultdict(list)
        for effect in self.effects:
            if effect.ok:
                by_occurrence[effect.attempt.occurrence].append(effect)
        found = []
        for (job_id, scheduled), effects in by_occurrence.items():
            standing = [e.attempt for e in effects if self._stands(e.attempt, snap)]
            if len(standing) > 1:
                found.append(
                    f"{checks.short(job_id)}: occurrence {scheduled} succeeded {len(effects)} times "
                    f"({effects[0].idempotency_key}); attempts standing: {standing}"
                    + self._patched_to(job_id, scheduled)
                )
        self._violation(*found)

    def _patched_to(self, job_id: str, scheduled: int | None) -> str:
        """Why a user action may have given this occurrence's instant to another run."""
        intent = self.intents[job_id]
        why = ", and a PATCH set run_at to it" if scheduled in intent.patched_run_at else ""
        return why + (", and a trigger came at that very instant" if scheduled in intent.triggered_at else "")

    def _stands(self, attempt: Attempt, snap: checks.Snapshot) -> bool:
        if attempt.state == "running":
            job = snap.jobs.get(attempt.job.id)
            return job is not None and job.status is JobStatus.RUNNING and job.token == attempt.token
        return attempt.kept

    @invariant()
    def no_orphans(self) -> None:
        """2. Every job that is neither finished nor paused is due in the index or in flight under a
        lease row at its lease; finished and paused waiting jobs are not in the index."""
        self._violation(*checks.orphans(self._snapshot()))

    @invariant()
    def intent_holds(self) -> None:
        """3. An acknowledged cancel ends the job (a running attempt first finishes); an acknowledged
        pause stays until a resume, and queues nothing but what a trigger since asked for."""
        snap = self._snapshot()
        found = []
        for job_id, intent in self.intents.items():
            job = snap.jobs.get(job_id)
            if job is None:
                continue
            running_out = job.status is JobStatus.RUNNING and job.cancel_requested
            if intent.cancelled_at is not None and job.status is not JobStatus.CANCELLED and not running_out:
                found.append(
                    f"{checks.short(job_id)} was cancelled (acknowledged), yet is {checks._state(job)}"
                )
            if intent.paused_since is not None and not job.paused:
                found.append(f"{checks.short(job_id)} was paused (acknowledged), yet is not paused")
            found += pause_let_through(job, intent)
        self._violation(*found)

    @invariant()
    def dead_alerted(self) -> None:
        """4. A dead occurrence's alert was sent to the dead-letter queue or is owed in the table."""
        self._violation(*checks.unalerted(self._snapshot(), self.dead_letters))

    @invariant()
    def lost_never_hides_success(self) -> None:
        """5. History never says `lost` for an attempt whose success the job kept."""
        self._violation(*checks.lost_but_kept(self._snapshot(), self.kept_runs))

    @invariant()
    def triggers_kept(self) -> None:
        """6b. An acknowledged trigger runs once, unless a later cancel or pause dropped it."""
        snap = self._snapshot()
        found = []
        for job_id, intent in self.intents.items():
            job = snap.jobs.get(job_id)
            if job is not None:
                found += triggers_lost(self.last_read.get(job_id), job, intent)
        self.last_read = dict(snap.jobs)
        self._violation(*found)

    @invariant()
    def finished_one_off_stays_finished(self) -> None:
        """8. A finished one-off never runs again, a PATCH of its timing included."""
        snap = self._snapshot()
        found = []
        for job_id, intent in self.intents.items():
            job = snap.jobs.get(job_id)
            if job is not None:
                found += one_off_revived(job, intent, self.step)
        self._violation(*found)

    @invariant()
    def versions_only_grow(self) -> None:
        """18. Every write bumps a job's version: a job whose version went back was overwritten by a
        write decided on an older state (a create's write landing on the job it made, late)."""
        snap = self._snapshot()
        found = [
            f"{checks.short(job_id)}: its version went back from {self.versions[job_id]} to {job.version} "
            f"({checks._state(job)})"
            for job_id, job in snap.jobs.items()
            if job.version < self.versions.get(job_id, 0)
        ]
        self.versions.update({job_id: job.version for job_id, job in snap.jobs.items()})
        self._violation(*found)

    @invariant()
    def cancelled_never_alerts(self) -> None:
        """15b. No dead-letter alert goes out for a job after its cancel was acknowledged."""
        found, self.alert_violations = self.alert_violations, []
        self._violation(*found)

    @invariant()
    def attempts_in_history(self) -> None:
        """14b. Every attempt that called its target has a history row once the job moved on from it
        (unless the model killed its writer, or failed its history write, in between)."""
        snap = self._snapshot()
        faults_now = self._history_faults()
        excused = faults_now != self.history_faults
        self.history_faults = faults_now
        found = []
        for attempt in self.attempts:
            if attempt.effect is None or attempt.n in self.history_checked:
                continue
            job = snap.jobs.get(attempt.job.id)
            if job is None or (job.status is JobStatus.RUNNING and job.token == attempt.token):
                continue
            self.history_checked.add(attempt.n)
            if excused or attempt.n in self.history_excused or self._lost_row_faulted(attempt):
                continue
            rows = {(run.scheduled_at, run.attempt) for run in snap.runs[job.id]}
            if (attempt.job.scheduled_at, attempt.job.attempt) not in rows:
                found.append(f"{attempt} called its target, and the job moved on, but the history has no row")
        self._violation(*found)

    def _history_faults(self, actors: tuple[str, ...] = ACTORS) -> int:
        """Faults the model made history writes meet, so far (those that may keep a row out)."""
        counts = sum((self.env.faults[actor].counts for actor in actors), Counter())
        return sum(n for kind, n in counts.items() if kind.endswith("PutItem") or kind == "crash")

    def _lost_row_faulted(self, attempt: Attempt) -> bool:
        """A tick took the attempt's lease, and a history write of a tick met a fault since the
        attempt's fence: the lost row the tick writes after its reclaim may be the one it could not
        write (it gives up after the SDK's retries and logs it). The attempt's own call of its target
        may come later still, from a worker that did not know it had lost its lease."""
        return attempt.state == "lost" and self._history_faults(("tick",)) != attempt.tick_history_faults


def _no_target(*_: Any) -> None:
    raise AssertionError("the model calls targets itself")


def _known(violation: str) -> str | None:
    """The regression test that pins a known engine bug, when the violation is that bug."""
    return next((test for text, test in KNOWN_BUGS.items() if text in violation), None)


def _error(attempt: Attempt) -> str | None:
    return None if attempt.effect else "target said no"


def _code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code"))
    return type(exc).__name__


@pytest.fixture
def model_env(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    """Deterministic job ids and an inline tick, so that an example replays call for call; retries
    without waiting; the engine's warnings about injected faults, expected by the thousand, silenced."""
    ids = Ids()
    monkeypatch.setattr(placing_module, "ULID", ids)
    monkeypatch.setattr(scheduler_module, "ThreadPoolExecutor", InlineExecutor)
    monkeypatch.setattr(botocore.endpoint, "time", NoWait())
    monkeypatch.setattr(writes_module, "time", NoWait())
    engine_log = logging.getLogger("sundial.shared")
    level = engine_log.level
    engine_log.setLevel(logging.ERROR)
    yield Env(emulator.endpoint_url, ids)
    engine_log.setLevel(level)


# Its budget (the Makefile's MODEL_EXAMPLES) takes minutes: more than the suites' per-test limit.
@pytest.mark.timeout(1200)
def test_engine_machine(model_env: Env) -> None:
    started = time.monotonic()
    run_state_machine_as_test(lambda: EngineMachine(model_env), settings=SETTINGS)
    BUDGET.update(
        examples=model_env.examples,
        steps=model_env.steps,
        max_examples=EXAMPLES,
        step_count=STEPS,
        seconds=time.monotonic() - started,
    )
    print(
        f"\nmodel: {EXAMPLES} examples x {STEPS} steps budget; ran {model_env.examples} examples, "
        f"{model_env.steps} steps in {BUDGET['seconds']:.1f} s, {model_env.ledger_seconds:.1f} s of them "
        "checking the occurrence ledger"
    )
    faults = sum((env_faults.counts for env_faults in model_env.faults.values()), Counter())
    sends = sum((bag.counts for bag in model_env.bags.values()), Counter())
    for name, count in sorted((model_env.seen + faults + sends).items()):
        print(f"  {count:6d}  {name}")


# Sequences the machine found and shrank, each an engine bug fixed since: kept as plain tests.


def test_a_lost_attempt_of_a_paused_job_is_reclaimed(model_env: Env) -> None:
    """A recurring job starts, is paused while it runs, and its worker vanishes. The tick reclaims
    it: the attempt lost, the retry held by the pause (the tick used to raise at this row)."""
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "rate(1 minute)", "ok", 2, (5,), "high", "run_once", "skip")
        job_id = machine.labels["A"]
        machine.deliver("A")
        machine.user("A", "pause")
        machine.crash("A")
        machine.advance("181s")
        report = machine.scheduler.tick()
        job = machine.checker.get(job_id)
        assert report.reclaimed == 1
        assert (job.status, job.paused) == (JobStatus.FAILED, True)
        machine.no_orphans()
        runs, _ = machine.checker.runs(job_id, 10, None)
        assert [run.status for run in runs] == ["lost"]
    finally:
        machine.teardown()


def test_a_trigger_asked_during_an_attempt_yields_to_a_later_pause(model_env: Env) -> None:
    """Trigger, then pause, while an attempt runs; the attempt settles. After the acknowledged
    pause no new occurrence starts (the settle used to start the extra run)."""
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "rate(1 minute)", "ok", 2, (5,), "high", "run_once", "skip")
        job_id = machine.labels["A"]
        machine.deliver("A")
        machine.user("A", "trigger")
        machine.user("A", "pause")
        machine.settle("A")
        job = machine.checker.get(job_id)
        assert (job.status, job.paused) == (JobStatus.PENDING, True)
        assert not machine._snapshot().index[job_id]
    finally:
        machine.teardown()


def test_patch_run_at_never_reruns_an_occurrence_that_ran(model_env: Env) -> None:
    """A recurring job's occurrence succeeds; a PATCH sets run_at to that occurrence's instant. It
    is refused: PATCH never re-runs an occurrence that ran (it used to run it again, under the same
    idempotency key, with no history item of its own)."""
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "rate(1 minute)", "ok", 2, (5,), "high", "run_once", "skip")
        job_id = machine.labels["A"]
        machine.work("A")
        before = machine.checker.get(job_id)
        assert before.last_run is not None
        machine.patch("A", "run_at = its last run")
        after = machine.checker.get(job_id)
        assert after.version == before.version
        assert after.scheduled_at != before.last_run.scheduled_at
    finally:
        machine.teardown()


def test_a_trigger_at_the_instant_an_occurrence_is_due_runs_it_once(model_env: Env) -> None:
    """A one-off due in 3 minutes, the clock on its instant, a trigger, and a worker runs the extra
    run, then the occurrence: two runs with two instants (the extra run used to take the
    occurrence's instant, so one idempotency key ran twice)."""
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "one-off in 3 min", "ok", 0, (5,), "high", "run_once", "skip")
        job_id = machine.labels["A"]
        machine.advance("next due")
        machine.user("A", "trigger")
        machine.work("A")
        machine.work("A")
        runs, _ = machine.checker.runs(job_id, 10, None)
        assert len({run.scheduled_at for run in runs}) == len(runs) == 2
        assert all(run.status is RunStatus.SUCCEEDED for run in runs)
    finally:
        machine.teardown()


def test_a_trigger_after_a_cancel_of_a_running_attempt_is_refused(model_env: Env) -> None:
    """An attempt runs; the job is cancelled (acknowledged), then triggered. The job is as good as
    cancelled, so the trigger is refused (409), as on a cancelled job: acknowledged, it would never run."""
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "rate(1 minute)", "ok", 0, (5,), "high", "run_once", "skip")
        job_id = machine.labels["A"]
        machine.deliver("A")
        machine.user("A", "cancel")
        with pytest.raises(Conflict):
            machine.service.trigger(job_id)
    finally:
        machine.teardown()


def test_a_pause_whose_write_meets_the_attempt_s_settle_queues_nothing(model_env: Env) -> None:
    """A recurring job's attempt runs; a pause reads it running, and the attempt settles before the
    pause writes. The pause's write is refused on its version and decided again on the settled job:
    paused, its next occurrence held (without the guard the pause only set its flag on the job the
    settle had queued, and that occurrence ran)."""
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "rate(1 minute)", "ok", 2, (5,), "high", "run_once", "skip")
        job_id = machine.labels["A"]
        machine.deliver("A")
        machine._during("A", "newest", "pause", None, "the attempt settles")
        job = machine.checker.get(job_id)
        assert (job.status, job.paused) == (JobStatus.PENDING, True)
        machine.intent_holds()
        machine.no_orphans()
    finally:
        machine.teardown()


def test_a_zombie_s_target_call_after_a_reclaim_whose_lost_row_failed_is_not_taken_for_a_bug(
    model_env: Env,
) -> None:
    """A worker's lease runs out unrenewed and a tick reclaims its attempt, but the lost row the tick
    writes after the reclaim meets throttles past the SDK's retries (the tick logs it and goes on).
    The worker then calls its target and finds its lease gone. The missing row is the tick's failed
    write: a check of history after each step used to count only the faults of the step it checked,
    and took it for a lost row (found by the search; a sequence of the model, not an engine bug)."""
    machine = EngineMachine(model_env)
    steps = (
        lambda: machine.start(
            how="triggered",
            zombie="its settle after its successor's target call",
            meets="pause",
            overlap="skip",
            kind="rate(1 minute)",
            call="pause",
            max_retries=1,
            behaviour="flaky",
        ),
        lambda: machine.deliver("A", "newest", "twice"),
        lambda: machine.paused_a_while("A", "5 min"),
        lambda: machine.deliver("A", "newest", "on time"),
        lambda: machine.tick(race="cancel"),
        lambda: machine.work("A", "newest"),
        lambda: machine.tick(fault="2nd write throttled x3"),
        lambda: machine.settle("A", "newest"),
    )
    try:
        for step in steps:
            step()
            machine.attempts_in_history()
        [attempt] = machine.attempts
        rows = {(run.scheduled_at, run.attempt) for run in machine._snapshot().runs[attempt.job.id]}
        assert attempt.state == "lost" and attempt.effect is not None
        assert (attempt.job.scheduled_at, attempt.job.attempt) not in rows  # the tick's write that failed
    finally:
        machine.teardown()


def test_a_second_trigger_behind_a_paused_job_s_held_retry_is_an_extra_run_of_its_own(
    model_env: Env,
) -> None:
    """A paused job's attempt failed and its retry is held. One trigger runs the held retry; a second
    one, asked while that retry waits, is an extra run behind it (its answer says it waits). Once the
    retry settles, the extra run starts a new occurrence: what the user asked, though the job is
    paused. The checker used to read the second trigger from the job's state after the call (a retry
    waiting) and took it for the retry's trigger, so the new occurrence looked like one a pause
    forbade (found by the search; a sequence of the model, not an engine bug)."""
    machine = EngineMachine(model_env)
    try:
        machine.create("A", "rate(1 minute)", "flaky", 1, (5,), "high", "run_once", "skip")
        job_id = machine.labels["A"]
        machine.work("A")
        machine.user("A", "pause")
        machine.advance("600s")
        machine.user("A", "trigger")
        assert machine.answer is not None
        assert ("retry", "runs_now") in [(e.subject, e.fate) for e in machine.answer.effects]
        machine.user("A", "trigger")
        assert ("trigger", "waits") in [(e.subject, e.fate) for e in machine.answer.effects]
        machine.work("A", "oldest")
        machine.work("A", "newest")
        machine.work("A", "newest")
        job = machine.checker.get(job_id)
        assert (job.attempt, job.paused) == (1, True)
        runs, _ = machine.checker.runs(job_id, 10, None)
        assert [run.attempt for run in runs].count(1) == 2
        machine.intent_holds()
        machine.triggers_kept()
    finally:
        machine.teardown()
