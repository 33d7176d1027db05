"""How much payload each target can carry: a limit the API enforces at create and PATCH, so that no
job is accepted whose every delivery its target would refuse (docs/api.md: payload).

SNS and EventBridge take at most 256 KiB a message, and their message is the whole envelope
(docs/api.md: the envelope): the payload, the occurrence's fields and the signature. A payload of the
API's own 256 KiB limit would be refused by both, attempt after attempt, until the job died. An SQS
queue takes up to 1 MiB unless its owner set its MaximumMessageSize lower, which only the queue's
owner can read: there the API's own limit applies, and a smaller queue's refusal is the attempt's
error.
"""

from __future__ import annotations

import base64
import functools

from sundial.contract.targets import AnyTarget, EventBridgeTarget, SnsTarget
from sundial.shared.targets.aws_delivery import envelope_json
from sundial.shared.targets.models import Delivery
from sundial.shared.targets.signing import MOST_KEYS, SECRET_PREFIX, Signer

# Publish: the message, attributes included (we send none), at most 262,144 bytes. PutEvents: an
# entry's Source, DetailType, Detail and its 14-byte Time together, at most 262,144.
CARRIER_BYTES = 256 * 1024
EVENT_TIME_BYTES = 14

# The longest values an envelope's fields take: a ULID, the last instant the API accepts, the
# 21st attempt (20 retries), and a signature by each key the signing secret may hold, at a 10-digit
# timestamp.
_LONGEST_JOB_ID = "7" * 26
_LONGEST_INSTANT = "9999-12-30T23:59:59.999Z"
_MOST_ATTEMPTS = 21
_LONGEST_TIMESTAMP = 9_999_999_999
# Every traceparent an attempt carries has this length (sundial/shared/tracing.py).
_A_TRACEPARENT = f"00-{'f' * 32}-{'f' * 16}-01"


@functools.cache
def envelope_overhead_bytes() -> int:
    """Bytes of the signed envelope besides its payload's JSON, at their longest: a constant, worked
    out once per process rather than signed again for every create."""
    delivery = Delivery(
        job_id=_LONGEST_JOB_ID,
        scheduled_at=_LONGEST_INSTANT,
        attempt=_MOST_ATTEMPTS,
        idempotency_key=f"{_LONGEST_JOB_ID}:{_LONGEST_INSTANT}",
        payload=None,
        traceparent=_A_TRACEPARENT,
    )
    signer = Signer(lambda _service: _MostKeys(), "sizing", wall_clock=lambda: _LONGEST_TIMESTAMP)
    return len(envelope_json(delivery, signer).encode()) - len(b"null")


def payload_room(target: AnyTarget) -> int | None:
    """The most bytes of payload JSON `target` can be delivered with, or None where only the API's
    own limit applies (http, lambda, sqs, python)."""
    if isinstance(target, SnsTarget):
        return CARRIER_BYTES - envelope_overhead_bytes()
    if isinstance(target, EventBridgeTarget):
        entry = EVENT_TIME_BYTES + len(target.source.encode()) + len(target.detail_type.encode())
        return CARRIER_BYTES - entry - envelope_overhead_bytes()
    return None


class _MostKeys:
    """A signing secret holding as many keys as may sign at once, as Secrets Manager answers it:
    only the number of signatures matters to the size, never the keys."""

    def get_secret_value(self, SecretId: str) -> dict[str, str]:  # noqa: N803
        keys = (SECRET_PREFIX + base64.b64encode(bytes([n]) * 32).decode() for n in range(MOST_KEYS))
        return {"SecretString": " ".join(keys)}
