"""The README's cost table, written from the figures `make bench` keeps in bench/results.json, so
that what the README says an execution costs is what the last run measured."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench import cost, idle

README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN = "<!-- cost table: make bench writes it from bench/results.json -->"
END = "<!-- end of the cost table -->"

SECOND = "second/failures/batch 10"
SQS = "sqs/failures/batch 10"
RATE = "recurring rate(1 minute)"


def cost_table(figures: Iterable[dict[str, Any]]) -> str:
    """The table, in Markdown: each price as the figures have it. Raises KeyError naming a figure
    the results lack."""
    value = {figure["name"]: figure["value"] for figure in figures}

    def price(name: str) -> str:
        return f"${value[name]:.2f}"

    def peak(config: str, mode: str) -> str:
        return price(f"peak {cost.EXECUTIONS_PER_MINUTE:,}/min of {RATE} [{config}], {mode}")

    def kind(name: str) -> str:
        return f"{price(f'cost: {name} [{SECOND}]')} / {price(f'cost: {name} [{SQS}]')}"

    eventbridge = "EventBridge Scheduler + Lambda target + 1 history write"
    idle_rows = [f"idle stage ({stage}, no jobs): dollars a month" for stage in idle.STAGES]
    rows = [
        "| per million executions | on-demand | provisioned, steady 10,000 a minute |",
        "| --- | --- | --- |",
        f"| Sundial, recurring `rate(1 minute)`, failure history | {peak(SECOND, 'on-demand')} | "
        f"{peak(SECOND, 'provisioned')} |",
        f"| … with `sqs` precision | {peak(SQS, 'on-demand')} | {peak(SQS, 'provisioned')} |",
        "| Sundial, recurring `rate(2 minutes)`, failure history | "
        f"{price(f'cost: recurring rate(2 minutes), dispatched by its completion [{SECOND}]')} | |",
        f"| Sundial, recurring daily, failure history / with `sqs` precision | "
        f"{kind('recurring daily, sent by a tick')} | |",
        "| Sundial, one-off created through the API, failure history (API Gateway $3.50 of it) / with "
        f"`sqs` precision | {kind(cost.PRECISION_KIND)} | |",
        "| … through an HTTP API (`sundial:api=http`, API Gateway $1.00 of it), failure history | "
        f"{price(f'cost: {cost.PRECISION_KIND} [{SECOND}, sundial:api=http]')} | |",
        "| Sundial, one-off created a hundred at a time (`POST /jobs/batch`), failure history / with "
        f"`sqs` precision | {kind(cost.BATCH_KIND)} | |",
        f"| EventBridge Scheduler + a 125 MB, 20 ms Lambda target + one history write | "
        f"{price(f'{eventbridge}, on-demand')} | {price(f'{eventbridge}, provisioned')} |",
        "",
        f"A deployed stage with no jobs costs {price(idle_rows[0])} a month ({price(idle_rows[1])} "
        "without its dashboard, `sundial:dashboard=false`), counted by `make bench PART=idle`.",
    ]
    return "\n".join(rows)


def rewritten(text: str, figures: Iterable[dict[str, Any]]) -> str:
    """`text` with the table between its markers replaced. Raises ValueError without the markers."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no {BEGIN!r} ... {END!r} markers")
    return f"{text[: start + len(BEGIN)]}\n{cost_table(figures)}\n{text[end:]}"


def update(figures: Iterable[dict[str, Any]], path: Path = README) -> bool:
    """Rewrites the README's table from `figures`; False (nothing written) when a price is missing,
    as after a run whose cost part failed before it ever succeeded."""
    try:
        text = rewritten(path.read_text(), figures)
    except KeyError:
        return False
    path.write_text(text)
    return True
