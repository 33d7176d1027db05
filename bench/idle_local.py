"""An idle local stack's CPU: `sundial local` and its emulator with no job at all, as a user leaves
`make local` running. Read from /proc (Linux): the CPU time of the stack's process and its children
over three windows, as a share of one core. The workers long-poll each queue (a second a poll) and the
emulator wakes a poll when a delayed message becomes visible; with 150 ms short polls the same stack
kept a core 8% busy."""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.harness import Repeated, Row

WINDOWS = 3
WINDOW_SECONDS = 20.0
SETTLE_SECONDS = 5.0  # past the start's own work
GOAL_SHARE = 0.03


def measure(pid: int) -> Row:
    time.sleep(SETTLE_SECONDS)
    shares = []
    for _ in range(WINDOWS):
        before, started = _cpu_seconds(pid), time.monotonic()
        time.sleep(WINDOW_SECONDS)
        shares.append((_cpu_seconds(pid) - before) / (time.monotonic() - started))
    figure = Repeated(tuple(shares))
    return Row(
        "idle local stack (no jobs): CPU, share of one core",
        round(figure.median, 4),
        "cores",
        f"<= {GOAL_SHARE}",
        figure.median <= GOAL_SHARE,
        {"windows_seconds": WINDOW_SECONDS, "processes": "sundial local and its children"},
        figure.describe(4),
    )


def _cpu_seconds(pid: int) -> float:
    """User and system time of `pid` and every process below it, alive now."""
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(_own_ticks(p) for p in _tree(pid)) / ticks


def _tree(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(_stat_fields(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [pid], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _own_ticks(pid: int) -> int:
    try:
        fields = _stat_fields(pid)
    except OSError:
        return 0  # ended within the window
    return int(fields[11]) + int(fields[12])  # utime, stime


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat from its state on (the command name may hold spaces): state, ppid, ..."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()
