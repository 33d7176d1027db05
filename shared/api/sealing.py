"""The API's half of sealing: every inline header value that answers mask is encrypted with the
stage's KMS key before the job is stored, for that job alone (shared/targets/sealing.py opens it)."""

from __future__ import annotations

import base64
from typing import Any

from shared.targets.models import AnyTarget, HttpTarget, Sealed, is_shown_header
from shared.targets.sealing import context


class HeaderSealer:
    """Seals through `kms` (a boto3 client) with `key_id`; the API's role may only Encrypt with it."""

    def __init__(self, kms: Any, key_id: str) -> None:
        self._kms = kms
        self._key_id = key_id

    def sealed(self, target: AnyTarget, job_id: str) -> AnyTarget:
        """`target` with every inline header value that answers mask sealed for `job_id`."""
        if not isinstance(target, HttpTarget):
            return target
        headers = {
            name: self._seal(value, job_id) if isinstance(value, str) and not is_shown_header(name) else value
            for name, value in target.headers.items()
        }
        return target.model_copy(update={"headers": headers})

    def _seal(self, value: str, job_id: str) -> Sealed:
        answer = self._kms.encrypt(
            KeyId=self._key_id, Plaintext=value.encode(), EncryptionContext=context(job_id)
        )
        return Sealed(sealed=base64.b64encode(answer["CiphertextBlob"]).decode())
