"""Inline header values and url queries sealed with a key of the emulator's KMS, as the API stores
them, and opened only at delivery: the target still gets the plain value, a copy into another job
opens nothing, and an older item's plain value still goes out."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from sundial.shared.service.sealing import HeaderSealer
from sundial.shared.targets import (
    Delivery,
    DeliveryKeys,
    HeaderOpener,
    HttpTarget,
    Sealed,
    TargetError,
    deliver,
)
from sundial.shared.targets.models import masked
from tests.support.receivers import Receiver

JOB = "01JD0000000000000000000000"
OTHER_JOB = "01JD0000000000000000000001"
TOKEN = "Bearer sealed-token-6e1f"


def _delivery(job_id: str = JOB) -> Delivery:
    return Delivery(
        job_id=job_id,
        scheduled_at="2026-12-01T09:00:00Z",
        attempt=1,
        idempotency_key=f"{job_id}:2026-12-01T09:00:00Z",
        payload={"n": 1},
    )


@pytest.fixture
def opener(aws: dict[str, Any]) -> HeaderOpener:
    kms = boto3.client("kms", **aws)
    return HeaderOpener(lambda service: kms)


def _target(receiver: Receiver, path: str = "/hook", **headers: Any) -> HttpTarget:
    return HttpTarget(type="http", url=receiver.url(path), headers=headers)


def _sealed(sealer: HeaderSealer, target: HttpTarget, job_id: str) -> HttpTarget:
    sealed = sealer.sealed(target, job_id)
    assert isinstance(sealed, HttpTarget)
    return sealed


def _deliver(target: HttpTarget, opener: HeaderOpener | None, job_id: str = JOB) -> None:
    keys = DeliveryKeys(opener=opener)
    deliver(target, _delivery(job_id), timeout_seconds=5, clients=None, allow_private=True, keys=keys)


def test_a_sealed_value_is_ciphertext_in_the_item_and_plain_at_the_target(
    header_sealer: HeaderSealer, opener: HeaderOpener, receiver: Receiver
) -> None:
    plain = _target(receiver, Authorization=TOKEN, **{"Content-Type": "application/json"})

    sealed = _sealed(header_sealer, plain, JOB)

    stored = sealed.model_dump_json()
    assert TOKEN not in stored and "sealed-token" not in stored
    assert isinstance(sealed.headers["Authorization"], Sealed)
    assert sealed.headers["Content-Type"] == "application/json"  # allow-listed: shown, so not sealed
    assert HttpTarget.model_validate_json(stored) == sealed  # the item reads back as sealed
    shown = masked(sealed)
    assert isinstance(shown, HttpTarget) and shown.headers["Authorization"] == "***"

    _deliver(sealed, opener)
    _deliver(sealed, opener)

    assert [r.headers["Authorization"] for r in receiver.received] == [TOKEN, TOKEN]
    assert opener.reads == 1  # the retry's value came from the minute's cache


def test_a_sealed_value_copied_into_another_job_does_not_open(
    header_sealer: HeaderSealer, opener: HeaderOpener, receiver: Receiver
) -> None:
    sealed = _sealed(header_sealer, _target(receiver, Authorization=TOKEN), JOB)

    with pytest.raises(TargetError) as failure:
        _deliver(sealed, opener, job_id=OTHER_JOB)

    assert "header Authorization" in failure.value.reason and "could not be opened" in failure.value.reason
    assert receiver.received == []


def test_an_opened_value_that_the_target_echoes_is_scrubbed_from_the_error(
    header_sealer: HeaderSealer, opener: HeaderOpener, receiver: Receiver
) -> None:
    sealed = _sealed(header_sealer, _target(receiver, "/echo", Authorization=TOKEN), JOB)

    with pytest.raises(TargetError) as failure:
        _deliver(sealed, opener)

    assert "HTTP 500" in failure.value.reason and "Authorization" in failure.value.reason
    assert "sealed-token" not in failure.value.reason


def test_a_plain_value_stored_before_sealing_still_goes_out(receiver: Receiver) -> None:
    older = HttpTarget.model_validate_json(json.dumps(_target(receiver, Authorization=TOKEN).model_dump()))

    _deliver(older, None)

    assert receiver.received[0].headers["Authorization"] == TOKEN


def test_a_sealed_value_without_an_opener_fails_naming_the_header(
    header_sealer: HeaderSealer, receiver: Receiver
) -> None:
    sealed = _sealed(header_sealer, _target(receiver, Authorization=TOKEN), JOB)

    with pytest.raises(TargetError, match="header Authorization is sealed"):
        _deliver(sealed, None)


QUERY = "api_key=query-secret-2b7c&note=caf%C3%A9+au+lait&empty="


def test_a_sealed_query_is_masked_in_the_item_and_sent_as_created(
    header_sealer: HeaderSealer, opener: HeaderOpener, receiver: Receiver
) -> None:
    plain = _target(receiver, f"/hook?{QUERY}")

    sealed = _sealed(header_sealer, plain, JOB)

    stored = sealed.model_dump_json()
    assert "query-secret" not in stored and "lait" not in stored
    assert sealed.url.endswith("/hook?api_key=***&note=***&empty=***")
    assert isinstance(sealed.sealed_query, Sealed)
    assert HttpTarget.model_validate_json(stored) == sealed
    shown = masked(sealed)
    assert isinstance(shown, HttpTarget) and "sealed_query" not in shown.model_dump()
    assert shown.url == sealed.url

    _deliver(sealed, opener)
    _deliver(sealed, opener)

    assert [r.path for r in receiver.received] == [f"/hook?{QUERY}"] * 2
    assert opener.reads == 1


def test_a_query_the_target_echoes_is_scrubbed_encoded_and_decoded(
    header_sealer: HeaderSealer, opener: HeaderOpener, receiver: Receiver
) -> None:
    sealed = _sealed(header_sealer, _target(receiver, f"/echo?{QUERY}"), JOB)

    with pytest.raises(TargetError) as failure:
        _deliver(sealed, opener)

    assert "HTTP 500" in failure.value.reason and '"path": "/echo?' in failure.value.reason
    for shown in ("query-secret", "caf%C3%A9", "café au lait"):
        assert shown not in failure.value.reason


def test_a_sealed_query_copied_into_another_job_does_not_open(
    header_sealer: HeaderSealer, opener: HeaderOpener, receiver: Receiver
) -> None:
    sealed = _sealed(header_sealer, _target(receiver, f"/hook?{QUERY}"), JOB)

    with pytest.raises(TargetError, match="the url's query: its sealed value could not be opened"):
        _deliver(sealed, opener, job_id=OTHER_JOB)
    with pytest.raises(TargetError, match="the url's query is sealed"):
        _deliver(sealed, None)

    assert receiver.received == []


def test_a_query_stored_before_sealing_still_goes_out_and_is_scrubbed(receiver: Receiver) -> None:
    older = _target(receiver, f"/echo?{QUERY}")

    with pytest.raises(TargetError) as failure:
        _deliver(older, None)

    assert [r.path for r in receiver.received] == [f"/echo?{QUERY}"]
    assert "query-secret" not in failure.value.reason
