"""Signs deliveries to the Standard Webhooks specification (docs/api.md: signatures).

The signing secret is one Secrets Manager secret per stage, whose value is `whsec_<base64 key>`, or
during a rotation the new key and the old one, space-separated (docs/operations.md: rotating the
signing secret): every key in it signs, so a receiver holding either verifies, and one read of the
secret gives them all.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sundial.shared.targets.errors import TargetError
from sundial.shared.targets.kept import CACHE_SECONDS, Kept

SECRET_PREFIX = "whsec_"
# A rotation's overlap needs two; more would only lengthen every delivery's header.
MOST_KEYS = 4
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def key_of(secret: str) -> bytes:
    """The HMAC key of a `whsec_<base64>` secret (the prefix may be left out)."""
    encoded = secret.removeprefix(SECRET_PREFIX)
    if not _BASE64.fullmatch(encoded):
        raise ValueError("the signing secret is not whsec_<base64>")
    try:
        # Padding may be left out, as the Standard Webhooks libraries allow.
        key = base64.b64decode(encoded.rstrip("=") + "==")
    except binascii.Error as exc:
        raise ValueError("the signing secret is not whsec_<base64>") from exc
    if not key:
        raise ValueError("the signing secret is empty")
    return key


class Signer:
    """Signs with the keys that `secret_id` holds now, read through `client_for("secretsmanager")` and
    kept for a minute (sundial/shared/targets/kept.py)."""

    def __init__(
        self,
        client_for: Callable[[str], Any],
        secret_id: str,
        *,
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._client_for = client_for
        self._secret_id = secret_id
        self._wall_clock = wall_clock
        self._kept: Kept[str, tuple[str, ...]] = Kept(seconds=cache_seconds, clock=clock)

    @property
    def reads(self) -> int:
        """Calls to Secrets Manager, for the cost figures (bench)."""
        return self._kept.reads

    def headers(self, message_id: str, body: bytes) -> dict[str, str]:
        """webhook-id, webhook-timestamp and webhook-signature for one delivery of `body`.

        Raises TargetError when the signing secret cannot be read: an unsigned delivery would be
        refused by every receiver that verifies.
        """
        timestamp = int(self._wall_clock())
        signatures = " ".join(
            signature(key_of(secret), message_id, timestamp, body) for secret in self.secrets()
        )
        return {
            "webhook-id": message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signatures,
        }

    def secrets(self) -> tuple[str, ...]:
        """The signing secrets valid now, the newest first."""
        return self._kept.get(self._secret_id, self._read)

    def known_values(self) -> list[str]:
        """What error texts must not show: each secret, with and without its prefix."""
        return [
            form
            for secrets in self._kept.values()
            for secret in secrets
            for form in (secret, secret.removeprefix(SECRET_PREFIX))
        ]

    def _read(self) -> tuple[str, ...]:
        try:
            answer = self._client_for("secretsmanager").get_secret_value(SecretId=self._secret_id)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "UnknownError")
            raise TargetError(f"the signing secret could not be read ({code})") from exc
        except BotoCoreError as exc:
            raise TargetError(f"the signing secret could not be read ({type(exc).__name__})") from exc
        return secrets_of(str(answer.get("SecretString", "")))


def secrets_of(value: str) -> tuple[str, ...]:
    """The signing secrets in the secret's value: one, or during a rotation the new one and the old,
    separated by spaces (or newlines). Raises TargetError for a value that holds none, or one that
    is not whsec_<base64>, without showing it."""
    found = tuple(dict.fromkeys(value.split()))
    if not found:
        raise TargetError("the signing secret is empty")
    if len(found) > MOST_KEYS:
        raise TargetError(f"the signing secret holds {len(found)} keys; at most {MOST_KEYS} sign")
    for n, secret in enumerate(found, start=1):
        try:
            key_of(secret)
        except ValueError as exc:
            raise TargetError(f"the signing secret's key {n} of {len(found)} is not whsec_<base64>") from exc
    return found
