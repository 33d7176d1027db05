"""Creates a second, and how long `sundial jobs import` takes over 10 million jobs, on the model.

What runs is the project's own code on the virtual clock: the `sundial jobs import` command (its
file reading, keys and summary) with the real SundialClient and its retries, whose transport hands
each request to the model of API Gateway (the account's and the stage's token buckets, answering 429
when empty, as API Gateway does) and then to an api function invocation: a Lambda environment of
the api function's memory (bench/scale/world.py's LambdaFunction: one of the account's concurrent
executions, new environments at the function scaling rate, a cold one paying its module's import;
a throttled invocation is answered 500 by API Gateway), running the POST /jobs/batch body's parse,
shared.api.batch.create_batch with JobService and JobStore (each item's reservation and put, side by
side) and the answer's JSON, its CPU charged at that memory's share of a vCPU. DynamoDB is the
model's (bench/scale/dynamo.py): per-partition limits on the table and on every index an item's
writes touch (the sharded listing indexes and the due index), and the table's warm throughput.

The figure is the steady rate: jobs created between a quarter and three quarters of the run, over
the virtual time between; 10 million jobs at that rate give the import's length (the model does not
materialise 10 million items). Each importer imports a file of its own, as a file split in parts
would be, with the command's own requests in flight (`--in-flight`).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.scale import cpu, limits
from bench.scale.native import NativeTable
from bench.scale.runtime import GreenEvent, GreenExecutor, Sim, green
from bench.scale.world import LambdaFunction, Settings, World
from sundial.client import SundialClient
from sundial.client.transport import Answer
from sundial.commands import bulk as bulk_module
from sundial.commands.bulk import DEFAULT_IN_FLIGHT, import_jobs
from sundial.contract.bounds import BATCH_LIMIT as BATCH
from sundial.contract.bulk import JobBatch
from sundial.shared.clock import format_rfc3339
from sundial.shared.dispatch import Dispatcher
from sundial.shared.service import batch as batch_module
from sundial.shared.service.batch import create_batch
from sundial.shared.service.service import JobService
from sundial.shared.store import items

START_S = 1_893_488_400.0  # 2030-01-01T09:00:00Z
TEN_MILLION = 10_000_000
GOAL_PER_SECOND = 10_000
GOAL_MINUTES = 20
URL = "https://abc123.execute-api.us-east-1.amazonaws.com/prod"
TOO_MANY = b'{"message":"Too Many Requests"}'


@dataclass
class Bucket:
    """API Gateway's token bucket: `burst` tokens at most, refilled at `rate` a second."""

    rate: float
    burst: float
    tokens: float = 0.0
    at: float = 0.0

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass
class Counts:
    requests: int = 0
    throttled: int = 0  # 429 from API Gateway
    failed: int = 0  # 5xx: the function raised
    lambda_throttled: int = 0  # 500: Lambda throttled the api function (the account or its scaling)
    cold_starts: int = 0
    peak_invocations: int = 0
    created: list[tuple[float, int]] = field(default_factory=list)  # (virtual s, jobs answered made)


