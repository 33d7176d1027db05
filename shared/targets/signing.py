"""Signs deliveries to the Standard Webhooks specification (docs/api.md: signatures).

The signing secret is one Secrets Manager secret per stage, `whsec_<base64 key>`. Its AWSCURRENT and
AWSPREVIOUS versions both sign: after a rotation a receiver holding either verifies, until the
operator removes the previous version's label (docs/operations.md: rotating the signing secret).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.targets.errors import TargetError

SECRET_PREFIX = "whsec_"
# As for referenced secrets (shared/targets/secrets.py): a rotation is in use within a minute.
CACHE_SECONDS = 60.0
_STAGES = ("AWSCURRENT", "AWSPREVIOUS")
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
    """Signs with the versions of `secret_id` that are valid now, read through
    `client_for("secretsmanager")` and kept for a minute."""

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
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._kept: tuple[float, tuple[str, ...]] | None = None
        self.reads = 0

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
        """The signing secrets valid now, current first."""
        now = self._clock()
        with self._lock:
            if self._kept is not None and now - self._kept[0] < self._cache_seconds:
                return self._kept[1]
        secrets = self._read()
        with self._lock:
            self._kept = (now, secrets)
        return secrets

    def known_values(self) -> list[str]:
        """What error texts must not show: each secret, with and without its prefix."""
        with self._lock:
            secrets = self._kept[1] if self._kept else ()
        return [form for secret in secrets for form in (secret, secret.removeprefix(SECRET_PREFIX))]

    def _read(self) -> tuple[str, ...]:
        client = self._client_for("secretsmanager")
        found: list[str] = []
        for stage in _STAGES:
            self.reads += 1
            try:
                answer = client.get_secret_value(SecretId=self._secret_id, VersionStage=stage)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "UnknownError")
                if stage != "AWSCURRENT" and code == "ResourceNotFoundException":
                    continue  # never rotated, or the overlap is over
                raise TargetError(f"the signing secret could not be read ({code})") from exc
            except BotoCoreError as exc:
                raise TargetError(f"the signing secret could not be read ({type(exc).__name__})") from exc
            secret = str(answer.get("SecretString", ""))
            try:
                key_of(secret)
            except ValueError as exc:
                raise TargetError(f"the signing secret's {stage} version is not whsec_<base64>") from exc
            found.append(secret)
        return tuple(dict.fromkeys(found))
