"""W3C trace context: reading a traceparent, starting one, and each attempt's span."""

from __future__ import annotations

from sundial.shared import tracing

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0736aa"
HEADER = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def test_a_well_formed_header_is_read_and_a_later_version_s_extra_fields_are_left_out() -> None:
    assert tracing.parse(HEADER) == tracing.TraceParent(TRACE_ID, "00f067aa0ba902b7", "01")
    assert tracing.parse(f" {HEADER} ") is not None
    later = tracing.parse(f"01-{TRACE_ID}-00f067aa0ba902b7-00-what-comes-next")
    assert later is not None and later.header == f"00-{TRACE_ID}-00f067aa0ba902b7-00"


def test_a_malformed_header_is_none() -> None:
    for header in (
        None,
        "",
        f"00-{TRACE_ID}-00f067aa0ba902b7-01-more",
        f"00-{TRACE_ID[:-1]}-00f067aa0ba902b7-01",
    ):
        assert tracing.parse(header) is None, header


def test_a_trace_started_under_x_ray_is_the_x_ray_trace() -> None:
    started = tracing.started("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")

    assert started.trace_id == "5759e988bd862e3fe1be46a994272793"
    assert started.xray_trace_id == "1-5759e988-bd862e3fe1be46a994272793"
    assert tracing.started().trace_id != tracing.started().trace_id  # random without X-Ray


def test_each_attempt_has_a_span_of_its_own_the_same_for_a_redelivery() -> None:
    first = tracing.for_attempt(HEADER, "job:2026-12-01T09:00:00Z", 1)
    again = tracing.for_attempt(HEADER, "job:2026-12-01T09:00:00Z", 1)
    second = tracing.for_attempt(HEADER, "job:2026-12-01T09:00:00Z", 2)

    assert first == again and first.trace_id == second.trace_id == TRACE_ID
    assert len({first.span_id, second.span_id, "00f067aa0ba902b7"}) == 3


def test_a_job_without_a_trace_gets_one_per_occurrence() -> None:
    one = tracing.for_attempt(None, "job:2026-12-01T09:00:00Z", 1)
    retry = tracing.for_attempt(None, "job:2026-12-01T09:00:00Z", 2)
    next_day = tracing.for_attempt(None, "job:2026-12-02T09:00:00Z", 1)

    assert one.trace_id == retry.trace_id != next_day.trace_id
    assert tracing.parse(one.header) == one