class Api:
    """API Gateway in front of the api function, as a SundialClient transport."""

    def __init__(
        self, sim: Sim, service: JobService, rate: float, burst: float, function: LambdaFunction
    ) -> None:
        self.sim, self.service, self.function = sim, service, function
        self.buckets = [
            Bucket(limits.ACCOUNT_API_RATE.value, limits.ACCOUNT_API_BURST.value),
            Bucket(rate, burst),
        ]
        for bucket in self.buckets:
            bucket.tokens, bucket.at = bucket.burst, sim.now
        self.counts = Counts()

    def __call__(self, method: str, url: str, headers: Any, body: bytes | None, timeout: float, /) -> Answer:
        rtt = limits.CLIENT_RTT_S.value
        self.sim.sleep(rtt / 2)
        self.counts.requests += 1
        now = self.sim.time()
        if not all(bucket.take(now) for bucket in self.buckets):
            self.counts.throttled += 1
            self.sim.sleep(rtt / 2)
            return Answer(429, {"content-type": "application/json"}, TOO_MANY, "Too Many Requests")
        self.sim.sleep(limits.APIGW_S.value)
        status, answer = self._invoke(body or b"{}")
        self.sim.sleep(limits.APIGW_S.value + rtt / 2)
        if status == 200:
            # A job made by a request that failed later (a 502) is answered by its retry as there.
            answered = json.loads(answer)
            self.counts.created.append((self.sim.time(), answered["created"] + answered["existing"]))
        return Answer(status, {"content-type": "application/json"}, answer)

    def _invoke(self, body: bytes) -> tuple[int, bytes]:
        started = self.function.start()
        if started is None:
            self.counts.lambda_throttled += 1
            return int(limits.API_THROTTLED_STATUS.value), b'{"message":"Internal server error"}'
        env, cold = started
        self.counts.cold_starts += cold
        self.counts.peak_invocations = max(self.counts.peak_invocations, self.function.running)
        ended, box = GreenEvent(), {}

        def run() -> None:
            try:
                if cold:
                    self.sim.sleep(self.function.cold_start_s(), charge=False)
                jobs = JobBatch.model_validate_json(body).jobs
                box["answer"] = create_batch(self.service, jobs).model_dump_json().encode()
            except Exception as exc:  # the function failed: API Gateway answers 502
                box["error"] = repr(exc).encode()
            finally:
                ended.set()

        self.sim.spawn(run, env=env)
        finished = ended.wait(limits.API_TIMEOUT_S.value)
        self.function.end(env)
        if not finished or "error" in box:
            self.counts.failed += 1
            return (502 if finished else 504), b'{"message":"Internal server error"}'
        return 200, box["answer"]


@dataclass(frozen=True)
class _Connection:
    """What `sundial jobs import` asks its connection for: a client."""

    api: Api

    def client(self) -> SundialClient:
        return SundialClient(URL, sign=False, transport=self.api, sleep=self.api.sim.sleep)


@dataclass(frozen=True)
class Imports:
    name: str
    importers: int
    jobs_each: int
    stage_rate: float = limits.STAGE_API_RATE.value
    stage_burst: float = limits.STAGE_API_BURST.value
    settings: dict[str, str] = field(default_factory=dict)
    in_flight: int = DEFAULT_IN_FLIGHT  # each import's --in-flight


def _file(folder: Path, importer: int, count: int) -> Path:
    """A JSON Lines file of one-off jobs due a day after the run, all at the default priority."""
    path = folder / f"jobs-{importer}.jsonl"
    run_at = format_rfc3339(int((START_S + 86_400) * 1000))
    target = {"type": "http", "url": "https://jobs.example.com/ok/imported"}
    lines = (
        json.dumps({"name": f"imported-{importer}-{n}", "run_at": run_at, "target": target})
        for n in range(count)
    )
    path.write_text("\n".join(lines) + "\n")
    return path


@contextlib.contextmanager
def _quiet_and_green(sim: Sim) -> Iterator[None]:
    """The model's green threads for the batch's writers too; the command's progress bars and
    the unsealed-header warning of every create kept out of the report."""
    service_log = logging.getLogger("sundial.shared.service.service")
    level = service_log.level
    service_log.setLevel(logging.ERROR)
    pools = batch_module.ThreadPoolExecutor, bulk_module.ThreadPoolExecutor
    batch_module.ThreadPoolExecutor = GreenExecutor  # type: ignore[misc,assignment]
    bulk_module.ThreadPoolExecutor = GreenExecutor  # type: ignore[misc,assignment]
    try:
        with green(sim), contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        batch_module.ThreadPoolExecutor, bulk_module.ThreadPoolExecutor = pools  # type: ignore[misc]
        service_log.setLevel(level)


def run(imports: Imports) -> dict[str, Any]:
    """The imports' report, their CPU charged from the committed table (bench/scale/cpu.py), so that
    a run repeats on any machine; with the setting `cpu=measured`, as this host measures it."""
    report, _ = _simulate(imports)
    return report


