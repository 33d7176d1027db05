"""Inline header values, sealed with the stage's KMS key before they are stored (shared/api/sealing.py),
opened here only by the worker at delivery (docs/operations.md: sealed header values).

Anyone who reads the table (GetItem, Scan, a backup) sees ciphertext; only the worker's role may
decrypt. The encryption context names the job, so a ciphertext copied into another job's item does
not open there: a value sealed for one target is never sent to another job's url.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.targets.errors import TargetError
from shared.targets.models import Sealed
from shared.targets.secrets import CACHE_SECONDS

CONTEXT_KEY = "sundial:job"


def context(job_id: str) -> dict[str, str]:
    return {CONTEXT_KEY: job_id}


class HeaderOpener:
    """Opens sealed values through `client_for("kms")`, each kept for a minute like a referenced
    secret (shared/targets/secrets.py): a job's retries decrypt once."""

    def __init__(
        self,
        client_for: Callable[[str], Any],
        *,
        cache_seconds: float = CACHE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_for = client_for
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, str], tuple[float, str]] = {}
        self.reads = 0  # calls to KMS, for the cost figures (bench)

    def value(self, header: str, value: Sealed, job_id: str) -> str:
        """The plain value. Raises TargetError naming the header, never a value."""
        key = (job_id, value.sealed)
        now = self._clock()
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and now - kept[0] < self._cache_seconds:
                return kept[1]
        plain = self._decrypt(header, value, job_id)
        with self._lock:
            self._kept[key] = (now, plain)
        return plain

    def known_values(self) -> list[str]:
        """Every value opened and still kept: what error texts must not show."""
        with self._lock:
            plains = [plain for _, plain in self._kept.values()]
        return [form for plain in plains for form in {plain, plain.strip()}]

    def _decrypt(self, header: str, value: Sealed, job_id: str) -> str:
        self.reads += 1
        try:
            blob = base64.b64decode(value.sealed, validate=True)
            answer = self._client_for("kms").decrypt(CiphertextBlob=blob, EncryptionContext=context(job_id))
        except ValueError as exc:
            raise TargetError(f"header {header}: its sealed value is not base64") from exc
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "UnknownError")
            raise TargetError(f"header {header}: its sealed value could not be opened ({code})") from exc
        except BotoCoreError as exc:
            raise TargetError(
                f"header {header}: its sealed value could not be opened ({type(exc).__name__})"
            ) from exc
        return bytes(answer["Plaintext"]).decode()
