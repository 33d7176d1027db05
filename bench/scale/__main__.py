"""python -m bench.scale --active N --due-at-once K --per-minute R --mix H:M:L --failing F
--kill-tick-at S --setting KEY=VALUE ... writes the run's JSON report (to --out, or stdout)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.scale.cpu import repeat_exactly
from bench.scale.scenario import Scenario, run_apart
from bench.scale.world import Settings


def parse(argv: list[str]) -> tuple[Scenario, Path | None]:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--active", type=int, default=0, help="active jobs not due in the run")
    parser.add_argument("--due-at-once", type=int, default=0, help="one-off jobs due at 09:00:00")
    parser.add_argument("--per-minute", type=int, default=0, help="one-off jobs due each minute")
    parser.add_argument("--minutes", type=int, default=1, help="minutes of --per-minute")
    parser.add_argument("--recurring", type=int, default=0, help="jobs on rate(1 minute)")
    parser.add_argument("--mix", default="1:1:1", help="high:medium:low weights")
    parser.add_argument("--failing", type=float, default=0.0, help="fraction of jobs whose target fails")
    parser.add_argument("--kill-tick-at", type=float, help="the first tick is killed this many s in")
    parser.add_argument(
        "--kill-tick-after-sends", type=int, help="the first tick is killed inside the send of this message"
    )
    parser.add_argument(
        "--overlap-tick-at",
        type=float,
        help="an extra tick starts this many s after 09:00 (-59: 1 s into the one sending it)",
    )
    parser.add_argument(
        "--overlap-tick-after-sends", type=int, help="another tick starts once the first sent this many"
    )
    parser.add_argument("--through-api", action="store_true", help="create every job by a request")
    parser.add_argument("--limit-per-second", type=float, help="one limit key for every job: its rate")
    parser.add_argument(
        "--limit-concurrent", type=int, help="one limit key for every job: its max_concurrent"
    )
    parser.add_argument(
        "--sample-every",
        type=int,
        help="the real worker on one delivery in N of the stand-in's path (bench/scale/sampling.py); "
        "0: every delivery real; default: sampled from 200,000 jobs due",
    )
    parser.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    settings = Settings()
    for pair in args.setting:
        key, _, value = pair.partition("=")
        settings.set(key, value)
    high, medium, low = (int(part) for part in args.mix.split(":"))
    scenario = Scenario(
        active=args.active,
        due_at_once=args.due_at_once,
        per_minute=args.per_minute,
        minutes=args.minutes,
        recurring=args.recurring,
        mix=(high, medium, low),
        failing=args.failing,
        kill_tick_at=args.kill_tick_at,
        kill_tick_after_sends=args.kill_tick_after_sends,
        overlap_tick_at=args.overlap_tick_at,
        overlap_tick_after_sends=args.overlap_tick_after_sends,
        through_api=args.through_api,
        limit_per_second=args.limit_per_second,
        limit_concurrent=args.limit_concurrent,
        settings=settings,
        sample_every=args.sample_every,
    )
    return scenario, args.out


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        repeat_exactly()
    scenario, out = parse(sys.argv[1:] if argv is None else argv)
    result = run_apart(scenario)
    text = json.dumps(result, indent=2)
    if out is None:
        print(text)
    else:
        out.write_text(text)
    if result.get("error"):
        print(result["error"], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
