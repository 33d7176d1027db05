"""What the occurrence ledger costs (docs/design.md, "Every instant accounted for"), counted at the
client boundary (bench/meter.py) on the in-process engine of bench/cost.py, on its simulated clock.

- Never paused: write requests and write units per execution of the cost part's recurring kinds,
  against what the same scenarios measured at the revision before the ledger (BEFORE_LEDGER), and
  the SKIP items those jobs wrote (none).
- A pause: a job running every minute, paused for an hour, a day and a week (each on a table and
  clock of its own, with a tick an hour through the pause), and one paused twice for an hour: the
  SKIP items each pause wrote, counted from the writes the engine sent, and what its resume cost.
- A page: GET /jobs/{id}/occurrences read page by page over the week-paused job's whole range (its
  runs, the week it was paused, its runs since), as a client pages it: read units per page. Then
  its first page again, with as many stretches kept before it as 30 days of retention keep of a job
  whose run overlaps the next instant every other minute (written as the store writes them).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bench import cost
from bench.harness import Aws, Repeated, Row, batch_write
from sundial.contract.occurrences import DEFAULT_OCCURRENCES_PAGE
from sundial.contract.vocabulary import SkipReason
from sundial.shared.clock import format_rfc3339
from sundial.shared.lifecycle.skips import Skip
from sundial.shared.service.occurrences import OccurrenceReader
from sundial.shared.store.skips import skip_item

MINUTE_MS = cost.MINUTE_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
SKIP = "SKIP"
DAILY_KIND = "recurring daily, sent by a tick"
NEVER_PAUSED_KINDS = (cost.PEAK_KIND, DAILY_KIND)
# Write requests and units a never-paused execution may add (docs/design.md: "writes nothing more").
GOAL_EXTRA = 0.05
# Per execution, failure history (second/failures/batch 10), by these scenarios (every run alike)
# before the ledger's first change (0d7af0c), as bench/results.json had them: the job's largest write
# 1,012 bytes, so each of its writes one unit. JUST_BEFORE: at aaab7c9, the revision before the
# ledger's writes, the job's new fields had taken its writes to 1,034 bytes: two units each.
BEFORE_LEDGER: dict[str, dict[str, float]] = {
    cost.PEAK_KIND: {"write_requests": 2.48, "write_units": 4.0008, "job_write_bytes": 1012},
    DAILY_KIND: {"write_requests": 2.8, "write_units": 4.0008, "job_write_bytes": 1012},
}
JUST_BEFORE: dict[str, dict[str, float]] = {
    cost.PEAK_KIND: {"write_requests": 2.48, "write_units": 5.6008, "job_write_bytes": 1034},
    DAILY_KIND: {"write_requests": 2.8, "write_units": 5.3341, "job_write_bytes": 1034},
}
# A resume of the same job before the ledger (aaab7c9), as this part counts it: one UpdateItem (the
# job under 1 KB, its due row back) and the read before it.
RESUME_BEFORE_LEDGER = {"write_requests": 1, "write_units": 2.0, "read_units": 1.0}


@dataclass(frozen=True)
class Size:
    """How much each measurement simulates; `make bench` takes FULL, the test a small one."""

    repetitions: int = 3  # runs of each never-paused scenario
    never_paused_jobs: int | None = None  # None: the cost part's own scenario, as measured before
    never_paused_minutes: int = 6
    never_paused_days: int = 3
    # Each job's pauses, one after another, each job on its own table and clock; the last job's
    # occurrences are read page by page.
    pauses: tuple[tuple[int, ...], ...] = ((HOUR_MS,), (DAY_MS,), (HOUR_MS, HOUR_MS), (7 * DAY_MS,))
    history_minutes: int = 5  # each job runs this long before its first pause
    paged_history_minutes: int = 300  # the last job: three full pages of runs, each with its history
    tick_every_ms: int = HOUR_MS  # through a pause
    after_minutes: int = 5  # the job runs this long after each resume
    page: int = DEFAULT_OCCURRENCES_PAGE
    kept_stretches: int = 30 * 24 * 30  # 30 days of one overlap every other minute


FULL = Size()


def measure(aws: Aws, size: Size = FULL) -> list[Row]:
    rows = never_paused(aws, size)
    runs = []
    for n, lengths in enumerate(size.pauses):
        paged = n == len(size.pauses) - 1
        history = size.paged_history_minutes if paged else size.history_minutes
        runs.append(_pause_run(aws.on_same_emulator(f"ledger-pause-{n}-"), lengths, history, size, paged))
    rows += pause_rows(runs)
    rows.append(page_row(runs[-1]["pages"], size))
    rows.append(crowded_row(runs[-1], size))
    return rows


# --- never paused ---------------------------------------------------------------------------------


def never_paused(aws: Aws, size: Size) -> list[Row]:
    """Each recurring kind of the cost part, failure history, `size.repetitions` times."""
    start_ms = _start_ms()
    fixed = cost.empty_tick(aws.on_same_emulator("ledger-empty-"), start_ms)
    rows: list[Row] = []
    skip_items: dict[str, int] = {}
    for n, scenario in enumerate(_never_paused_scenarios(size)):
        runs: list[dict[str, Any]] = []
        for k in range(size.repetitions):
            emulated = aws.on_same_emulator(f"ledger-never-{n}-{k}-")
            engine = cost.CostEngine(emulated, start_ms, cost.FAILURES)
            priced = _priced(engine, scenario, fixed, start_ms)
            written = _written(engine)
            stored = sum(
                len(engine.reader.skips(job_id, 0, engine.clock.now_ms() + 1)) for job_id in priced["job_ids"]
            )
            runs.append(
                {
                    "write_requests": sum(priced["detail"]["write_requests_per_execution"].values()),
                    "by_function": priced["detail"]["write_requests_per_execution"],
                    "write_units": priced["each"].write_units,
                    "executions": priced["detail"]["executions"],
                    "items_written": dict(written),
                    "skip_items_written": written[SKIP],
                    "skip_items_stored": stored,
                    "transactions": _transactions(engine),
                    "job_write_bytes": engine.meter.item_sizes["UpdateItem JOB"],
                }
            )
        skip_items[scenario.name] = sum(run["skip_items_written"] + run["skip_items_stored"] for run in runs)
        rows += _extra_rows(scenario.name, runs)
    total = sum(skip_items.values())
    rows.append(
        Row(
            "ledger, never paused: SKIP items written (rate(1 minute) and daily jobs)",
            total,
            "items",
            "none",
            total == 0,
            {"by_kind": skip_items, "runs_each": size.repetitions},
        )
    )
    return rows


def _never_paused_scenarios(size: Size) -> list[cost.Scenario]:
    chosen = [scenario for scenario in cost.SCENARIOS if scenario.name in NEVER_PAUSED_KINDS]
    if size.never_paused_jobs is None:
        return chosen
    runs = {
        cost.PEAK_KIND: cost._minutes(size.never_paused_minutes),
        DAILY_KIND: cost._days(size.never_paused_days),
    }
    return [
        dataclasses.replace(scenario, jobs=size.never_paused_jobs, run=runs[scenario.name])
        for scenario in chosen
    ]


def _priced(
    engine: cost.CostEngine, scenario: cost.Scenario, fixed: cost.FixedTick, start_ms: int
) -> dict[str, Any]:
    job_ids = [engine.create(scenario.body(n, start_ms)) for n in range(scenario.jobs)]
    scenario.run(engine, job_ids)
    each, detail = cost.per_execution(engine, scenario, fixed)
    return {"job_ids": job_ids, "each": each, "detail": detail}


def _extra_rows(kind: str, runs: list[dict[str, Any]]) -> list[Row]:
    """Write requests and units per execution over those before the ledger, median of the runs."""
    rows = []
    before = BEFORE_LEDGER[kind]
    short = kind.split(",", maxsplit=1)[0].removeprefix("recurring ")
    for measure_name, unit in (("write_requests", "write requests"), ("write_units", "write units")):
        extra = Repeated(tuple(run[measure_name] - before[measure_name] for run in runs))
        value = round(extra.median, 4)
        now = statistics.median(run[measure_name] for run in runs)
        rows.append(
            Row(
                f"ledger, never paused: extra {unit} per execution ({short})",
                value,
                unit,
                f"<= {GOAL_EXTRA:g}",
                value <= GOAL_EXTRA,
                {
                    "config": cost.FAILURES.label,
                    "now": [round(run[measure_name], 4) for run in runs],
                    "before_the_ledger": before[measure_name],
                    "just_before_its_writes": JUST_BEFORE[kind][measure_name],
                    "job_write_bytes": {
                        "now": runs[0]["job_write_bytes"],
                        "before_the_ledger": before["job_write_bytes"],
                        "just_before_its_writes": JUST_BEFORE[kind]["job_write_bytes"],
                    },
                    "by_function": runs[0]["by_function"],
                    "executions": [run["executions"] for run in runs],
                    "items_written": runs[0]["items_written"],
                    "skip_items_written": [run["skip_items_written"] for run in runs],
                    "transactions": runs[0]["transactions"],
                },
                f"{extra.describe(4)}; {round(now, 4):g} against {before[measure_name]:g}",
            )
        )
    return rows


# --- a pause --------------------------------------------------------------------------------------


def _pause_run(aws: Aws, lengths: tuple[int, ...], history: int, size: Size, paged: bool) -> dict[str, Any]:
    """A job running every minute (all history) for `history` minutes, paused for each of `lengths`
    in turn and resumed, running `size.after_minutes` after each resume; then (`paged`) its
    occurrences read page by page."""
    start_ms = _start_ms()
    engine = cost.CostEngine(aws, start_ms, cost.DEFAULT)
    first = start_ms - start_ms % 1000 + 5_000
    job_id = engine.create(_body(first))
    engine.simulate(start_ms, start_ms + history * MINUTE_MS)
    pauses = []
    for n, length in enumerate(lengths, 1):
        # Mid-minute: a pause holds the job however its next occurrence stands.
        paused_at = engine.clock.now_ms() + 30_000
        engine.deliver_until(paused_at)
        engine.clock.set(max(engine.clock.now_ms(), paused_at))
        with engine.meter.acting_as(f"pause {n}"):
            engine.service.pause(job_id)
        resume_at = paused_at + length
        _through_pause(engine, resume_at, size.tick_every_ms)
        engine.clock.set(resume_at)
        with engine.meter.acting_as(f"resume {n}"):
            engine.service.resume(job_id)
        executions = engine.executions
        engine.simulate(resume_at, resume_at + size.after_minutes * MINUTE_MS)
        pauses.append(
            {
                "length_ms": length,
                "pause": _phase(engine, f"pause {n}"),
                "resume": _phase(engine, f"resume {n}"),
                "runs_after_resume": engine.executions - executions,
            }
        )
    stored = engine.reader.skips(job_id, 0, engine.clock.now_ms() + 1)
    for pause, skip in zip(pauses, stored, strict=False):
        pause["stored"] = {
            "first": format_rfc3339(skip.first_ms),
            "count": skip.count,
            "reason": skip.reason.value,
        }
    written = _written(engine)[SKIP]
    return {
        "lengths_ms": lengths,
        "pauses": pauses,
        "skip_items_stored": len(stored),
        "skip_items_written": written,
        "pages": _pages(engine, job_id, start_ms, size.page) if paged else [],
        "crowded": _crowded_page(aws, engine, job_id, start_ms, size) if paged else {},
    }


def _through_pause(engine: cost.CostEngine, until_ms: int, every_ms: int) -> None:
    """A tick every `every_ms` while the job is paused (it is in no due row: they find nothing), and
    whatever message was on its way delivered (its fence drops it)."""
    boundary = engine.clock.now_ms() - engine.clock.now_ms() % MINUTE_MS + every_ms
    while boundary < until_ms:
        engine.deliver_until(boundary)
        engine.clock.set(boundary)
        engine.tick()
        boundary += every_ms
    engine.deliver_until(until_ms)


def _phase(engine: cost.CostEngine, phase: str) -> dict[str, Any]:
    meter = engine.meter
    bill = meter.bill(phase)
    return {
        "write_requests": meter.item_writes[phase],
        "write_units": bill.write_units,
        "read_units": bill.read_units,
        "sqs_requests": bill.sqs_requests,
        "calls": dict(meter.calls.get(phase, Counter())),
        "items_written": dict(meter.items_written.get(phase, Counter())),
    }


def pause_rows(runs: list[dict[str, Any]]) -> list[Row]:
    pauses = [pause for run in runs for pause in run["pauses"]]
    per_pause = Repeated(tuple(float(pause["resume"]["items_written"].get(SKIP, 0)) for pause in pauses))
    # Every SKIP item the jobs wrote, by any function at any time: each pause's resume wrote its own.
    written = sum(run["skip_items_written"] for run in runs)
    stored = sum(run["skip_items_stored"] for run in runs)
    exactly_one = all(value == 1 for value in per_pause.values) and written == stored == len(pauses)
    lengths = [_length(pause["length_ms"]) for pause in pauses]
    described = [
        {
            "paused": _length(pause["length_ms"]),
            "skip_items_its_resume_wrote": pause["resume"]["items_written"].get(SKIP, 0),
            "stored": pause.get("stored"),
            "runs_after_resume": pause["runs_after_resume"],
        }
        for pause in pauses
    ]
    resume_units = Repeated(tuple(pause["resume"]["write_units"] for pause in pauses))
    pause_units = Repeated(tuple(pause["pause"]["write_units"] for pause in pauses))
    return [
        Row(
            f"ledger, a pause: SKIP items per pause of a job every minute ({', '.join(lengths)})",
            per_pause.median,
            "items",
            "exactly 1",
            exactly_one,
            {"pauses": described, "skip_items_written": written, "skip_items_stored": stored},
            f"{len(pauses)} pauses, range {min(per_pause.values):g}-{max(per_pause.values):g}",
        ),
        Row(
            "ledger, a pause: the resume's write units (the job's update and one Put, one transaction)",
            round(resume_units.median, 3),
            "write units",
            None,
            None,
            {
                "write_requests": [pause["resume"]["write_requests"] for pause in pauses],
                "read_units": [pause["resume"]["read_units"] for pause in pauses],
                "calls": pauses[0]["resume"]["calls"],
                "items_written": pauses[0]["resume"]["items_written"],
                "before_the_ledger": RESUME_BEFORE_LEDGER,
                "pause_write_units": round(pause_units.median, 3),
                "pause_calls": pauses[0]["pause"]["calls"],
            },
            f"{len(pauses)} resumes, range {min(resume_units.values):g}-{max(resume_units.values):g}",
        ),
    ]


# --- a page of occurrences ------------------------------------------------------------------------


def _pages(engine: cost.CostEngine, job_id: str, from_ms: int, limit: int) -> list[dict[str, Any]]:
    """Every page of the job's occurrences from its creation to now, as a client pages them."""
    reader = OccurrenceReader(engine.store, engine.clock, engine.config.history)
    start, end = format_rfc3339(from_ms), format_rfc3339(engine.clock.now_ms())
    pages: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        phase = f"page {len(pages) + 1}"
        with engine.meter.acting_as(phase):
            page = reader.page(job_id, start, end, limit, token)
        states = Counter(row.state for row in page.occurrences)
        pages.append({"rows": len(page.occurrences), "states": dict(states), **_phase(engine, phase)})
        token = page.next_token
        if token is None:
            return pages


