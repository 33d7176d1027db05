"""`make scale`: the goal scenarios on the model, each figure printed beside its goal.

SCALE_ARGS="--only NAME" runs one; "--scale F" multiplies every job count by F (0.1 for a quick
look; the goals are about F=1)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.scale import creates, listing
from bench.scale.cpu import repeat_exactly
from bench.scale.scenario import Scenario, run_apart
from bench.scale.world import Settings

RECOMMENDED = {
    # Provisioned mode bounds the high queue by its pollers (10 invocations each), not by its maximum
    # concurrency: 30 of them are its 300, so that 300 + 300 + 200 and the scheduler's reserve stay
    # under the account's 1,000 concurrent executions.
    "provisioned_pollers": "2,30",
    "max_concurrency.high": "300",
    "max_concurrency.medium": "300",
    "max_concurrency.low": "200",
    # The table's warm throughput and each index's (the due index takes every job's moves), both
    # within the per-table quota of 40,000 write units a second.
    "warm_wcu": "40000",
    "index_warm_wcu": "40000",
    # Shares of a window go one shard number or more each: 32 let a million due at once go to 32
    # invocations of about 31,000 sends, each within its deadline (docs/operations.md).
    "due_shards": "32",
    # The scheduler's reserved concurrency for a peak of a million due at once, 2 + ceil(B / 30,000)
    # (docs/operations.md): the ticks and their claimers keep their room whatever the workers take.
    "scheduler_reserved": "36",
}

# For a burst of 100,000 to a million due at once that must start within seconds (docs/operations.md,
# sizing step 6): a start and a finish write about three units on the table, more than the per-table
# quota of 40,000 write units a second takes. The doc names the increase to request (Service Quotas,
# DynamoDB "Table-level write throughput limit", to 300,000), and the table and every index are
# warmed to it; every queue's pollers are kept warm, 800 invocations of the account's 1,000.
BURST = {
    **RECOMMENDED,
    "provisioned_pollers": "30,30",
    "provisioned_pollers.medium": "30,30",
    "provisioned_pollers.low": "20,20",
    "quota_wcu": "300000",
    "warm_wcu": "300000",
    "index_warm_wcu": "300000",
}


def _settings(pairs: dict[str, str]) -> Settings:
    settings = Settings()
    for key, value in pairs.items():
        settings.set(key, value)
    return settings


@dataclass(frozen=True)
class Goal:
    name: str
    scenario: Scenario
    says: str
    holds: Callable[[dict[str, Any]], bool]


def _exactly_once(report: dict[str, Any]) -> bool:
    return all(
        p["never_called"] == 0 and p["called_twice"] == 0 and p["called_early"] == 0
        for p in report["priorities"].values()
    )


def _p99(report: dict[str, Any], most_ms: float, high_ms: float | None = None) -> bool:
    ok = all((p["lateness_ms"]["p99"] or 0) <= most_ms for p in report["priorities"].values())
    high = report["priorities"]["high"]["lateness_ms"]["p99"] or 0
    return ok and (high_ms is None or high <= high_ms)


def _no_tick_past_deadline(report: dict[str, Any]) -> bool:
    return not any(t["ran_past_deadline"] or t["timed_out"] for t in report["ticks"])


def _nothing_lost_copies_dropped(report: dict[str, Any]) -> bool:
    copies = report["copies_sent"]
    return _exactly_once(report) and copies > 0 and report["dropped_at_fence"] >= copies


def _killed_mid_send(report: dict[str, Any]) -> bool:
    killed = [t for t in report["ticks"] if t["killed"]]
    due = sum(p["occurrences"] for p in report["priorities"].values())
    mid_send = bool(killed) and 0 < killed[0]["sent_while_running"] < due
    return mid_send and _nothing_lost_copies_dropped(report)


def _killed_while_overlapped(report: dict[str, Any]) -> bool:
    return report["overlapping_ticks"] > 0 and _killed_mid_send(report)


def _one_key_drained(report: dict[str, Any]) -> bool:
    limit = report["limit"]
    return (
        _exactly_once(report)
        and limit["max_starts_in_a_second"] <= 2 * (limit["per_second"] or 0)
        and (limit["drain_s"] or 0) <= 210
        and report["dead_letter_messages"] == 0
        and _no_tick_past_deadline(report)
    )


def goals() -> list[Goal]:
    recommended, burst = _settings(RECOMMENDED), _settings(BURST)
    return [
        Goal(
            "100k-at-once-burst",
            # Sized as the doc sizes a burst that must start within seconds; with the recommended
            # settings alone its medium and low queues ramp too slowly (docs/operations.md).
            Scenario(due_at_once=100_000, settings=burst),
            "exactly once; p99 <= 10 s (high <= 5 s); no tick past its deadline",
            lambda r: _exactly_once(r) and _p99(r, 10_000, 5_000) and _no_tick_past_deadline(r),
        ),
        Goal(
            "100k-at-09:00-window-300",
            # The same fan-out with a 300 s spread window: its targets meet it over five minutes.
            Scenario(due_at_once=100_000, window_seconds=300, settings=recommended),
            "exactly once, never before its start; first calls over >= 290 s; p99 <= 10 s from the start",
            lambda r: _exactly_once(r) and r["first_calls_span_s"] >= 290 and _p99(r, 10_000),
        ),
        Goal(
            "100k-at-once-defaults",
            Scenario(due_at_once=100_000),
            "exactly once; figures reported",
            _exactly_once,
        ),
        Goal(
            "100k-killed-tick",
            # The tick that sends 09:00's messages (its own share, a claimer taking each other one)
            # is killed once it has sent 10,000 of them; a second tick, invoked as it starts (a cold
            # start later), reads the same marks and sends the window again.
            Scenario(
                due_at_once=100_000,
                kill_tick_after_sends=10_000,
                overlap_tick_after_sends=0,
                settings=recommended,
            ),
            "killed mid-send, a second tick overlapping; nothing lost; copies dropped at the fence",
            _killed_while_overlapped,
        ),
        Goal(
            "100k-killed-mid-send",
            Scenario(due_at_once=100_000, kill_tick_after_sends=15_000, settings=recommended),
            "the kill lands mid-send; nothing lost; copies dropped at the fence",
            _killed_mid_send,
        ),
        Goal(
            "steady-100k-a-minute",
            Scenario(per_minute=100_000, minutes=5, settings=recommended),
            "exactly once; p99 <= 1 s",
            lambda r: _exactly_once(r) and _p99(r, 1_000),
        ),
        Goal(
            "design-peak",
            Scenario(active=10_000_000, per_minute=10_000, minutes=10),
            "exactly once; p99 <= 1 s",
            lambda r: _exactly_once(r) and _p99(r, 1_000),
        ),
        Goal(
            "100k-on-one-key-500-a-second",
            # Every job names one key limited to 500 starts a second (docs/api.md, "Limits").
            Scenario(due_at_once=100_000, limit_per_second=500, settings=recommended),
            "exactly once; <= 1,000 starts in any second; drained in <= 210 s; no DLQ message; "
            "no tick past its deadline",
            _one_key_drained,
        ),
        Goal(
            "1M-at-09:00",
            # Sized for the peak with the quota increase the doc names; what the recommended
            # settings do at the default quota is in docs/operations.md beside it.
            Scenario(due_at_once=1_000_000, settings=burst),
            "sent before its instant; exactly once; no tick past its deadline; within 15 min wall",
            lambda r: (
                _exactly_once(r)
                and r["sent_after_instant"] == 0
                and _no_tick_past_deadline(r)
                and r["wall_seconds"] <= 900
            ),
        ),
        # Each goal below is sized so that one limit of AWS binds in a run of a minute or two on
        # two cores (`python -m tests.mutants --model-mutations` runs each with and without its
        # limit): the goals above meet no partition, index or account limit at a scale that runs
        # that fast, and the per-table quota not below 40,000 write units a second.
        Goal(
            "10k-at-once-one-due-shard",
            # A priority's due shard is one partition key of the due index: every start and finish
            # of the priority's jobs moves a row there, 1,000 write units a second at most
            # (docs/operations.md, "Shards").
            Scenario(due_at_once=10_000, settings=_settings({**RECOMMENDED, "due_shards": "1"})),
            "one due shard a priority (the fewest): exactly once; p99 <= 10 s (high <= 5 s)",
            lambda r: _exactly_once(r) and _p99(r, 10_000, 5_000),
        ),
        Goal(
            "30k-at-once-indexes-not-warmed",
            # The table warmed as recommended, its indexes left at a new index's throughput: the
            # due index takes every job's moves, and what it cannot take throttles the table's write.
            Scenario(
                due_at_once=30_000,
                settings=_settings({k: v for k, v in RECOMMENDED.items() if k != "index_warm_wcu"}),
            ),
            "the table warmed, its indexes not: exactly once; p99 <= 10 s (high <= 5 s)",
            lambda r: _exactly_once(r) and _p99(r, 10_000, 5_000),
        ),
        Goal(
            "10k-at-once-table-capped-4000",
            # An on-demand table's maximum throughput (a cost cap), set on the table and each index
            # at a new table's 4,000 write units a second: what the model serves at most, as the
            # per-table quota is.
            Scenario(due_at_once=10_000, settings=_settings({**RECOMMENDED, "quota_wcu": "4000"})),
            "table and indexes capped at 4,000 write units a second: exactly once; p99 <= 10 s (high <= 5 s)",
            lambda r: _exactly_once(r) and _p99(r, 10_000, 5_000),
        ),
        Goal(
            "10k-at-once-60-executions-free",
            # An account whose other functions hold all but 60 of its concurrent executions (or a
            # new account's lower quota): the workers' maxima of 300 + 300 + 200 cannot be reached.
            # No reservation: AWS refuses one that leaves such an account under 100 unreserved.
            Scenario(
                due_at_once=10_000,
                settings=_settings({**RECOMMENDED, "account_concurrency": "60", "scheduler_reserved": "0"}),
            ),
            "60 concurrent executions free in the account: exactly once; no tick throttled; p99 <= 15 s",
            lambda r: _exactly_once(r) and not any(t["throttled"] for t in r["ticks"]) and _p99(r, 15_000),
        ),
    ]


def scaled(s: Scenario, scale: float) -> Scenario:
    """The scenario with every job count multiplied by `scale`."""

    def times(n: int | None) -> int | None:
        return None if n is None else int(n * scale)

    # A tick's capacity scales too, so that a scaled run splits its windows as the full one does.
    capacity = max(1, int(s.settings.tick_capacity * scale))
    return replace(
        s,
        settings=replace(s.settings, tick_capacity=capacity),
        due_at_once=int(s.due_at_once * scale),
        per_minute=int(s.per_minute * scale),
        kill_tick_after_sends=times(s.kill_tick_after_sends),
        overlap_tick_after_sends=times(s.overlap_tick_after_sends),
        # A key's limit scales with its jobs, so that a scaled run drains as long as the full one.
        limit_per_second=None if s.limit_per_second is None else s.limit_per_second * scale,
        limit_concurrent=None if s.limit_concurrent is None else max(1, int(s.limit_concurrent * scale)),
    )


def main() -> None:
    repeat_exactly()
    parser = argparse.ArgumentParser(prog="make scale")
    parser.add_argument("--only", action="append")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--out", type=Path, help="a directory for each scenario's JSON report")
    parser.add_argument(
        "--seed", type=int, help="another seed than each scenario's own: a figure one seed gives may be luck"
    )
    args = parser.parse_args()
    for goal in goals():
        if args.only and goal.name not in args.only:
            continue
        scenario = scaled(goal.scenario, args.scale)
        if args.seed is not None:
            scenario = replace(scenario, seed=args.seed)
        # The machine's other work stretches the wall time; the model's own CPU does not.
        report = run_apart(scenario)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{goal.name.replace(':', '')}.json").write_text(json.dumps(report, indent=2))
        _print(goal, report, args.scale)
    # Measured beside the scenarios: the listing's reads (bench/scale/listing.py), the creates'
    # rate (bench/scale/creates.py).
    if not args.only or "listing-10M" in args.only:
        listing.main(int(listing.JOBS * args.scale))
    for create_goal in creates.goals(RECOMMENDED):
        if not args.only or create_goal.imports.name in args.only:
            creates.print_goal(create_goal, args.scale)


def _print(goal: Goal, report: dict[str, Any], scale: float) -> None:
    if "priorities" not in report:  # the run itself failed: its error is all there is
        print(f"== {goal.name}  (scale {scale:g})\n   ERROR:    {report.get('error')}\n   holds:    NO")
        return
    lateness = {p: v["lateness_ms"] for p, v in report["priorities"].items()}
    counts = {
        p: {k: v[k] for k in ("occurrences", "never_called", "called_twice", "called_early")}
        for p, v in report["priorities"].items()
    }
    ticks = report["ticks"]
    longest = max((t["duration_s"] or 0 for t in ticks), default=0)
    killed = [t["sent_while_running"] for t in ticks if t["killed"]]
    wall, cpu = report["wall_seconds"], report["cpu_seconds"]
    print(f"== {goal.name}  (scale {scale:g}, {wall:.0f} s wall, {cpu:.0f} s CPU)")
    print(f"   goal:     {goal.says}")
    print(f"   measured: {json.dumps(counts)}")
    print(f"             start lateness ms {json.dumps(lateness)}")
    print(
        f"             throttles {report['throttles']}; longest tick {longest} s; "
        f"out of time {sum(t['out_of_time'] for t in ticks)}; past deadline "
        f"{sum(t['ran_past_deadline'] or t['timed_out'] for t in ticks)}; sent after instant "
        f"{report['sent_after_instant']}; dropped at fence {report['dropped_at_fence']}"
        + (f"; killed tick had sent {killed[0]}" if killed else "")
        + f"; copies sent {report['copies_sent']}; overlapping ticks {report['overlapping_ticks']}"
        + f"; claimers {sum(t['kind'] == 'claimer' for t in ticks)}"
        + f"; busiest second {report['busiest_second_calls']} first calls"
        + f" over {report['first_calls_span_s']} s"
        + (f"; limit {json.dumps(report['limit'])}" if "limit" in report else "")
    )
    charged = report["cpu"]
    print(
        f"             CPU charged {charged['charged_s']} s from {charged['source']}; this host measured "
        f"{charged['measured_over_charged']}x of it; {charged['uncalibrated_segments']} of "
        f"{charged['segments']} segments of a kind the table lacks"
    )
    sampling = report.get("sampling")
    if sampling is not None:
        strata = sampling["strata"]
        print(
            f"             sampled: the real worker on one in {sampling['every']} deliveries of the "
            f"stand-in's path, one in {sampling['every_early']} of those early "
            f"({sum(s['sample']['deliveries'] for s in strata.values())} sampled, "
            f"{sum(s['stand_in']['deliveries'] for s in strata.values())} stood in, "
            f"{sum(sampling['real_by_reason'].values())} of other paths real; "
            f"{sampling['items_checked']} sampled deliveries' items checked)"
        )
    if report.get("error"):
        print(f"   ERROR:    {report['error']}")
    holds = goal.holds(report) and not report.get("error")
    print(f"   holds:    {'yes' if holds else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
