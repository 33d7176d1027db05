"""The named mutations `make mutants` plants in sundial/shared/, one at a time: each a bug the model test
exists to find (docs/testing.md says why these are chosen by hand).

An edit finds its place by a semantic anchor, not by line numbers: a pattern that must occur exactly
once in the file (a function's `def`, a transition's event in the table), the scope it opens (the
function's body, or the table row's call), and a pattern inside that scope. When the code moved on
and the anchor or the pattern is gone, the mutation says so and stops: it no longer applies.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class MutationGone(Exception):
    """The code the mutation was written against is no longer there."""


@dataclass(frozen=True)
class Edit:
    path: str  # relative to the repository
    anchor: str  # a regex matching once in the file; its line opens the scope
    find: str  # a regex searched for in the scope (multiline); its first match is replaced
    replace: str | Callable[[re.Match[str]], str]

    def apply(self, root: Path) -> None:
        file = root / self.path
        text = file.read_text()
        anchors = list(re.finditer(self.anchor, text, re.MULTILINE))
        if len(anchors) != 1:
            found = "not found" if not anchors else f"found {len(anchors)} times"
            raise MutationGone(f"anchor {self.anchor!r} {found} in {self.path}")
        matched = anchors[0].group()
        start, end = _scope(text, anchors[0].start() + len(matched) - len(matched.lstrip()))
        scope = text[start:end]
        mutated, count = re.subn(self.find, self.replace, scope, count=1, flags=re.MULTILINE)
        if count == 0:
            raise MutationGone(f"{self.find!r} not found under anchor {self.anchor!r} in {self.path}")
        file.write_text(text[:start] + mutated + text[end:])


@dataclass(frozen=True)
class Mutation:
    name: str
    bug: str  # the bug it plants, in words
    edits: tuple[Edit, ...]
    # Why the model test cannot tell this mutant from the code (None: it must kill it).
    model_blind: str | None = None
    # A model mutation (edits in bench/scale, not sundial/shared): the `make scale` goals whose
    # reports it must change, each at the scale it runs at, since a goal its limit never binds in
    # measures nothing about that limit.
    scale_goals: tuple[tuple[str, float], ...] = ()

    @property
    def of_the_model(self) -> bool:
        return bool(self.scale_goals)

    def apply(self, root: Path) -> None:
        for edit in self.edits:
            edit.apply(root)


def _scope(text: str, offset: int) -> tuple[int, int]:
    """The span an anchor at `offset` opens: a `def`/`class` line's indented block, or else the
    innermost bracketed expression around it (a table row's `_row(...)` call)."""
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start : text.find("\n", offset)]
    if line.lstrip().startswith(("def ", "class ", "async def ")):
        indent = len(line) - len(line.lstrip())
        pos = text.find("\n", offset) + 1
        while pos < len(text):
            nxt = text.find("\n", pos)
            nxt = len(text) if nxt == -1 else nxt
            body = text[pos:nxt]
            closes_signature = body.lstrip().startswith((")", "]"))
            if body.strip() and len(body) - len(body.lstrip()) <= indent and not closes_signature:
                break
            pos = nxt + 1
        return line_start, min(pos, len(text))
    return _enclosing_brackets(text, offset)


def _enclosing_brackets(text: str, offset: int) -> tuple[int, int]:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    stack: list[int] = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type != tokenize.OP or token.string not in "()[]{}":
            continue
        at = starts[token.start[0] - 1] + token.start[1]
        if token.string in "([{":
            stack.append(at)
        elif stack:
            opened = stack.pop()
            if opened < offset < at:
                return opened, at + 1
    raise MutationGone(f"no bracketed expression around offset {offset}")


TABLE = "sundial/shared/lifecycle/table.py"
DECIDE = "sundial/shared/lifecycle/decide.py"
ACTIONS = "sundial/shared/lifecycle/actions.py"
LIMITS_GATE = "sundial/shared/limits/gate.py"
BACKFILL = "sundial/shared/lifecycle/backfill.py"
LEDGER = "sundial/shared/lifecycle/occurrences.py"
SCHEDULER = "sundial/shared/engine/scheduler.py"
TICK_SENDS = "sundial/shared/engine/tick_sends.py"


