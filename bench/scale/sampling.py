"""Which deliveries run the real worker in a sampled run, and whether its stand-ins kept its figures.

A run of a million deliveries due at once is too long to give every one of them the real worker
(about 3 ms of the host's CPU each), so a sampled run gives the real worker a stratified sample and
a stand-in (bench/scale/standins.py) the rest. The tick runs for every row whatever the sampling.

Strata: a delivery of the one path a stand-in knows (a one-off job's first attempt, its fence
holding, its target answering) is sampled within its priority, whether it came early (the worker
then waits for its instant first) and whether its fence finds the lease too short (a late delivery:
the fence then writes a fresh lease in a second request): those whose job id hashes to one in
`every` run the real worker (EARLY_DENSER times as many in the early strata, up to one in five), a
choice blind to when a delivery comes. Every other delivery - a retry, a limit key's, a copy or
stale one, one held or more than the worker's wait early, a recurring job's - runs the real worker,
and is counted by why.

The check: per stratum, the sample's mean figures a delivery (the CPU its tasks were charged, the
write units it used on the table and on the indexes, how long it took from its start, or from its
instant when it came early, to its end and to its target's call) against the stand-ins'. A figure
more than `tolerance` apart and further than chance explains (CHANCE standard errors of the two
means), or a sampled delivery of that path whose items are not those the stand-in would have
written for it, is an error in the report (`sampling.errors`, and `error`), and
the run fails. Strata with fewer than MIN_COMPARED sampled deliveries are reported, not compared.
"""

from __future__ import annotations

import json
import math
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench.scale import standins
from bench.scale.dynamo import Charge
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.worker import Outcome, Worker
from sundial.shared.store import items

if TYPE_CHECKING:
    from bench.scale.sqs import Queue
    from bench.scale.world import World

DUE_FOR_SAMPLING = 200_000  # due at once or over the run, from which a run samples unless told
EVERY = 50
TOLERANCE = 0.05
# A figure apart by more than the tolerance drifted only when chance is unlikely to have put it there:
# further apart than this many standard errors of the two means (under throttling a delivery's time
# varies with its retries' random backoff, and a few hundred sampled deliveries are far from exact).
CHANCE = 3.0
MIN_COMPARED = 30
# The early strata are a small share of a burst (8,800 of a million due at once, the deliveries that
# beat their instant): at one in 50 each compared a few dozen deliveries, whose skewed durations
# moved their mean past the check by chance, one way in one run and the other way in the next
# (docs/operations.md). They are sampled this many times more densely.
EARLY_DENSER = 10
EARLY_EVERY_AT_MOST = 5
FIGURES = ("cpu_s", "table_wcu", "index_wcu", "duration_s", "to_call_s")

EARLY = "early"
RENEWS = "lease renewed"
REAL = "real"
SAMPLE = "sample"
STAND_IN = "stand-in"


@dataclass
class Meter:
    """What one delivery spent: its tasks' CPU (bench/scale/runtime.py adds it), the write units its
    requests consumed, and, for a sampled one, each write's item before and after."""

    stratum: str
    cpu_s: float = 0.0
    table_wcu: float = 0.0
    index_wcu: float = 0.0
    called_at: float | None = None
    writes: list[tuple[Any, Any, Any]] | None = None


@dataclass
class Tally:
    count: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(FIGURES, 0.0))
    squares: dict[str, float] = field(default_factory=lambda: dict.fromkeys(FIGURES, 0.0))

    def add(self, figures: dict[str, float]) -> None:
        self.count += 1
        for name, value in figures.items():
            self.sums[name] += value
            self.squares[name] += value * value

    def means(self) -> dict[str, float]:
        return {name: total / self.count for name, total in self.sums.items()} if self.count else {}

    def error_of_mean(self, name: str) -> float:
        """The standard error of the mean of `name`: how far chance alone moves it."""
        if self.count < 2:
            return 0.0
        mean = self.sums[name] / self.count
        variance = max(0.0, self.squares[name] / self.count - mean * mean) * self.count / (self.count - 1)
        return math.sqrt(variance / self.count)


