"""W3C trace context (https://www.w3.org/TR/trace-context/): the `traceparent` a call brings, or one
started for it, carried with the occurrences it schedules and on to each attempt's delivery
(docs/design.md, "Traces").

A traceparent is `00-<trace id: 32 hex>-<parent span id: 16 hex>-<flags: 2 hex>`. Each attempt keeps
the job's trace id and gets a span id of its own; X-Ray writes the same trace id as
`1-<first 8 hex>-<last 24 hex>`, so a trace started in a Lambda under X-Ray is the same trace in both.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sundial.shared.clock import format_rfc3339

if TYPE_CHECKING:
    from sundial.shared.models import Job

VERSION = "00"
_INVALID_VERSION = "ff"
# A version after 00 may add fields after the flags; its first four are read as 00's (the spec says so).
_HEADER = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16
_XRAY_ROOT = re.compile(r"Root=1-([0-9a-f]{8})-([0-9a-f]{24})")
SAMPLED = "01"


@dataclass(frozen=True)
class TraceParent:
    trace_id: str
    span_id: str
    flags: str = SAMPLED

    @property
    def header(self) -> str:
        return f"{VERSION}-{self.trace_id}-{self.span_id}-{self.flags}"

    def child(self, span_id: str) -> TraceParent:
        """The same trace, with `span_id` as the parent its receiver sees."""
        return TraceParent(self.trace_id, span_id, self.flags)

    @property
    def xray_trace_id(self) -> str:
        return f"1-{self.trace_id[:8]}-{self.trace_id[8:]}"


def parse(header: str | None) -> TraceParent | None:
    """The trace context of a `traceparent` header, or None when it is absent or malformed: the spec
    has a receiver ignore a header it cannot read (and start a trace of its own), never refuse the
    call. Version ff, an all-zero id and a version 00 header with more fields are malformed."""
    if header is None:
        return None
    match = _HEADER.fullmatch(header.strip())
    if match is None:
        return None
    version, trace_id, span_id, flags, rest = match.groups()
    if version == _INVALID_VERSION or trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    if version == VERSION and rest is not None:
        return None
    return TraceParent(trace_id, span_id, flags)


def started(xray_header: str | None = None) -> TraceParent:
    """A new trace for a call that brought none: the X-Ray trace it runs in when there is one (the
    Lambda's `_X_AMZN_TRACE_ID`), so that X-Ray and the deliveries name the same trace; else random."""
    match = _XRAY_ROOT.search(xray_header or "")
    trace_id = match.group(1) + match.group(2) if match else secrets.token_hex(16)
    return TraceParent(trace_id, new_span_id())


def new_span_id() -> str:
    span = secrets.token_hex(8)
    return span if span != _ZERO_SPAN else new_span_id()


def for_attempt(traceparent: str | None, occurrence_key: str, attempt: int) -> TraceParent:
    """The trace context one attempt's delivery carries: the job's trace, with a span of this attempt
    alone (the same for a redelivery of the attempt, another for the next). A job stored without a
    trace gets one per occurrence, from its idempotency key, so that its attempts still share one."""
    parent = parse(traceparent)
    if parent is None:
        parent = TraceParent(_digest(occurrence_key, 16), _digest(f"{occurrence_key}:parent", 8))
    return parent.child(_digest(f"{occurrence_key}:{attempt}:{parent.trace_id}", 8))


def scheduled_text(job: Job) -> str:
    """The current occurrence's instant as its deliveries name it."""
    return format_rfc3339(job.scheduled_at if job.scheduled_at is not None else job.due_at or 0)


def occurrence_key(job: Job) -> str:
    """The current occurrence's idempotency key (invariant 11): the job and its scheduled instant."""
    return f"{job.id}:{scheduled_text(job)}"


def of_attempt(job: Job) -> TraceParent:
    """The trace context of the job's current attempt: its trace, a span of the attempt's own."""
    return for_attempt(job.traceparent, occurrence_key(job), job.attempt)


def trace_id_of(traceparent: str | None) -> str | None:
    parent = parse(traceparent)
    return parent.trace_id if parent is not None else None


def _digest(text: str, size: int) -> str:
    value = hashlib.blake2b(text.encode(), digest_size=size).hexdigest()
    return value if value.strip("0") else "1".rjust(size * 2, "0")


__all__ = [
    "TraceParent",
    "for_attempt",
    "new_span_id",
    "occurrence_key",
    "of_attempt",
    "parse",
    "scheduled_text",
    "started",
    "trace_id_of",
]