def drop_guard(event: str, guard: str) -> Edit:
    """The transition table's row for `event` without `guard` in its write's condition."""

    def without(match: re.Match[str]) -> str:
        guards = re.findall(r"G\.\w+", match.group())
        if f"G.{guard}" not in guards:
            raise MutationGone(f"the {event} row has no {guard} guard")
        kept = [name for name in guards if name != f"G.{guard}"]
        return "(" + "".join(f"{name}, " for name in kept).rstrip(" ") + ")"

    return Edit(TABLE, rf"\bEvent\.{event},", r"\((?:\s*G\.\w+\s*,?)+\s*\)", without)


def returns_nothing(path: str, function: str) -> Edit:
    """`function` returns an empty tuple as soon as its docstring ends: what it lists, it lists none of."""
    return Edit(path, rf"^\s*def {function}\(", r'^(\s+)"""(?:.|\n)*?"""\n', r"\g<0>\1return ()\n")


def first_if_false(path: str, function: str) -> Edit:
    """The first `if` in `function` never taken."""
    return Edit(path, rf"^\s*def {function}\(", r"^(\s+)if .*:$", r"\1if False:")


MUTATIONS: tuple[Mutation, ...] = (
    # --- the five that the model test once missed, or could not check --------------------------
    Mutation(
        "settle-revision-guard",
        "a settle overwrites a cancel, pause or trigger acknowledged while its attempt ran (the "
        "settle's revision guard dropped)",
        (drop_guard("SUCCEED", "REVISION"), drop_guard("FAIL", "REVISION")),
    ),
    Mutation(
        "fence-token-guard",
        "a stale or duplicate delivery starts an attempt (the fence's token check dropped)",
        (drop_guard("FENCE", "TOKEN"),),
    ),
    Mutation(
        "own-write-unrecognised",
        "a write applied with its answer lost is taken for someone else's (a write's own write_id not "
        "recognised)",
        (
            first_if_false("sundial/shared/store/writes.py", "_own_or_stale"),
            first_if_false("sundial/shared/store/writes.py", "_recognise"),
        ),
    ),
    Mutation(
        "patch-revives-finished-one-off",
        "a PATCH of run_at puts a succeeded one-off back in the schedule",
        (
            Edit(
                ACTIONS,
                r"^def timing_change_refusal\(",
                r"(if job\.status is JobStatus\.SUCCEEDED:\n\s+return) .*$",
                r"\1 None  # the one-off may take new timing",
            ),
            Edit(
                ACTIONS,
                r"^def replaces_occurrence\(",
                r"return job\.status in \(JobStatus\.PENDING, JobStatus\.QUEUED\)",
                "return job.status is JobStatus.SUCCEEDED or job.status in (JobStatus.PENDING, "
                "JobStatus.QUEUED)",
            ),
        ),
    ),
    Mutation(
        "trigger-dropped",
        "a trigger that must wait behind a running attempt is acknowledged but not counted",
        (
            Edit(
                "sundial/shared/store/jobs.py",
                r"^\s*def trigger\(",
                r"job\.triggers \+ 1",
                "job.triggers",
            ),
        ),
    ),
    Mutation(
        "patch-drops-trigger",
        "a PATCH of timing replaces a triggered run not yet started with the new first occurrence",
        (Edit(ACTIONS, r"^def replaces_occurrence\(", r" and not job\.extra_run", ""),),
    ),
    # --- one per guard of the transition table ---------------------------------------------------
    Mutation(
        "claim-due-guard",
        "a tick claims a job whose due row changed since it read it (paused, moved): DUE_UNCHANGED "
        "dropped from the claim",
        (drop_guard("CLAIM", "DUE_UNCHANGED"),),
    ),
    Mutation(
        "reclaim-revision-guard",
        "a reclaim overwrites a cancel or pause that came after the tick read the job: REVISION "
        "dropped from the reclaim",
        (drop_guard("RECLAIM", "REVISION"),),
    ),
    Mutation(
        "settle-token-guard",
        "a zombie attempt, whose lease was reclaimed, settles over its successor: TOKEN dropped from "
        "the settle",
        (drop_guard("SUCCEED", "TOKEN"), drop_guard("FAIL", "TOKEN")),
    ),
    Mutation(
        "cancel-version-guard",
        "a cancel decided on a running attempt writes its flag after that attempt settled: VERSION "
        "dropped from the cancel",
        (drop_guard("CANCEL", "VERSION"),),
    ),
    Mutation(
        "pause-version-guard",
        "a pause decided on a running attempt writes its flag after that attempt settled: VERSION "
        "dropped from the pause",
        (drop_guard("PAUSE", "VERSION"),),
    ),
    Mutation(
        "create-absent-guard",
        "a create overwrites a job with the same id: ABSENT dropped from the create's put",
        (
            Edit(
                "sundial/shared/store/jobs.py",
                r"^\s*def _put_new\(",
                r"x\.NOT_EXISTS",
                '"attribute_not_exists(#pk) OR attribute_exists(#pk)"',
            ),
        ),
    ),
    Mutation(
        "lease-expired-guard",
        "a tick reclaims or resends a lease that has not run out: LEASE_EXPIRED dropped",
        (drop_guard("RECLAIM", "LEASE_EXPIRED"), drop_guard("RESEND", "LEASE_EXPIRED")),
        model_blind="the due key embeds the lease's end, so DUE_UNCHANGED, in the same rows, refuses "
        "every write this guard refuses: an equivalent mutant",
    ),
    # --- limits per key ---------------------------------------------------------------------------
    Mutation(
        "slot-never-expires",
        "a slot outlives its lease: a vanished worker's holder counts for ever, and its key's other "
        "jobs wait behind it",
        (Edit(LIMITS_GATE, r"^\s*def live_holders\(", r"end >= now_ms and ", ""),),
    ),
    Mutation(
        "slot-kept-at-settle",
        "a settle does not give its attempt's slot back: the key stays full until the lease ends",
        (
            Edit(
                "sundial/shared/engine/worker.py",
                r"^\s*def finish\(",
                r"^(\s+)self\._return_slot\(.*\)$",
                r"\1pass",
            ),
        ),
    ),
    Mutation(
        "slot-lease-not-the-jobs",
        "a fence keeps the lease its message implies without checking that the job has it: the slot "
        "ends at another instant than the attempt's lease",
        (
            Edit(
                "sundial/shared/store/worker_writes.py",
                r"^\s*def _fence_taking\(",
                r"extra\.append\(x\.LEASE_IS_KEPT\)",
                "pass",
            ),
        ),
        model_blind="only a job whose lease is not the one its message implies tells it apart: one "
        "with a limit key and a 30 s timeout, claimed by a tick after its create's send was refused "
        "and delivered on time, which the search rarely puts together within this budget "
        "(tests/model/test_limit_machine.py's sequence of it, and tests/adapter/test_limits.py, kill it)",
    ),
    Mutation(
        "limit-one-over",
        "one more attempt starts than the key's free slots and tokens allow",
        (Edit(LIMITS_GATE, r"^def admit\(", r"if capacity > ahead:", "if capacity + 1 > ahead:"),),
    ),
    # --- every instant accounted for ---------------------------------------------------------------
    Mutation(
        "resume-records-nothing",
        "a resume passes the paused instants over without recording them: the ledger shows them ran",
        (returns_nothing(ACTIONS, "_passed_over_while_paused"),),
    ),
    Mutation(
        "settle-records-no-overlap",
        "a settle passes over the instants that fell due while its attempt ran (or before it started) "
        "without recording them: the ledger shows them ran, and missed does not count them",
        (returns_nothing(DECIDE, "_passed_over_after"),),
    ),
    Mutation(
        "catch-up-records-no-misfire",
        "the tick's catch-up of a missed occurrence passes instants over without recording them",
        (Edit(DECIDE, r"^def caught_up\(", r"skipped = passed_over\(.*\)$", "skipped = ()"),),
    ),
    Mutation(
        "include-skipped-past-the-series",
        "a backfill including skipped instants takes them up to now, not only behind where the job's "
        "series stands",
        (Edit(BACKFILL, r"^def skipped_to_run\(", r", series_position\(job\)\)", ")"),),
        model_blind="every write that records a stretch moves the series past it, so the stretches a "
        "backfill includes all lie behind where the series stands; the bound matters only for the "
        "instants a calendar excludes ahead of a late series, and the model's jobs have no calendar "
        "(tests/unit/test_occurrence_ledger.py kills it)",
    ),
    # --- the tick's sent marks ---------------------------------------------------------------------
    Mutation(
        "mark-before-send",
        "the tick records a chunk's ahead rows as sent when it takes them, and writes its marks before "
        "it sends them: a tick killed, stopped or refused before the send leaves rows no tick sends",
        (
            Edit(SCHEDULER, r"^\s*def take\(", r"if taken is None or taken\.claimed:", "if True:"),
            Edit(
                SCHEDULER,
                r"^\s*def _take_all\(",
                r"^(\s+)senders\.send\(outgoing\)$",
                r"\1self._mark_sent(pool, marks, report)\n\1senders.send(outgoing)",
            ),
        ),
    ),
    Mutation(
        "mark-past-unsent",
        "a shard's sent mark moves to the tick's horizon past ahead rows whose messages were not sent "
        "(left at the deadline, or refused)",
        (Edit(TICK_SENDS, r"^\s*def _mark\(", r"if first == len\(progress\.positions\):", "if True:"),),
    ),
    Mutation(
        "ledger-skips-shown-ran",
        "the ledger ignores the records of what a write passed over: skipped stretches show as ran",
        (Edit(LEDGER, r"^def _skipped\(", r"for skip in skips:", "for skip in ():"),),
    ),
)


