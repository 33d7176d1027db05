"""The API's half of sealing: every inline header value that answers mask, and the url's query, are
encrypted with the stage's KMS key before the job is stored, for that job alone
(sundial/shared/targets/sealing.py opens them)."""

from __future__ import annotations

import base64
from typing import Any

from sundial.contract.targets import AnyTarget, HttpTarget, Sealed
from sundial.shared.models import Job
from sundial.shared.targets.models import is_shown_header, masked_url, plain_query
from sundial.shared.targets.sealing import context


class HeaderSealer:
    """Seals through `kms` (a boto3 client) with `key_id`; the API's role may only Encrypt with it."""

    def __init__(self, kms: Any, key_id: str) -> None:
        self._kms = kms
        self._key_id = key_id

    def sealed_job(self, job: Job) -> Job:
        """The job as its item holds it: its target's and alert route's inline header values sealed
        for its id (docs/operations.md: sealed header values)."""
        sealed: dict[str, Any] = {"target": self.sealed(job.target, job.id)}
        if job.on_dead is not None:
            sealed["on_dead"] = self.sealed(job.on_dead, job.id)
        return job.model_copy(update=sealed)

    def sealed(self, target: AnyTarget, job_id: str) -> AnyTarget:
        """`target` with every non-empty inline header value that answers mask sealed for `job_id`, and its
        url's query sealed apart, the url keeping the query as answers show it (`?api_key=***`)."""
        if not isinstance(target, HttpTarget):
            return target
        # KMS refuses an empty plaintext, and an empty value has nothing to hide: it stays plain.
        headers = {
            name: self._seal(value, job_id)
            if isinstance(value, str) and value != "" and not is_shown_header(name)
            else value
            for name, value in target.headers.items()
        }
        update: dict[str, Any] = {"headers": headers}
        query = plain_query(target)
        if query:
            update |= {"url": masked_url(target.url), "sealed_query": self._seal(query, job_id)}
        return target.model_copy(update=update)

    def _seal(self, value: str, job_id: str) -> Sealed:
        answer = self._kms.encrypt(
            KeyId=self._key_id, Plaintext=value.encode(), EncryptionContext=context(job_id)
        )
        return Sealed(sealed=base64.b64encode(answer["CiphertextBlob"]).decode())
