"""`sundial stats`: what the scheduler is doing, as the console's overview shows it."""

from __future__ import annotations

import click

from sundial.commands.connection import Connection, connection_options
from sundial.commands.output import output_option, print_one, table, watch_options
from sundial.commands.output import watch as repeat
from sundial.contract.stats import StatsView
from sundial.contract.vocabulary import Health


@click.command()
@output_option
@watch_options
@connection_options
def stats(connection: Connection, output: str, watch: bool, interval: float, count: int | None) -> None:
    """Jobs per status and priority, the queues, dead jobs and the last hour's start lateness."""
    client = connection.client()
    repeat(lambda: print_one(client.stats(), output, stats_table), watch, interval, count, output)


def stats_table(found: StatsView) -> str:
    priorities = [queue.priority for queue in found.queues]
    counts = table(
        ["status", *(p.value for p in priorities)],
        [
            [status.value, *(str(by_priority.get(p, 0)) for p in priorities)]
            for status, by_priority in found.jobs.by_status.items()
        ],
    )
    queues = table(
        ["queue", "visible", "in flight", "delayed", "oldest due (s)"],
        [
            [
                q.priority.value,
                str(q.visible),
                str(q.in_flight),
                str(q.delayed),
                f"{q.oldest_due_seconds:.1f}",
            ]
            for q in found.queues
        ],
    )
    runs = found.executions
    p50 = "-" if runs.lateness_p50_ms is None else f"{runs.lateness_p50_ms} ms"
    p99 = "-" if runs.lateness_p99_ms is None else f"{runs.lateness_p99_ms} ms"
    health = found.jobs.by_health
    summary = (
        f"{found.jobs.total} jobs ({found.jobs.paused} paused, {found.dead_total} dead, "
        f"{health[Health.FAILING]} failing, {health[Health.DEAD]} whose last occurrence died), counted at "
        f"{found.jobs.counted_at}; last {runs.window_minutes} min: {runs.starts} starts, "
        f"start lateness p50 {p50}, p99 {p99}"
    )
    dead = table(
        ["dead job", "name", "died at", "in a row", "error"],
        [[d.id, d.name or "", d.died_at, str(d.dead_in_a_row or ""), d.error or ""] for d in found.dead],
    )
    return "\n\n".join([summary, counts, queues, *([dead] if found.dead else [])])