@dataclass
class Sampler:
    every: int = EVERY
    tolerance: float = TOLERANCE
    retention_seconds: int = 0
    seen: Counter[str] = field(default_factory=Counter)
    sample: dict[str, Tally] = field(default_factory=dict)
    stand_in: dict[str, Tally] = field(default_factory=dict)
    real_by_reason: Counter[str] = field(default_factory=Counter)
    not_as_sampled: Counter[str] = field(default_factory=Counter)
    items_checked: int = 0
    items_differing: list[str] = field(default_factory=list)

    def way(self, message: JobMessage, item: Any, now_ms: int) -> tuple[str, Meter | None]:
        """REAL (not the stand-in's path), SAMPLE (its path, run real) or STAND_IN, and the meter
        of a delivery of the stand-in's path."""
        if not standins.takes(message, item, now_ms):
            self.real_by_reason[_reason(message, item, now_ms)] += 1
            return REAL, None
        stratum = _stratum(message, item, now_ms)
        self.seen[stratum] += 1
        if zlib.crc32(message.job_id.encode()) % self.every_in(stratum) == 0:
            return SAMPLE, Meter(stratum, writes=[])
        return STAND_IN, Meter(stratum)

    def every_in(self, stratum: str) -> int:
        """One delivery in this many of `stratum` runs the real worker."""
        if EARLY not in stratum.split("/"):
            return self.every
        # Never all of them: a sample, not the real worker instead of the stand-ins.
        return min(self.every, max(EARLY_EVERY_AT_MOST, self.every // EARLY_DENSER))

    def done(
        self,
        way: str,
        message: JobMessage,
        meter: Meter,
        started: float,
        ended: float,
        outcome: Outcome | None,
    ) -> None:
        stratum = meter.stratum
        if way == SAMPLE and outcome is not Outcome.SUCCEEDED:
            self.not_as_sampled[str(outcome)] += 1
            return
        if way == STAND_IN and outcome is not Outcome.SUCCEEDED:
            self.not_as_sampled[f"stand-in {outcome}"] += 1
            return
        figures = {
            "cpu_s": meter.cpu_s,
            "table_wcu": meter.table_wcu,
            "index_wcu": meter.index_wcu,
            "duration_s": ended - started,
            "to_call_s": (meter.called_at if meter.called_at is not None else ended) - started,
        }
        tallies = self.sample if way == SAMPLE else self.stand_in
        tallies.setdefault(stratum, Tally()).add(figures)
        if way == SAMPLE and meter.writes is not None:
            self._check_items(message, meter.writes)

    def _check_items(self, message: JobMessage, writes: list[tuple[Any, Any, Any]]) -> None:
        """The sampled delivery's writes against what a stand-in writes from the same item, with
        the sample's own instants and write ids."""
        self.items_checked += 1
        job = [w for w in writes if w[0][1] == "JOB"]
        runs = [w for w in writes if w[0][1] != "JOB"]
        # A fence whose condition on the lease failed wrote nothing; the next one wrote a fresh lease.
        renewed = len(job) == 3 and job[0][1] == job[0][2]
        if renewed:
            job = job[1:]
        if len(job) != 2 or len(runs) != 1:
            self._differs(message, f"{len(job)} writes of the job and {len(runs)} others, not 2 and 1")
            return
        (_, before, running), (_, _, ended), (_, _, kept) = job[0], job[1], runs[0]
        started = int(running["started_at"]["N"])
        lease = standins.fresh_lease(before, started, message.timeout_seconds)
        if renewed != (lease is not None):
            self._differs(
                message, f"the fence {'renewed' if renewed else 'kept'} the lease, not as the stand-in"
            )
            return
        fenced = standins.fenced(before, started, running["worker"]["S"], running["write_id"]["S"], lease)
        last_run = json.loads(ended.get("last_run", {}).get("S", "{}"))
        run = standins.summary(running, int(last_run.get("finished_at", 0)))
        expected = [
            ("fence", fenced, running),
            ("settle", standins.settled(running, run, int(ended["updated_at"]["N"])), ended),
            ("history", standins.history(running, run, self.retention_seconds), kept),
        ]
        for name, mine, theirs in expected:
            if mine != theirs:
                names = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
                self._differs(message, f"the {name} differs in {names}")
                return

    def _differs(self, message: JobMessage, what: str) -> None:
        if len(self.items_differing) < 10:
            self.items_differing.append(f"job {message.job_id}: {what}")
        else:
            self.items_differing[-1] = f"... and more ({self.items_checked} checked)"

    def errors(self) -> list[str]:
        errors = [f"a sampled delivery's items are not the stand-in's: {d}" for d in self.items_differing]
        for stratum, stood in sorted(self.stand_in.items()):
            sampled = self.sample.get(stratum)
            if sampled is None or sampled.count < MIN_COMPARED or not stood.count:
                continue
            mine, theirs = stood.means(), sampled.means()
            for name in FIGURES:
                apart = _apart(mine[name], theirs[name])
                chance = math.hypot(stood.error_of_mean(name), sampled.error_of_mean(name))
                if apart > self.tolerance and abs(mine[name] - theirs[name]) > CHANCE * chance:
                    errors.append(
                        f"{stratum}: the stand-ins' {name} a delivery ({mine[name]:.6g}) is {apart:.1%} "
                        f"from the sample's ({theirs[name]:.6g}, {sampled.count} deliveries), over "
                        f"{self.tolerance:.0%}"
                    )
        return errors

    def report(self) -> dict[str, Any]:
        strata = {
            stratum: {
                "sample": {"deliveries": tally.count, **_rounded(tally.means())},
                "stand_in": {
                    "deliveries": self.stand_in[stratum].count if stratum in self.stand_in else 0,
                    **_rounded(self.stand_in[stratum].means() if stratum in self.stand_in else {}),
                },
            }
            for stratum, tally in sorted(self.sample.items())
        }
        return {
            "every": self.every,
            "every_early": self.every_in(f"any/{EARLY}"),
            "tolerance": self.tolerance,
            "strata": strata,
            "real_by_reason": dict(sorted(self.real_by_reason.items())),
            "not_as_sampled": dict(sorted(self.not_as_sampled.items())),
            "items_checked": self.items_checked,
            "errors": self.errors(),
        }


def _stratum(message: JobMessage, item: Any, now_ms: int) -> str:
    """The priority; whether the delivery came before its instant (the worker then waits in its own
    task first, a segment more); and whether its fence will find the lease too short and write a
    fresh one (a request more, and the index row moved)."""
    fenced_at = max(now_ms, message.starts_after)
    renews = standins.lease_too_short(item, fenced_at, message.timeout_seconds)
    when = EARLY if message.starts_after > now_ms else "on time"
    return f"{message.priority.value}/{when}{'/' + RENEWS if renews else ''}"


def _apart(mine: float, theirs: float) -> float:
    if theirs == mine:
        return 0.0
    return abs(mine - theirs) / max(abs(theirs), 1e-12)


def _rounded(means: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 6) for name, value in means.items()}


def _reason(message: JobMessage, item: Any, now_ms: int) -> str:
    """Why a delivery is not the stand-in's path (the first reason that holds)."""
    if item is None:
        return "no job"
    if message.limit_key is not None or "limit_key" in item:
        return "limit key"
    if (
        item.get("token", {}).get("S") != message.token
        or item.get("status", {}).get("S") not in standins.FENCED
    ):
        return "copy or stale"
    if message.starts_after > now_ms or message.held_since is not None:
        return "early or held"
    if item.get("attempt", {}).get("N") != "0":
        return "retry"
    return "other (recurring, failing target, ...)"


def report_of(sampler: Sampler | None) -> dict[str, Any]:
    """A sampled run's strata and check for its report; a drift fails the run, told in `error`."""
    if sampler is None:
        return {}
    figures = sampler.report()
    out: dict[str, Any] = {"sampling": figures}
    if figures["errors"]:
        out["error"] = "the stand-ins drifted from the real worker's sample: " + "; ".join(figures["errors"])
    return out


def sampling_for(due: int, every: int | None) -> int:
    """One real delivery in this many of the stand-in's path, 0 for none sampled (all real)."""
    if every is not None:
        return every
    return EVERY if due >= DUE_FOR_SAMPLING else 0


def install(world: World, every: int) -> None:
    """Runs the real worker on one delivery in `every` of the stand-in's path, and meters both."""
    world.sampler = Sampler(every=every, retention_seconds=world.store.retention_seconds)
    dynamodb, sim = world.aws.dynamodb, world.sim

    def consumed(charge: Charge, writing: bool) -> None:
        task = sim.current()
        if writing and task is not None and task.meter is not None:
            task.meter.table_wcu += charge.table
            task.meter.index_wcu += sum(charge.indexes.values())

    def written(key: Any, before: Any, after: Any) -> None:
        task = sim.current()
        if task is not None and task.meter is not None and task.meter.writes is not None:
            task.meter.writes.append((key, before, after))

    dynamodb.on_consume, dynamodb.on_write = consumed, written


def sampled(
    world: World,
    worker: Worker,
    queue: Queue,
    message: Any,
    job_message: JobMessage,
    deadline_ms: int,
    failed: list[Any],
) -> None:
    """One delivery of a sampled run: the real worker or a stand-in, metered either way. Runs in the
    delivery's own task, so that its CPU segments are the real worker's kinds."""
    sampler, sim = world.sampler, world.sim
    assert sampler is not None
    item = world.aws.dynamodb.table.item((items.job_pk(job_message.job_id), "JOB"))
    way, meter = sampler.way(job_message, item, world.clock.now_ms())
    task = sim.current()
    assert task is not None
    task.meter = meter
    # An early delivery waits for its instant first, as long as it came early: its figures run from
    # the instant.
    started = max(sim.time(), job_message.starts_after / 1000)
    outcome: Outcome | None = None
    try:
        if way == STAND_IN:
            standins.StandIn(world, job_message, deadline_ms).run()
            outcome = Outcome.SUCCEEDED
        else:
            outcome = worker.process(job_message, deadline_ms).outcome
        world.count(outcome)
    except standins.LostFence:
        outcome = Outcome.DROPPED
        world.count(outcome)
    except Exception:
        failed.append(message)
        world.return_soon(queue, message, job_message)
    if meter is not None:
        task.meter = None
        sampler.done(way, job_message, meter, started, sim.time(), outcome)
