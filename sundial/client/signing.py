"""SigV4 for API Gateway: botocore's signer and credential chain, on the exact bytes the client sends."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError
from botocore.session import Session

from sundial.client.errors import Unauthorized

SERVICE = "execute-api"
# https://<api id>.execute-api.<region>.amazonaws.com[.cn]/<stage>/
_EXECUTE_API = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


def execute_api_region(url: str) -> str | None:
    """The region of an API Gateway URL, or None for any other URL (the local stack's)."""
    match = _EXECUTE_API.match(urlsplit(url).hostname or "")
    return match.group(1) if match else None


class Signer:
    """Signs requests with credentials from botocore's chain (environment, profile, SSO, instance
    role...), looked up at the first request and refreshed by botocore when they expire."""

    def __init__(
        self,
        region: str,
        service: str = SERVICE,
        profile: str | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.region = region
        self.service = service
        self._profile = profile
        self._credentials = credentials

    def sign(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> dict[str, str]:
        """The headers with `X-Amz-Date`, `Authorization` (and `X-Amz-Security-Token` for temporary
        credentials) added. Raises Unauthorized when there are no credentials."""
        request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
        SigV4Auth(self.credentials().get_frozen_credentials(), self.service, self.region).add_auth(request)
        return dict(request.headers.items())

    def credentials(self) -> Credentials:
        if self._credentials is None:
            self._credentials = _lookup(self._profile)
        return self._credentials


def _lookup(profile: str | None) -> Credentials:
    try:
        found: Any = Session(profile=profile).get_credentials()
    except BotoCoreError as exc:  # e.g. a profile that does not exist
        raise Unauthorized(f"no AWS credentials to sign with: {exc}") from exc
    if found is None:
        where = f"profile '{profile}'" if profile else "the environment, ~/.aws or an instance role"
        raise Unauthorized(f"no AWS credentials to sign requests to API Gateway (looked in {where})")
    credentials: Credentials = found
    return credentials
