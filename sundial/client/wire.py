"""The client's wire: where it sends (the local stack unsigned, a deployed stage SigV4-signed), each
request with its retries, and an answer read as the API's model or raised as its error."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

from botocore.credentials import Credentials
from pydantic import BaseModel, ValidationError

from sundial.client.errors import ApiError, InvalidInput, Unreachable, error_for
from sundial.client.signing import SERVICE, Signer, execute_api_region
from sundial.client.transport import RETRYABLE_STATUSES, Answer, RetryPolicy, Transport, urllib_transport

LOCAL_API_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_SECONDS = 30.0
USER_AGENT = "sundial-client/1"

M = TypeVar("M", bound=BaseModel)


class WireClient:
    """Requests and their retries, for SundialClient's one method per operation."""

    def __init__(
        self,
        base_url: str = LOCAL_API_URL,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        retries: RetryPolicy | None = None,
        sign: bool | None = None,
        region: str | None = None,
        profile: str | None = None,
        service: str = SERVICE,
        credentials: Credentials | None = None,
        transport: Transport = urllib_transport,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """`sign` None signs exactly when `base_url` is an execute-api host; `region` defaults to the
        URL's, then to the profile's. `credentials` replace botocore's chain (which reads `profile`)."""
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput(f"'{base_url}' is not an http(s) URL", field="base_url")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries or RetryPolicy()
        self.signer: Signer | None = None
        if sign or (sign is None and execute_api_region(base_url) is not None):
            region = region or execute_api_region(base_url) or _profile_region(profile)
            self.signer = Signer(region, service, profile, credentials)
        self._transport = transport
        self._sleep = sleep

    def pause(self, seconds: float) -> None:
        """Waits as the client's own retries wait (its `sleep`), for callers that pace requests."""
        self._sleep(seconds)

    def _call_json(self, method: str, path: str, answer_type: type[M], data: Any, *, safe: bool) -> M:
        answer = self.send(method, path, data, safe=safe)
        return self._answered(method, path, answer_type, answer)

    def _call(
        self,
        method: str,
        path: str,
        answer_type: type[M],
        *,
        body: BaseModel | None = None,
        query: Mapping[str, object] | None = None,
        headers: Mapping[str, str] | None = None,
        safe: bool | None = None,
    ) -> M:
        """`safe` (default: whether the method is GET) says whether a request that may have been
        served is sent again after a 5xx or a lost answer."""
        data = body.model_dump(mode="json", exclude_unset=True) if body is not None else None
        answer = self.send(method, path, data, query=query, headers=headers, safe=safe)
        return self._answered(method, path, answer_type, answer)

    @staticmethod
    def _answered(method: str, path: str, answer_type: type[M], answer: Answer) -> M:
        if answer.status >= 400:
            raise error_for(answer.status, answer.body, answer.reason)
        try:
            return answer_type.model_validate_json(answer.body)
        except ValidationError as exc:
            what = f"{method} {path} answered {answer.status} with no {answer_type.__name__}"
            raise ApiError(f"{what}: {exc.errors()[0]['msg']}", status=answer.status) from exc

    def send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Mapping[str, object] | None = None,
        headers: Mapping[str, str] | None = None,
        safe: bool | None = None,
    ) -> Answer:
        """One request with its retries; the last answer whatever its status. Raises Unreachable
        when no answer came, Unauthorized when there are no credentials to sign with."""
        url = self.base_url + path + _query_string(query or {})
        data = json.dumps(body).encode() if body is not None else None
        retry_served = method == "GET" if safe is None else safe
        for retry in range(self.retries.attempts):
            last = retry == self.retries.attempts - 1
            try:
                answer = self._transport(
                    method, url, self.headers(method, url, data, headers), data, self.timeout
                )
            except Unreachable as exc:
                if last or (exc.sent and not retry_served):
                    raise
                self._sleep(self.retries.delay(retry, None))
                continue
            if last or not _worth_again(answer.status, retry_served):
                return answer
            self._sleep(self.retries.delay(retry, answer))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def headers(
        self, method: str, url: str, data: bytes | None, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """What a request carries: JSON headers, `extra`, and the signature when the client signs."""
        # Errors come as problem details (RFC 9457), which are JSON too.
        headers = {"Accept": "application/json, application/problem+json", **(extra or {})}
        if data is not None:
            headers["Content-Type"] = "application/json"
        # Signed again on every attempt: the signature covers its instant.
        signed = self.signer.sign(method, url, headers, data) if self.signer else headers
        return {**signed, "User-Agent": USER_AGENT}


def _worth_again(status: int, retry_served: bool) -> bool:
    # A throttled request never reached the handler; any other 5xx may come after it ran.
    return status == 429 or (retry_served and status in RETRYABLE_STATUSES)


def _query_string(query: Mapping[str, object]) -> str:
    # Encoded as SigV4 canonicalises it (RFC 3986), so the signed query is the query sent.
    pairs = [
        f"{quote(name, safe='-_.~')}={quote(str(getattr(v, 'value', v)), safe='-_.~')}"
        for name, v in query.items()
        if v is not None
    ]
    return "?" + "&".join(pairs) if pairs else ""


def _profile_region(profile: str | None) -> str:
    from botocore.session import Session  # noqa: PLC0415

    region: Any = Session(profile=profile).get_config_variable("region")
    if not region:
        raise ApiError("signing needs a region: give one, or use an execute-api URL", field="region")
    return str(region)
