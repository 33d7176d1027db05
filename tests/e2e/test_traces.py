"""Traces on `sundial local`: an http target receives the traceparent of the create that scheduled
it, and its retry the same trace with a span of its own; the run history names the trace."""

from __future__ import annotations

import pytest

from shared import tracing
from tests.e2e.conftest import Stack
from tests.support.receivers import Receiver

pytestmark = pytest.mark.e2e

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


def test_the_create_s_trace_reaches_each_attempt_with_a_new_span(stack: Stack, receiver: Receiver) -> None:
    body = {
        "name": "traced",
        "target": {"type": "http", "url": receiver.url("/fail")},
        "max_retries": 1,
        "backoff": [1],
    }
    status, job = stack.api.call(
        "POST", "/jobs", body, headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}
    )
    assert status == 201, job

    stack.api.wait_for_status(job["id"], {"dead"}, timeout=60)

    parents = [tracing.parse(sent.headers.get("traceparent")) for sent in receiver.received]
    assert [parent.trace_id if parent else None for parent in parents] == [TRACE_ID, TRACE_ID]
    spans = [parent.span_id for parent in parents if parent]
    assert len(set(spans)) == 2 and CALLER_SPAN not in spans
    runs = stack.api.runs(job["id"])
    assert [(run["attempt"], run["trace_id"]) for run in runs] == [(2, TRACE_ID), (1, TRACE_ID)]