def _crowded_page(aws: Aws, engine: cost.CostEngine, job_id: str, from_ms: int, size: Size) -> dict[str, Any]:
    """The job's first page again, with `size.kept_stretches` stretches of one overlapped instant
    each kept before it, every other minute back from the job's start."""
    first = from_ms - from_ms % MINUTE_MS
    stretches = (
        Skip(first - 2 * MINUTE_MS * k, first - 2 * MINUTE_MS * k + MINUTE_MS, SkipReason.OVERLAP, 1)
        for k in range(1, size.kept_stretches + 1)
    )
    retention = engine.store.retention_seconds
    items = (skip_item(job_id, stretch, retention) for stretch in stretches)
    batch_write(aws.dynamodb, aws.resources.table_name, items)
    reader = OccurrenceReader(engine.store, engine.clock, engine.config.history)
    start, end = format_rfc3339(from_ms), format_rfc3339(engine.clock.now_ms())
    with engine.meter.acting_as("crowded page"):
        page = reader.page(job_id, start, end, size.page, None)
    states = Counter(row.state for row in page.occurrences)
    return {"rows": len(page.occurrences), "states": dict(states), **_phase(engine, "crowded page")}


def crowded_row(run: dict[str, Any], size: Size) -> Row:
    crowded, alone = run["crowded"], run["pages"][0]
    return Row(
        f"ledger, a page: the same page of runs, {size.kept_stretches:,} stretches kept before it",
        crowded["read_units"],
        "read units",
        None,
        None,
        {
            "stretches_kept": size.kept_stretches,
            "read_units_without_them": alone["read_units"],
            "rows": crowded["rows"],
            "states": crowded["states"],
            "calls": crowded["calls"],
            "why": "the skip ledger's query reads every stretch kept up to the page's end; its "
            "filter keeps those that reach into the page, and DynamoDB bills what it read",
        },
    )


