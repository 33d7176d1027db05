"""Inline header values and url query values, sealed with the stage's KMS key before they are stored
(sundial/shared/service/sealing.py), opened here only by the worker at delivery (docs/operations.md: sealed
header values).

Anyone who reads the table (GetItem, Scan, a backup) sees ciphertext; only the worker's role may
decrypt. The encryption context names the job, so a ciphertext copied into another job's item does
not open there: a value sealed for one target is never sent to another job's url.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from botocore.exceptions import BotoCoreError, ClientError

from sundial.contract.targets import Sealed
from sundial.shared.targets.errors import TargetError
from sundial.shared.targets.kept import CACHE_SECONDS, Kept

CONTEXT_KEY = "sundial:job"
QUERY = "the url's query"


def context(job_id: str) -> dict[str, str]:
    return {CONTEXT_KEY: job_id}


class HeaderOpener:
    """Opens sealed header values and url queries through `client_for("kms")`, each kept for a
    minute (sundial/shared/targets/kept.py): a job's retries decrypt once."""

    def __init__(
        self,
        client_for: Callable[[str], Any],
        *,
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_for = client_for
        # (job id, ciphertext) -> (the plain value, the forms of it that error texts must not show)
        self._kept: Kept[tuple[str, str], tuple[str, tuple[str, ...]]] = Kept(
            seconds=cache_seconds, clock=clock
        )

    @property
    def reads(self) -> int:
        """Decrypt calls to KMS, for the cost figures (bench)."""
        return self._kept.reads

    @property
    def hits(self) -> int:
        """Values opened from what was kept, without a call."""
        return self._kept.hits

    def value(self, header: str, value: Sealed, job_id: str) -> str:
        """The plain value. Raises TargetError naming the header, never a value."""
        return self._opened(f"header {header}", value, job_id, _forms)

    def query(self, value: Sealed, job_id: str) -> str:
        """The url's query as it was sent at create, each of its values known to error texts.
        Raises TargetError, never showing a value."""
        return self._opened(QUERY, value, job_id, query_secrets)

    def known_values(self) -> list[str]:
        """Every value opened and still kept: what error texts must not show."""
        return [form for _, forms in self._kept.values() for form in forms]

    def _opened(self, what: str, value: Sealed, job_id: str, forms: Callable[[str], tuple[str, ...]]) -> str:
        def read() -> tuple[str, tuple[str, ...]]:
            plain = self._decrypt(what, value, job_id)
            return plain, forms(plain)

        return self._kept.get((job_id, value.sealed), read)[0]

    def _decrypt(self, what: str, value: Sealed, job_id: str) -> str:
        try:
            blob = base64.b64decode(value.sealed, validate=True)
            answer = self._client_for("kms").decrypt(CiphertextBlob=blob, EncryptionContext=context(job_id))
        except ValueError as exc:
            raise TargetError(f"{what}: its sealed value is not base64") from exc
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "UnknownError")
            raise TargetError(f"{what}: its sealed value could not be opened ({code})") from exc
        except BotoCoreError as exc:
            raise TargetError(f"{what}: its sealed value could not be opened ({type(exc).__name__})") from exc
        return bytes(answer["Plaintext"]).decode()


def _forms(plain: str) -> tuple[str, ...]:
    # Stripped too: a value with a trailing newline shows without it in most texts.
    return tuple({plain, plain.strip()})


def query_secrets(query: str) -> tuple[str, ...]:
    """The query, and each of its values both as sent (percent-encoded) and decoded: a target that
    echoes its request may show either."""
    raw = [pair.partition("=")[2] for pair in query.split("&")]
    decoded = [value for _, value in parse_qsl(query, keep_blank_values=True)]
    return tuple(dict.fromkeys(form for value in [query, *raw, *decoded] for form in _forms(value) if form))
