"""Masking, scrubbing and signing on their own: what answers show, what error texts keep, and a
signature the `standardwebhooks` library accepts."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook

from sundial.contract.targets import HttpTarget, SecretRef
from sundial.shared.targets import TargetError, deliver
from sundial.shared.targets.models import Delivery, masked, masked_url
from sundial.shared.targets.secrets import scrubbed
from sundial.shared.targets.signing import key_of, signature

KEY = base64.b64encode(bytes(range(32))).decode()


def test_only_allow_listed_values_and_references_are_shown() -> None:
    reference = SecretRef(secret="arn:aws:secretsmanager:us-east-1:123456789012:secret:a-AbCdEf")
    target = HttpTarget(
        type="http",
        url="https://h.example/p?a=1&b=two",
        headers={"content-TYPE": "text/plain", "X-Pass": "p", "Authorization": reference, "Accept": "*/*"},
    )

    shown = masked(target)

    assert isinstance(shown, HttpTarget)
    assert shown.headers == {
        "content-TYPE": "text/plain",
        "X-Pass": "***",
        "Authorization": reference,
        "Accept": "*/*",
    }
    assert shown.url == "https://h.example/p?a=***&b=***"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://h.example/p", "https://h.example/p"),
        ("https://h.example/p?flag", "https://h.example/p?flag=***"),
        ("https://h.example/p?k=v#frag", "https://h.example/p?k=***#frag"),
    ],
)
def test_query_values_are_masked_and_the_rest_kept(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_a_secret_is_scrubbed_wherever_it_is_and_where_a_cut_left_its_start() -> None:
    secrets = ["s3cr3t-value", "ab"]

    assert scrubbed("got s3cr3t-value twice: s3cr3t-value", secrets) == "got *** twice: ***"
    assert scrubbed("cut at 300 bytes: s3cr3t", secrets) == "cut at 300 bytes: ***"
    # Shorter than four characters: replacing every "ab" would garble the text.
    assert scrubbed("table abc", secrets) == "table abc"


@given(st.text(min_size=4, max_size=40), st.text(max_size=40), st.text(max_size=40))
def test_no_scrubbed_text_holds_the_secret(secret: str, before: str, after: str) -> None:
    assert secret not in scrubbed(before + secret + after, [secret])


@pytest.mark.parametrize("secret", [f"whsec_{KEY}", KEY, f"whsec_{KEY.rstrip('=')}"])
def test_a_signature_verifies_with_standardwebhooks(secret: str) -> None:
    now = int(datetime.now(UTC).timestamp())
    body = b'{"report":"daily"}'
    headers = {
        "webhook-id": "job:2026-12-01T09:00:00Z:1",
        "webhook-timestamp": str(now),
        "webhook-signature": signature(key_of(secret), "job:2026-12-01T09:00:00Z:1", now, body),
    }

    assert Webhook(secret).verify(body, headers) == {"report": "daily"}
    assert Webhook(f"whsec_{KEY}").verify(body, headers) == {"report": "daily"}


@pytest.mark.parametrize("secret", ["whsec_", "whsec_not base64!", "whsec_abcde"])
def test_a_signing_secret_that_is_not_base64_is_refused(secret: str) -> None:
    with pytest.raises(ValueError, match="signing secret"):
        key_of(secret)


def test_an_older_inline_value_the_http_client_refuses_is_not_shown_in_the_error() -> None:
    # Stored before values were checked at create: the client's refusal quotes it.
    target = HttpTarget(type="http", url="http://127.0.0.1:9/x", headers={"X-Pass": "old-inline-3b7f\n"})
    delivery = Delivery(job_id="j", scheduled_at="2026-12-01T09:00:00Z", attempt=1, idempotency_key="j:1")

    with pytest.raises(TargetError) as caught:
        deliver(target, delivery, timeout_seconds=2, clients=None, allow_private=True)  # type: ignore[arg-type]

    assert "old-inline-3b7f" not in str(caught.value)
