"""The console's page and assets as a WSGI application, for the local stack and `sundial console`."""

from __future__ import annotations

import html
import mimetypes
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

STATIC = Path(__file__).with_name("static")
StartResponse = Callable[..., Any]

# Everything the page loads comes from where the page came from: no CDN, no inline script.
SECURITY_HEADERS = [
    (
        "Content-Security-Policy",
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
]
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


class ConsoleAssets:
    """Serves the console at `prefix` ("/console", or "" for the whole site), its page calling the API
    at `api_base` ("" when the API is on the same origin's root)."""

    def __init__(self, prefix: str = "/console", api_base: str = "", trace_url: str = "") -> None:
        """`trace_url` links each run's trace: a URL with `{trace_id}` or `{xray_trace_id}` in it."""
        self.prefix = prefix.rstrip("/")
        self._page = (
            (STATIC / "index.html")
            .read_text()
            .replace("{{API_BASE}}", api_base)
            .replace("{{ASSETS}}", f"{self.prefix}/static")
            .replace("{{TRACE_URL}}", html.escape(trace_url))
            .encode()
        )

    def handles(self, path: str) -> bool:
        return not self.prefix or path == self.prefix or path.startswith(self.prefix + "/")

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO") or "/")
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return _answer(
                start_response, "405 Method Not Allowed", "text/plain", b"GET only", [("Allow", "GET")]
            )
        if path == self.prefix:
            return _answer(
                start_response, "308 Permanent Redirect", "text/plain", b"", [("Location", path + "/")]
            )
        rest = path[len(self.prefix) :].lstrip("/")
        if rest in ("", "index.html"):
            return _answer(start_response, "200 OK", "text/html; charset=utf-8", self._page)
        found = _static_file(rest.removeprefix("static/")) if rest.startswith("static/") else None
        if found is None:
            return _answer(start_response, "404 Not Found", "text/plain", b"not part of the console")
        kind = _TYPES.get(found.suffix) or mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        return _answer(start_response, "200 OK", kind, found.read_bytes())


def _static_file(relative: str) -> Path | None:
    """A file under STATIC, never one outside it (`..`, absolute paths, links)."""
    candidate = (STATIC / relative).resolve()
    if not candidate.is_file() or not candidate.is_relative_to(STATIC.resolve()):
        return None
    return candidate


def _answer(
    start_response: StartResponse,
    status: str,
    kind: str,
    body: bytes,
    extra: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    # Revalidated on every load: a console upgraded with the package never runs stale modules.
    headers = [("Content-Type", kind), ("Content-Length", str(len(body))), ("Cache-Control", "no-cache")]
    start_response(status, [*headers, *SECURITY_HEADERS, *(extra or [])])
    return [body]
