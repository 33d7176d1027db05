"""Create-time checks of an http target: what can be judged without resolving a name (docs/api.md: 400)."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

from sundial.contract.targets import PARAMETER_ARN, SECRET_ARN, HttpTarget, Sealed, SecretRef
from sundial.shared.errors import InvalidInput
from sundial.shared.targets.guard import parse_literal, refusal

URL_FIELD = "target.url"
HEADERS_FIELD = "target.headers"

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Control characters (a tab aside, which a header value may hold): CR and LF would split the request.
_FORBIDDEN_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# urlsplit drops CR, LF and tabs without a word, so the url sent would not be the url stored; a space
# would end the request line. Each must be percent-encoded (%20).
_FORBIDDEN_IN_URL = re.compile(r"[\x00-\x20\x7f]")
# Framing headers belong to the HTTP client; the delivery headers belong to Sundial.
_RESERVED = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "idempotency-key",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "traceparent",
    }
)
_RESERVED_PREFIX = "sundial-"


def check_http_target(target: HttpTarget, *, allow_private: bool) -> None:
    """Refuses a url that is not https (plain http only to loopback in the local stack), that holds
    a space or control character, whose host carries a zone id or is a refused literal address, or
    headers a request cannot carry.

    Raises InvalidInput with field "target.url" or "target.headers".
    """
    parts = _split(target.url)
    host = parts.hostname or ""
    literal = parse_literal(host)
    reason = None if literal is None else refusal(literal, allow_private=allow_private)
    if reason is not None:
        raise InvalidInput(f"target url host {host} is a {reason}; use a public address", field=URL_FIELD)
    if parts.scheme == "http" and not (allow_private and _is_loopback_host(host)):
        raise InvalidInput(
            f"target url '{_shown(target.url)}' must use https (plain http is allowed only to loopback "
            "in the local stack)",
            field=URL_FIELD,
        )
    _check_headers(target.headers)


def _split(url: str) -> SplitResult:
    bad = _FORBIDDEN_IN_URL.search(url)
    if bad is not None:
        raise InvalidInput(
            f"target url must not contain {_named(bad.group())}; percent-encode it (a space is %20)",
            field=URL_FIELD,
        )
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as exc:
        raise InvalidInput(f"target url '{_shown(url)}' is not a valid url: {exc}", field=URL_FIELD) from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"target url '{_shown(url)}' must be https://host/...", field=URL_FIELD)
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(
            f"target url for host {parts.hostname} must not carry credentials; send them in headers",
            field=URL_FIELD,
        )
    if not port_ok:
        raise InvalidInput(f"target url '{_shown(url)}' has port 0", field=URL_FIELD)
    if "%" in parts.hostname:
        # A zone id ("fe80::1%25eth0") picks a network interface of whichever host sends.
        raise InvalidInput(
            f"target url host {parts.hostname!r} carries a zone id or an escape; name the host plainly",
            field=URL_FIELD,
        )
    return parts


def _shown(url: str) -> str:
    """`url` as a refusal quotes it: without its query, whose values may be secrets (and the
    answer may be logged)."""
    before, _, query = url.partition("?")
    return before + ("?***" if query else "")


def _named(character: str) -> str:
    return "a space" if character == " " else f"the control character {character!r}"


def _is_loopback_host(host: str) -> bool:
    literal = parse_literal(host)
    return host.lower() == "localhost" if literal is None else literal.is_loopback


def _check_headers(headers: dict[str, str | SecretRef | Sealed]) -> None:
    for name, value in headers.items():
        lowered = name.lower()
        if not _TOKEN.fullmatch(name):
            raise InvalidInput(f"target header name {name!r} is not a valid HTTP token", field=HEADERS_FIELD)
        if isinstance(value, SecretRef):
            _check_reference(name, value)
        elif isinstance(value, str) and _FORBIDDEN_VALUE.search(value):
            raise InvalidInput(
                f"target header {name} must not contain CR, LF or NUL, nor any other control character",
                field=HEADERS_FIELD,
            )
        if lowered in _RESERVED or lowered.startswith(_RESERVED_PREFIX):
            raise InvalidInput(
                f"target header {name} is set by Sundial and cannot be overridden", field=HEADERS_FIELD
            )


def _check_reference(name: str, reference: SecretRef) -> None:
    arn = reference.secret
    # fullmatch: "$" alone would also take a value that ends in a newline.
    if not any(re.fullmatch(form.removeprefix("^").removesuffix("$"), arn) for form in _REFERENCE_FORMS):
        raise InvalidInput(
            # Not shown back: a value put here by mistake may be the secret itself.
            f"target header {name} must refer to a Secrets Manager secret ARN "
            "(arn:<partition>:secretsmanager:<region>:<account>:secret:<name>) or an SSM parameter ARN "
            "(arn:<partition>:ssm:<region>:<account>:parameter/<name>)",
            field=f"{HEADERS_FIELD}.{name}.secret",
        )


_REFERENCE_FORMS = (SECRET_ARN, PARAMETER_ARN)
