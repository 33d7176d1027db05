"""Reads the secrets an http target's headers refer to, at delivery time (docs/api.md: secret references),
each kept for a minute (sundial/shared/targets/kept.py)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from sundial.contract.targets import SecretRef
from sundial.shared.targets.errors import TargetError
from sundial.shared.targets.kept import CACHE_SECONDS, Kept

# Shorter values are not scrubbed from error texts: replacing every "ab" would garble them.
SCRUBBED_MIN_LENGTH = 4
SCRUBBED_MASK = "***"

ClientFor = Callable[[str], Any]
# As for an inline value (sundial/shared/targets/validation.py): CR or LF would split the request, and the
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
        self._kept: Kept[str, str] = Kept(seconds=cache_seconds, clock=clock)

    @property
    def reads(self) -> int:
        """Calls to AWS, for the cost figures (bench)."""
        return self._kept.reads

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
        arn = reference.secret
        raw = self._kept.get(arn, lambda: self._read(header, arn))
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
        raws = self._kept.values()
        # Stripped too: a value with a trailing newline shows without it in most texts.
        return [form for raw in raws for value in _with_json_strings(raw) for form in {value, value.strip()}]

    def _read(self, header: str, arn: str) -> str:
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
