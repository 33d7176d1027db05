"""Limits said once: a value the engine could not honour in full is refused, with the reason, rather
than accepted and quietly cut."""

from __future__ import annotations

from typing import Any

from sundial.contract.bounds import LONGEST_TIMEOUT_SECONDS, WORKER_FUNCTION_TIMEOUT_SECONDS
from sundial.shared import constants as c
from sundial.shared.targets import SnsTarget
from sundial.shared.targets.payload_room import payload_room
from tests.functions.conftest import Api

NOOP = {"type": "python", "handler": "noop"}


def test_a_timeout_the_worker_cannot_keep_is_refused_saying_why(api: Api, stored: Any) -> None:
    answer = api("POST", "/jobs", {"target": NOOP, "timeout_seconds": LONGEST_TIMEOUT_SECONDS + 1})

    assert answer.status == 400, answer.body
    assert answer.body["field"] == "timeout_seconds"
    message = answer.body["message"]
    assert f"at most {LONGEST_TIMEOUT_SECONDS}" in message and "worker invocation" in message, message
    assert stored() == []


def test_the_longest_timeout_is_accepted_and_a_change_past_it_changes_nothing(api: Api, stored: Any) -> None:
    created = api(
        "POST",
        "/jobs",
        {"target": NOOP, "schedule": "rate(1 hour)", "timeout_seconds": LONGEST_TIMEOUT_SECONDS},
    )
    assert created.status == 201, created.body
    assert created.body["timeout_seconds"] == LONGEST_TIMEOUT_SECONDS
    before = stored()

    changed = api(
        "PATCH", f"/jobs/{created.body['id']}", {"timeout_seconds": WORKER_FUNCTION_TIMEOUT_SECONDS}
    )

    assert changed.status == 400 and changed.body["field"] == "timeout_seconds", changed.body
    assert stored() == before


def test_the_contract_states_the_limit(api: Api) -> None:
    document = api("GET", "/openapi.json").body
    schemas = document["components"]["schemas"]

    for name in ("JobCreate", "JobUpdate"):
        field = schemas[name]["properties"]["timeout_seconds"]
        limits = [field, *field.get("anyOf", [])]
        assert any(part.get("maximum") == LONGEST_TIMEOUT_SECONDS for part in limits), (name, field)


def test_a_payload_its_target_could_never_carry_is_refused(api: Api, env: Any, stored: Any) -> None:
    topic_arn = "arn:aws:sns:us-east-1:123456789012:reports"
    target = {"type": "sns", "topic_arn": topic_arn}
    room = payload_room(SnsTarget(type="sns", topic_arn=topic_arn))
    assert room is not None and room < c.PAYLOAD_LIMIT_BYTES

    refused = api("POST", "/jobs", {"target": target, "payload": "x" * (room - 1)})
    accepted = api(
        "POST", "/jobs", {"target": target, "payload": "x" * (room - 2), "schedule": "rate(1 hour)"}
    )
    assert (refused.status, refused.body["field"]) == (413, "payload"), refused.body
    assert f"at most {room}" in refused.body["message"]
    assert accepted.status == 201, accepted.body
    before = stored()

    grown = api("PATCH", f"/jobs/{accepted.body['id']}", {"payload": "x" * (room - 1)})

    assert (grown.status, grown.body["field"]) == (413, "payload"), grown.body
    assert stored() == before