def page_row(pages: list[dict[str, Any]], size: Size) -> Row:
    """Read units of a full page of occurrences that ran, each with its history item (the dearest
    kind of page), beside a page of skipped ones and every page's range."""
    full = [page for page in pages if page["rows"] == size.page]
    ran = [page for page in full if page["states"].get("ran", 0) == size.page]
    skipped = [page for page in full if page["states"].get("skipped", 0) == size.page]
    every = Repeated(tuple(page["read_units"] for page in pages))
    figure = Repeated(tuple(page["read_units"] for page in ran or full))
    return Row(
        f"ledger, a page: GET /jobs/{{id}}/occurrences, read units, {size.page} rows that ran, all history",
        figure.median,
        "read units",
        None,
        None,
        {
            "pages_read": len(pages),
            "rows": sum(page["rows"] for page in pages),
            "ran_pages": len(ran),
            "skipped_pages": len(skipped),
            "read_units_of_a_skipped_page": statistics.median(p["read_units"] for p in skipped)
            if skipped
            else None,
            "pages_by_read_units": {f"{units:g}": n for units, n in sorted(Counter(every.values).items())},
            "calls_per_page": pages[0]["calls"],
        },
        f"{len(ran or full)} such pages, range {min(figure.values):g}-{max(figure.values):g}; "
        f"any of {len(pages)} pages {min(every.values):g}-{max(every.values):g}",
    )