# --- the model's own limits -------------------------------------------------------------------------
# Planted in bench/scale, not sundial/shared: each drops one limit of AWS the scale model enforces
# (bench/scale/limits.py), and must change the `make scale` goals it names (tests/mutants/model.py).
DYNAMO = "bench/scale/dynamo.py"
WORLD = "bench/scale/world.py"

MODEL_MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "partition-limit-dropped",
        "a partition key value serves any reads and writes a second (its 3,000 read and 1,000 write "
        "units dropped)",
        (Edit(DYNAMO, r"^def partition_has_room\(", r"return reads / .*$", "return True"),),
        scale_goals=(("10k-at-once-one-due-shard", 1.0),),
    ),
    Mutation(
        "index-warm-dropped",
        "an index serves any writes and reads a second (its own warm throughput, raised by its peaks, "
        "dropped)",
        (Edit(DYNAMO, r"^\s*def _index_allows\(", r'^(\s+)"""(?:.|\n)*?"""\n', r"\g<0>\1return True\n"),),
        scale_goals=(("30k-at-once-indexes-not-warmed", 1.0),),
    ),
    Mutation(
        "table-quota-dropped",
        "warm throughput and doubled peaks are served past the per-table quota of 40,000 units a second",
        (Edit(DYNAMO, r"^def within_quota\(", r"return min\(units, quota\)", "return units"),),
        scale_goals=(("10k-at-once-table-capped-4000", 1.0),),
    ),
    Mutation(
        "account-concurrency-dropped",
        "every function's invocations find room whatever the account's concurrent executions (the "
        "account's limit, 1,000 unless a setting lowers it, not enforced)",
        (Edit(WORLD, r"^\s*def has_room\(", r"not ACCOUNT_CONCURRENCY_ENFORCED", "not False"),),
        scale_goals=(("10k-at-once-60-executions-free", 1.0),),
    ),
)
