"""Reads the secrets an http target's headers refer to, at delivery time (docs/api.md: secret references).

Values are kept for a minute per execution environment: a worker delivering the same job's retries,
or many jobs that share one credential, reads it once a minute instead of once a delivery (each read
costs money and adds a round trip), and a rotated secret is in use within that minute.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.targets.errors import TargetError
from shared.targets.models import SecretRef

CACHE_SECONDS = 60.0
# Shorter values are not scrubbed from error texts: replacing every "ab" would garble them.
SCRUBBED_MIN_LENGTH = 4
SCRUBBED_MASK = "***"

ClientFor = Callable[[str], Any]
# As for an inline value (shared/targets/validation.py): CR or LF would split the request, and the
# HTTP client's refusal would quote the value.
_FORBIDDEN_IN_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class SecretResolver:
    """Resolves references through boto3 clients that `client_for("secretsmanager" | "ssm")` builds
    when first needed."""

    def __init__(
        self,
        client_for: ClientFor,
        *,
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_for = client_for
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[float, str]] = {}
        self.reads = 0  # calls to AWS, for the cost figures (bench)

    def value(self, header: str, reference: SecretRef) -> str:
        """The header's value. Raises TargetError naming the header and the ARN, never a value."""
        value = self._value(header, reference)
        if _FORBIDDEN_IN_VALUE.search(value):
            raise TargetError(
                f"header {header}: secret {reference.secret} holds a control character (a trailing "
                "newline?), which a header value cannot carry"
            )
        return value

    def _value(self, header: str, reference: SecretRef) -> str:
        raw = self._raw(header, reference.secret)
        if reference.json_key is None:
            return raw
        try:
            document = json.loads(raw)
        except ValueError:
            document = None
        if not isinstance(document, dict) or not isinstance(document.get(reference.json_key), str):
            raise TargetError(
                f"header {header}: secret {reference.secret} holds no JSON object with a string "
                f"key {reference.json_key!r}"
            )
        value: str = document[reference.json_key]
        return value

    def known_values(self) -> list[str]:
        """Every secret string read and still kept, and each JSON string in it: what error texts must
        not show."""
        with self._lock:
            raws = [raw for _, raw in self._kept.values()]
        # Stripped too: a value with a trailing newline shows without it in most texts.
        return [form for raw in raws for value in _with_json_strings(raw) for form in {value, value.strip()}]

    def _raw(self, header: str, arn: str) -> str:
        now = self._clock()
        with self._lock:
            kept = self._kept.get(arn)
            if kept is not None and now - kept[0] < self._cache_seconds:
                return kept[1]
        raw = self._read(header, arn)
        with self._lock:
            self._kept[arn] = (now, raw)
        return raw

    def _read(self, header: str, arn: str) -> str:
        self.reads += 1
        service = "ssm" if arn.split(":")[2] == "ssm" else "secretsmanager"
        try:
            if service == "ssm":
                answer = self._client_for("ssm").get_parameter(Name=arn, WithDecryption=True)
                return str(answer["Parameter"]["Value"])
            secret = self._client_for("secretsmanager").get_secret_value(SecretId=arn)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "UnknownError")
            raise TargetError(f"header {header}: secret {arn} could not be read ({code})") from exc
        except BotoCoreError as exc:
            raise TargetError(
                f"header {header}: secret {arn} could not be read ({type(exc).__name__})"
            ) from exc
        if "SecretString" not in secret:
            raise TargetError(f"header {header}: secret {arn} is binary; a header needs a string")
        return str(secret["SecretString"])


def _with_json_strings(raw: str) -> list[str]:
    try:
        document = json.loads(raw)
    except ValueError:
        return [raw]
    inner = (
        [value for value in document.values() if isinstance(value, str)] if isinstance(document, dict) else []
    )
    return [raw, *inner]


def scrubbed(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret in it replaced by the mask, and a secret's first characters at its
    end too (a snippet cut in the middle of one)."""
    values = sorted({value for value in secrets if len(value) >= SCRUBBED_MIN_LENGTH}, key=len, reverse=True)
    for value in values:
        text = text.replace(value, SCRUBBED_MASK)
    for value in values:
        for length in range(min(len(value) - 1, len(text)), SCRUBBED_MIN_LENGTH - 1, -1):
            if text.endswith(value[:length]):
                return text[:-length] + SCRUBBED_MASK
    return text