def measure_cpu(imports: Imports) -> dict[str, list[float]]:
    """Each kind of segment's count and CPU seconds, as this host measured them over the imports."""
    _, sim = _simulate(replace(imports, settings={**imports.settings, "cpu": "measured"}))
    return sim.cpu.measured


def _simulate(imports: Imports) -> tuple[dict[str, Any], Sim]:
    settings = Settings()
    for key, value in imports.settings.items():
        settings.set(key, value)
    sim = Sim(START_S, cpu=cpu.committed() if settings.cpu == "table" else None)
    exits: list[int] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sundial-scale-import-") as temp, _quiet_and_green(sim):
        world = World(sim, settings)
        service = JobService(
            world.store, Dispatcher(*world.dispatch_args), world.clock, allow_private_targets=False
        )
        api = Api(sim, service, imports.stage_rate, imports.stage_burst, world.functions["api"])
        command = import_jobs.callback.__wrapped__  # type: ignore[union-attr]

        def one_import(path: Path) -> None:
            try:
                exits.append(command(connection=_Connection(api), file=path, in_flight=imports.in_flight))
            except Exception as exc:  # the command gave up (throttled after its retries, say)
                exits.append(-1)
                errors.append(repr(exc)[:200])

        for n in range(imports.importers):
            # Started a few ms apart, as a shell loop would start them.
            sim.spawn(one_import, _file(Path(temp), n, imports.jobs_each), at=START_S + n * 0.005)
        started = time.monotonic()
        sim.run()
        wall = time.monotonic() - started
    report = _report(imports, api.counts, exits, world, wall)
    return report | {"import_errors": errors[:5], "cpu": sim.cpu.summary()}, sim


def _report(imports: Imports, counts: Counts, exits: list[int], world: World, wall: float) -> dict[str, Any]:
    created = sum(n for _, n in counts.created)
    rate = _steady_rate(counts.created)
    ended = counts.created[-1][0] - START_S if counts.created else None
    return {
        "name": imports.name,
        "importers": imports.importers,
        "in_flight": imports.in_flight,
        "jobs": imports.importers * imports.jobs_each,
        "created": created,
        "stage": {"rate": imports.stage_rate, "burst": imports.stage_burst},
        "settings": imports.settings,
        "imports_exited": {"ok": exits.count(0), "other": len(exits) - exits.count(0)},
        "virtual_seconds": None if ended is None else round(ended, 2),
        "creates_per_second": round(rate, 1),
        "ten_million_minutes": round(TEN_MILLION / rate / 60, 1) if rate else None,
        "requests": counts.requests,
        "throttled_429": counts.throttled,
        "failed_5xx": counts.failed,
        "lambda_throttled": counts.lambda_throttled,
        "cold_starts": counts.cold_starts,
        "peak_invocations": counts.peak_invocations,
        "dynamodb_throttles": {
            "partition": world.aws.dynamodb.throttles.partition,
            "table": world.aws.dynamodb.throttles.table,
            "partition_by_key": world.aws.dynamodb.throttles.by_key,
        },
        "dynamodb_calls": dict(world.aws.dynamodb.calls),
        "job_items_in_table": _job_items(world),
        "wall_seconds": round(wall, 1),
    }


def _job_items(world: World) -> int | None:
    table = world.aws.dynamodb.table
    if not isinstance(table, NativeTable):
        return None
    return sum(1 for rows in table.items.values() for sk in rows if sk == items.JOB_SK)


def _steady_rate(created: list[tuple[float, int]]) -> float:
    """Jobs created between a quarter and three quarters of all, over the time between."""
    total = sum(n for _, n in created)
    if total == 0:
        return 0.0
    done, start, end, counted = 0, None, None, 0
    for at, n in created:
        done += n
        if start is None and done >= total / 4:
            start, counted = at, 0
        elif start is not None:
            counted += n
        if done >= 3 * total / 4:
            end = at
            break
    if start is None or end is None or end <= start:
        return total / max(1e-9, created[-1][0] - START_S)
    return counted / (end - start)


