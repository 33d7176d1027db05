"""Who may use an HTTP server on loopback: the console's forwarder and the local stack's API alike.

A page on any site can make a browser send requests to 127.0.0.1, so two things are checked on each:

- the Host names this server (127.0.0.1, localhost or [::1] at its port, or a host configured):
  a page whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own name;
- a change is not cross-site: its Origin, when a browser sent one, is this server's own, and the
  console's header (which no other site can send without a preflight, which is answered for this
  server's own origins only) or the absence of every browser's marks shows it came from the console
  page or from a program.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

CONSOLE_HEADER = "X-Sundial-Console"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# What a preflight may ask for: the console's calls, and the API's own request headers.
ALLOWED_METHODS = "GET, POST, PUT, PATCH, DELETE"
ALLOWED_HEADERS = f"Content-Type, Idempotency-Key, {CONSOLE_HEADER}"
PREFLIGHT_MAX_AGE_SECONDS = 600
_CONSOLE_KEY = "HTTP_" + CONSOLE_HEADER.upper().replace("-", "_")
# Sec-Fetch-Site values of a request a page made from somewhere else.
_FROM_ELSEWHERE = frozenset({"cross-site", "same-site"})


@dataclass(frozen=True)
class Refusal:
    status: HTTPStatus
    message: str
    field: str


def loopback_hosts(port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host values a server on loopback at `port` answers to, plus `extra` ("name:port")."""
    return frozenset({f"{name}:{port}" for name in LOOPBACK_NAMES} | {host.lower() for host in extra})


@dataclass(frozen=True)
class SiteGuard:
    """The checks for one server: `hosts` are the Host values it answers to ("127.0.0.1:8000")."""

    hosts: frozenset[str]

    @classmethod
    def of(cls, hosts: Iterable[str]) -> SiteGuard:
        return cls(frozenset(host.lower() for host in hosts))

    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    def host_refusal(self, environ: Mapping[str, Any]) -> Refusal | None:
        host = _host(environ)
        if host in self.hosts:
            return None
        return Refusal(HTTPStatus.MISDIRECTED_REQUEST, "this server answers on its own address only", "Host")

    def cross_site_refusal(self, environ: Mapping[str, Any], *, console_only: bool = False) -> Refusal | None:
        """Why a request is refused as another site's, or None. Reads pass unless `console_only`
        (every call must then come from the console page); changes must not come from elsewhere."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and origin.lower() not in self.origins():
            message = f"requests from {origin[:100]!r} are not served here"
            return Refusal(HTTPStatus.FORBIDDEN, message, "Origin")
        from_console = environ.get(_CONSOLE_KEY) == "1"
        if console_only and not from_console:
            message = f"API calls come from the console page ({CONSOLE_HEADER})"
            return Refusal(HTTPStatus.FORBIDDEN, message, CONSOLE_HEADER)
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        if method in SAFE_METHODS or from_console or origin is not None:
            return None
        if str(environ.get("HTTP_SEC_FETCH_SITE", "")).lower() in _FROM_ELSEWHERE:
            return Refusal(HTTPStatus.FORBIDDEN, "a change must come from this server's own pages", "Origin")
        return None

    def cors_headers(self, environ: Mapping[str, Any]) -> list[tuple[str, str]]:
        """For an answer to one of this server's own origins: who may read it."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is None or origin.lower() not in self.origins():
            return []
        return [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]

    def preflight(self, environ: Mapping[str, Any]) -> tuple[HTTPStatus, list[tuple[str, str]]]:
        """The answer to an OPTIONS request: 204 with what may be sent for an own origin, else 403."""
        allowed = self.cors_headers(environ)
        if not allowed:
            return HTTPStatus.FORBIDDEN, [("Vary", "Origin")]
        return HTTPStatus.NO_CONTENT, [
            *allowed,
            ("Access-Control-Allow-Methods", ALLOWED_METHODS),
            ("Access-Control-Allow-Headers", ALLOWED_HEADERS),
            ("Access-Control-Max-Age", str(PREFLIGHT_MAX_AGE_SECONDS)),
        ]


def is_preflight(environ: Mapping[str, Any]) -> bool:
    return (
        str(environ.get("REQUEST_METHOD", "")).upper() == "OPTIONS"
        and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in environ
    )


def _host(environ: Mapping[str, Any]) -> str:
    """The Host as "name:port": one sent without a port names port 80, plain HTTP's."""
    host = str(environ.get("HTTP_HOST", "")).strip().lower()
    if not host or ":" in host.rsplit("]", 1)[-1]:
        return host
    return f"{host}:80"
