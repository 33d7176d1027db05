"""Parallel claimers: when the due window is more than one invocation can claim and send by its
deadline, the tick hands shard numbers to other invocations of its function, each an asynchronous
Lambda invoke, and takes the first share itself (docs/design.md, "The tick").

A shard number is the unit: its rows of every priority and its sent mark go to one invocation, so
no two write the same mark, and each keeps the tick's order within its shards.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict, Field

from sundial.shared import constants as c
from sundial.shared.engine.tick_report import TickReport
from sundial.shared.engine.tick_sends import Due, Marks

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

logger = logging.getLogger(__name__)
HandOff = Callable[[Sequence[int]], None]

# What a row costs an invocation, in ahead-row sends: measured on the scale model at 1,024 MB
# (docs/operations.md), a tick sends about 1,200 ahead rows' messages a second and claims about 100
# rows a second (a write whose answer it parses, then the send).
SEND_WORK = 1
CLAIM_WORK = 12
# The work one invocation takes on: about 25 s of sends, half its deadline, so that a window placed
# ahead is out well before its instant and a killed invocation leaves time to the next tick.
WORK_PER_INVOCATION = 30_000
# Invocations of one tick at most (the tick's own included); the shard count bounds them too.
MOST_INVOCATIONS = 64


class ClaimRequest(BaseModel):
    """The event a claimer is invoked with: the shard numbers it reads, claims and sends."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    shards: list[int] = Field(min_length=1, max_length=MOST_INVOCATIONS * 16)

    @classmethod
    def of(cls, event: Any) -> ClaimRequest | None:
        """The request an event carries, or None for any other event (the schedule's)."""
        if isinstance(event, dict) and "shards" in event:
            return cls.model_validate(event)
        return None


class LambdaClaimers:
    """Hands shard numbers to another invocation of `function_name`, asynchronously: the answer
    says only that Lambda took the event."""

    def __init__(self, client: LambdaClient, function_name: str) -> None:
        self._client = client
        self._function_name = function_name

    def __call__(self, shards: Sequence[int]) -> None:
        self._client.invoke(
            FunctionName=self._function_name,
            InvocationType="Event",
            Payload=ClaimRequest(shards=list(shards)).model_dump_json().encode(),
        )


def hand_off(
    claimers: HandOff,
    rows: list[Due],
    shards: Sequence[int],
    marks: Marks,
    now_ms: int,
    capacity: int,
    report: TickReport,
) -> list[Due]:
    """Hands every share but the first to a claimer; returns the rows the tick keeps: its own
    share's, and those of any share it could not hand off."""
    kept = set(shards)
    _own, *others = shares(rows, shards, marks, now_ms, capacity)
    for share in others:
        try:
            claimers(share)
        except (ClientError, BotoCoreError):
            logger.warning("tick takes shards %s itself: no claimer took them", share, exc_info=True)
            report.count("errors")
            continue
        report.count("claimers")
        kept -= set(share)
        for shard in share:
            marks.unread(shard)  # the claimer's to record
    return [due for due in rows if due.shard in kept]


def shares(
    rows: Iterable[Due], shards: Sequence[int], marks: Marks, now_ms: int, capacity: int
) -> list[list[int]]:
    """The shard numbers split into as many shares as the rows' work needs (one when it fits one
    invocation), each about as heavy; the first is the tick's own."""
    work: Counter[int] = Counter()
    for due in rows:
        work[due.shard] += _work(due, marks, now_ms)
    count = min(len(shards), MOST_INVOCATIONS, math.ceil(sum(work.values()) / max(1, capacity)))
    if count <= 1:
        return [list(shards)]
    split: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for shard in sorted(shards, key=lambda s: (-work[s], s)):
        lightest = loads.index(min(loads))
        split[lightest].append(shard)
        loads[lightest] += work[shard]
    return [sorted(share) for share in split if share]


def _work(due: Due, marks: Marks, now_ms: int) -> int:
    row = due.row
    if row.ahead_token is not None:
        sent, expires_at = marks.of(due.shard), row.expires_at
        if sent is None or (sent.covers(row.due_at, due.position) and (expires_at or 0) >= now_ms):
            return 0
        late = row.due_at < now_ms - c.MISFIRE_GRACE_SECONDS * 1000  # claimed, as a run row is
        return CLAIM_WORK if late else SEND_WORK
    if (row.is_lease or row.is_alert) and row.due_at >= now_ms:
        return 0
    return CLAIM_WORK
