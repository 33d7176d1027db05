"""The API's side of traces (docs/api.md, "Traces"): the service for a call that may schedule a run,
with the W3C `traceparent` it brought, or one started here."""

from __future__ import annotations

import os
from typing import Annotated

from aws_lambda_powertools import Tracer
from aws_lambda_powertools.event_handler.openapi.params import Header

from sundial.functions import clients
from sundial.shared import constants as c
from sundial.shared import tracing
from sundial.shared.service.service import JobService

# Where Lambda puts the X-Ray trace header of the invocation, when tracing is active.
XRAY_TRACE_ENV = "_X_AMZN_TRACE_ID"

tracer = Tracer(service=c.METRICS_SERVICE)

# No constraint: a malformed header is ignored, never a 400, as the W3C specification asks.
TraceHeader = Annotated[
    str | None,
    Header(
        alias="traceparent",
        description="W3C Trace Context: the trace that the runs this call schedules carry to their "
        "targets. A malformed one is ignored and a trace started instead, as when none is sent.",
        examples=["00-4bf92f3577b34da6a3ce929d0e0736aa-00f067aa0ba902b7-01"],
    ),
]


def traced_service(header: str | None) -> JobService:
    """The job service with the call's trace, or one started here: under X-Ray the invocation's own,
    so that X-Ray and the deliveries name the same trace. The X-Ray segment is annotated with the
    trace id, by which the API's, the tick's and the worker's segments are found."""
    trace = tracing.parse(header) or tracing.started(os.environ.get(XRAY_TRACE_ENV))
    tracer.put_annotation(key=c.TRACE_ANNOTATION, value=trace.trace_id)
    return clients.job_service().traced(trace.header)