# --- shared ---------------------------------------------------------------------------------------


def _body(start_ms: int) -> dict[str, Any]:
    return {
        "name": "bench-ledger",
        "target": {"type": "http", "url": "http://127.0.0.1:9/report"},
        "payload": {"report": "daily-sales", "region": "eu-west-1"},
        "schedule": "rate(1 minute)",
        "start_at": format_rfc3339(start_ms),
    }


def _start_ms() -> int:
    return (time.time_ns() // 1_000_000 // MINUTE_MS) * MINUTE_MS + 17_000


def _written(engine: cost.CostEngine) -> Counter[str]:
    total: Counter[str] = Counter()
    for kinds in engine.meter.items_written.values():
        total.update(kinds)
    return total


def _transactions(engine: cost.CostEngine) -> int:
    """Transactions the tick and the worker sent (a write that passes instants over is one)."""
    calls = engine.meter.calls
    return sum(
        calls.get(function, Counter()).get("TransactWriteItems", 0) for function in ("scheduler", "worker")
    )


def _length(ms: int) -> str:
    if ms % DAY_MS == 0:
        return f"{ms // DAY_MS} d"
    if ms % HOUR_MS == 0:
        return f"{ms // HOUR_MS} h"
    return f"{ms // MINUTE_MS} min"
