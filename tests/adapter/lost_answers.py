"""Writes that DynamoDB applies and whose answers are lost: the request reaches the emulator and is
applied, then the client sees a 500 InternalServerError, so botocore sends it again, and a
conditional write then fails its condition because it was applied."""

from __future__ import annotations

import threading
from typing import Any

import urllib3
from botocore.awsrequest import AWSResponse

from tests.chaos.faults import error_response

_http = urllib3.PoolManager()


class LostAnswers:
    """Arms `lose(operation, n)`: the next n calls of that DynamoDB operation lose their answers
    (the SDK's retries of a call whose answer was lost pass: each call loses one answer)."""

    def __init__(self, client: Any) -> None:
        self._armed: dict[str, int] = {}
        self._lock = threading.Lock()
        self._lost_bodies: set[bytes] = set()
        self.lost: list[str] = []
        client.meta.events.register("before-send.dynamodb", self._before_send)

    def lose(self, operation: str, times: int = 1) -> None:
        with self._lock:
            self._armed[operation] = times

    def _before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).rsplit(".", 1)[-1]
        body = request.body if isinstance(request.body, bytes) else str(request.body).encode()
        with self._lock:
            if self._armed.get(operation, 0) <= 0 or body in self._lost_bodies:
                return None
            self._armed[operation] -= 1
            self._lost_bodies.add(body)
            self.lost.append(operation)
        headers = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()}
        applied = _http.request(request.method, request.url, body=request.body, headers=headers)
        assert applied.status == 200 or b"ConditionalCheckFailed" in applied.data, applied.data
        return error_response(request, "InternalServerError", status=500)