# --- `make scale`'s goals ---------------------------------------------------------------------------

# The stage's limits raised for bulk loads (sundial:apiRateLimit, sundial:apiBurstLimit): 300 imports
# side by side send about 100 requests a second, the default's whole rate. And 32 due shards a
# priority (sundial:dueShards): an import at one priority puts every job in its priority's due
# shards (1,000 write units a second each); 8 of them held it to about 7,500 creates a second, and
# with 16 one lone import in four met enough throttles to miss its 20 minutes.
RECOMMENDED_STAGE = (200.0, 400.0)
RECOMMENDED_DUE_SHARDS = "32"
SIDE_BY_SIDE = 300
# One import alone: a request of 100 creates takes the api function about 2.3 s, so 10,000 creates a
# second want about 230 requests in flight.
ONE_IMPORT_IN_FLIGHT = 250


@dataclass(frozen=True)
class Goal:
    imports: Imports
    says: str

    def holds(self, report: dict[str, Any]) -> bool:
        minutes = report["ten_million_minutes"]
        made = report["created"] == report["job_items_in_table"] == report["jobs"]
        ok = report["imports_exited"]["other"] == 0 and made
        if self.imports.importers == 1:
            return ok and minutes is not None and minutes <= GOAL_MINUTES
        fast = report["creates_per_second"] >= GOAL_PER_SECOND
        return ok and fast and minutes is not None and minutes <= GOAL_MINUTES


def goals(recommended: dict[str, str]) -> list[Goal]:
    rate, burst = RECOMMENDED_STAGE
    return [
        Goal(
            Imports(
                "import-one",
                1,
                60_000,
                rate,
                burst,
                {**recommended, "due_shards": RECOMMENDED_DUE_SHARDS},
                in_flight=ONE_IMPORT_IN_FLIGHT,
            ),
            f"one `sundial jobs import --in-flight {ONE_IMPORT_IN_FLIGHT}`, recommended settings: "
            f"10M jobs in <= {GOAL_MINUTES} min",
        ),
        Goal(
            Imports(
                "creates-recommended",
                SIDE_BY_SIDE,
                200,
                rate,
                burst,
                {**recommended, "due_shards": RECOMMENDED_DUE_SHARDS},
            ),
            f">= {GOAL_PER_SECOND:,} creates a second, 10M jobs in <= {GOAL_MINUTES} min: "
            f"{SIDE_BY_SIDE} imports side by side, recommended settings, "
            f"stage {rate:.0f}/s (burst {burst:.0f}), {RECOMMENDED_DUE_SHARDS} due shards",
        ),
    ]


def print_goal(goal: Goal, scale: float) -> dict[str, Any]:
    imports = goal.imports
    if scale != 1:
        alone = imports.importers == 1  # one import scales its file and its requests in flight
        imports = Imports(
            imports.name,
            max(1, int(imports.importers * scale)),
            max(BATCH, int(imports.jobs_each * scale)) if alone else imports.jobs_each,
            imports.stage_rate,
            imports.stage_burst,
            imports.settings,
            max(1, int(imports.in_flight * scale)) if alone else imports.in_flight,
        )
    report = run(imports)
    print(f"== {imports.name}  (scale {scale:g}, {report['wall_seconds']:.0f} s wall)")
    print(f"   goal:     {goal.says}")
    print(
        f"   measured: {report['creates_per_second']:,.0f} creates/s steady; 10M in "
        f"{report['ten_million_minutes']} min; {report['created']:,} of {report['jobs']:,} created by "
        f"{report['importers']} imports in {report['virtual_seconds']} s"
    )
    print(
        f"             requests {report['requests']}, 429s {report['throttled_429']}, "
        f"5xx {report['failed_5xx']}; "
        f"peak invocations {report['peak_invocations']}, cold starts {report['cold_starts']}; "
        f"DynamoDB throttles {json.dumps(report['dynamodb_throttles'])}"
    )
    print(f"   holds:    {'yes' if goal.holds(report) else 'NO'}", flush=True)
    return report
