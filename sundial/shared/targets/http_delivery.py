"""Delivers an occurrence to an http target: one request to a checked address, no redirects followed,
the whole exchange (lookup, connect, TLS, request, answer) bounded by the attempt's timeout."""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from sundial.contract.targets import HttpTarget, Sealed, SecretRef
from sundial.shared.targets.errors import TargetError, TargetTimedOut, describe
from sundial.shared.targets.guard import IPAddress, Resolver, checked_addresses, system_resolver
from sundial.shared.targets.keys import DeliveryKeys
from sundial.shared.targets.models import Delivery, is_shown_header, plain_query, with_query
from sundial.shared.targets.sealing import query_secrets
from sundial.shared.targets.secrets import scrubbed

USER_AGENT = "Sundial/1"
_SNIPPET_BYTES = 300
_DEFAULT_PORTS = {"http": 80, "https": 443}

Dialer = Callable[[], socket.socket]


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    target: str  # path and query, as sent on the request line

    @property
    def shown(self) -> str:
        """The url without its query, which may carry secrets into the run history."""
        port = "" if self.port == _DEFAULT_PORTS[self.scheme] else f":{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}{port}{self.target.split('?', 1)[0]}"


@dataclass(frozen=True)
class _Answer:
    status: int
    location: str | None
    snippet: str


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left; raises TimeoutError when none are."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        return left

    def expired(self) -> bool:
        return time.monotonic() >= self._end


def deliver_http(
    target: HttpTarget,
    delivery: Delivery,
    *,
    timeout_seconds: float,
    allow_private: bool,
    resolver: Resolver = system_resolver,
    tls_context: ssl.SSLContext | None = None,
    keys: DeliveryKeys | None = None,
) -> None:
    """Sends the payload to `target.url` and succeeds on a 2xx answer within `timeout_seconds`;
    signed when `keys` has a signer, with referenced header values read through its resolver.

    Raises TargetError for a refused address, a secret that cannot be read, a network or TLS
    failure, a timeout, a redirect or any other non-2xx answer.
    """
    keys = keys or DeliveryKeys()
    endpoint = parse_endpoint(url_to_send(target, keys, delivery.job_id))
    deadline = _Deadline(timeout_seconds)
    # GET has no defined body semantics and many servers refuse one; its payload stays unsent.
    body = None if target.method == "GET" else json.dumps(delivery.payload, separators=(",", ":")).encode()
    headers = request_headers(target, delivery, has_body=body is not None, keys=keys, body=body)
    dial = _dialer(endpoint, deadline, allow_private=allow_private, resolver=resolver)
    connection = _connection(endpoint, dial, tls_context)
    try:
        with _watchdog(connection, deadline):
            connection.request(target.method, endpoint.target, body=body, headers=headers)
            answer = _answer(connection)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise _network_failure(exc, endpoint, deadline) from exc
    finally:
        connection.close()
    if deadline.expired():
        # The watchdog's shutdown can end a trickled answer so that it still parses as complete.
        raise _network_failure(TimeoutError("deadline passed"), endpoint, deadline)
    _judge(answer, endpoint, [*inline_secrets(target), *keys.known_values()])


def url_to_send(target: HttpTarget, keys: DeliveryKeys, job_id: str) -> str:
    """The url with its query as sent at create: opened when sealed. Raises TargetError."""
    if target.sealed_query is None:
        return target.url  # no query, or one stored before sealing
    if keys.opener is None:
        raise TargetError("the url's query is sealed, and no sealed value can be opened here")
    return with_query(target.url, keys.opener.query(target.sealed_query, job_id))


def parse_endpoint(url: str) -> Endpoint:
    """Where a request for `url` goes; raises TargetError for a url that is not http(s)://host/..."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetError(f"invalid url: {exc}") from exc
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise TargetError("invalid url: must be https://host/...")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Endpoint(parts.scheme, parts.hostname, port or _DEFAULT_PORTS[parts.scheme], target)


def request_headers(
    target: HttpTarget,
    delivery: Delivery,
    *,
    has_body: bool,
    keys: DeliveryKeys | None = None,
    body: bytes | None = None,
) -> dict[str, str]:
    """The user's headers (references read) plus Sundial's, signed over `body` when `keys` has a
    signer; Sundial's win over a user header of the same name.

    Raises TargetError when a referenced secret cannot be read.
    """
    keys = keys or DeliveryKeys()
    defaults = {"User-Agent": USER_AGENT} | ({"Content-Type": "application/json"} if has_body else {})
    sundial = {
        "Idempotency-Key": delivery.idempotency_key,
        "Sundial-Job-Id": delivery.job_id,
        "Sundial-Scheduled-At": delivery.scheduled_at,
        "Sundial-Attempt": str(delivery.attempt),
    }
    if delivery.traceparent is not None:
        sundial["traceparent"] = delivery.traceparent
    if keys.signer is not None:
        sundial |= keys.signer.headers(delivery.message_id, body or b"")
    user = {name: _value(name, value, keys, delivery.job_id) for name, value in target.headers.items()}
    merged: dict[str, tuple[str, str]] = {}
    for name, value in (*defaults.items(), *user.items(), *sundial.items()):
        merged[name.lower()] = (name, value)
    return dict(merged.values())


def _value(name: str, value: str | SecretRef | Sealed, keys: DeliveryKeys, job_id: str) -> str:
    if isinstance(value, str):
        return value  # a value stored before sealing, or an allow-listed one
    if isinstance(value, Sealed):
        if keys.opener is None:
            raise TargetError(f"header {name} is sealed, and no sealed value can be opened here")
        return keys.opener.value(name, value, job_id)
    if keys.resolver is None:
        raise TargetError(f"header {name} refers to secret {value.secret}, and no secret can be read here")
    return keys.resolver.value(name, value)


def inline_secrets(target: HttpTarget) -> list[str]:
    """The target's own values that answers mask and that it holds in clear (stored before sealing):
    header values with and without surrounding whitespace, and its url's query values."""
    values = [v for name, v in target.headers.items() if isinstance(v, str) and not is_shown_header(name)]
    query = plain_query(target)
    return [form for value in values for form in {value, value.strip()}] + (
        list(query_secrets(query)) if query else []
    )


def _dialer(endpoint: Endpoint, deadline: _Deadline, *, allow_private: bool, resolver: Resolver) -> Dialer:
    def dial() -> socket.socket:
        addresses = checked_addresses(
            endpoint.host,
            endpoint.port,
            allow_private=allow_private,
            loopback_only=endpoint.scheme == "http",
            resolver=resolver,
            timeout=deadline.remaining(),
        )
        return _connect_first(addresses, endpoint.port, deadline)

    return dial


def _connect_first(addresses: list[IPAddress], port: int, deadline: _Deadline) -> socket.socket:
    failure: OSError = OSError("no address to connect to")
    for address in addresses:
        try:
            return _open(address, port, deadline)
        except TimeoutError:
            raise
        except OSError as exc:
            failure = exc
    raise failure


def _open(address: IPAddress, port: int, deadline: _Deadline) -> socket.socket:
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(deadline.remaining())
        # A literal address: the socket layer parses it, it does not look it up again.
        sock.connect((str(address), port))
        sock.settimeout(deadline.remaining())
    except BaseException:
        sock.close()
        raise
    return sock


class _GuardedConnection(http.client.HTTPConnection):
    def __init__(self, endpoint: Endpoint, dial: Dialer) -> None:
        super().__init__(endpoint.host, endpoint.port)
        self._dial = dial

    def connect(self) -> None:
        self.sock = self._dial()


class _GuardedTLSConnection(http.client.HTTPSConnection):
    def __init__(self, endpoint: Endpoint, dial: Dialer, context: ssl.SSLContext) -> None:
        super().__init__(endpoint.host, endpoint.port, context=context)
        self._dial = dial
        self._tls = context

    def connect(self) -> None:
        # The certificate is checked against the name in the url, not the address dialled.
        self.sock = self._tls.wrap_socket(self._dial(), server_hostname=self.host)


@functools.cache
def _default_tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def _connection(
    endpoint: Endpoint, dial: Dialer, tls_context: ssl.SSLContext | None
) -> http.client.HTTPConnection:
    if endpoint.scheme == "https":
        return _GuardedTLSConnection(endpoint, dial, tls_context or _default_tls())
    return _GuardedConnection(endpoint, dial)


@contextlib.contextmanager
def _watchdog(connection: http.client.HTTPConnection, deadline: _Deadline) -> Iterator[None]:
    # Socket timeouts bound each read, not the sum of them: a server that trickles bytes would outlive
    # the attempt. Shutting the socket down at the deadline ends whatever read is under way.
    timer = threading.Timer(deadline.seconds, _abort, args=(connection,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _abort(connection: http.client.HTTPConnection) -> None:
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _answer(connection: http.client.HTTPConnection) -> _Answer:
    response = connection.getresponse()
    snippet = b"" if 200 <= response.status < 300 else response.read(_SNIPPET_BYTES)
    text = snippet.decode("utf-8", "replace").strip()
    return _Answer(response.status, response.getheader("Location"), text)


def _judge(answer: _Answer, endpoint: Endpoint, secrets: Sequence[str]) -> None:
    """Raises TargetError for an answer that is not a 2xx, with what the target said scrubbed of
    `secrets`: a target that echoes its request would put them in the history and the logs."""
    if 200 <= answer.status < 300:
        return
    if 300 <= answer.status < 400:
        location = scrubbed(answer.location or "(no location)", secrets)
        raise TargetError(
            f"HTTP {answer.status} from {endpoint.shown} redirects to {location}: redirects are not followed"
        )
    snippet = scrubbed(answer.snippet, secrets)
    detail = f": {snippet}" if snippet else ""
    raise TargetError(f"HTTP {answer.status} from {endpoint.shown}{detail}")


def _network_failure(exc: Exception, endpoint: Endpoint, deadline: _Deadline) -> TargetError:
    where = f"{endpoint.host}:{endpoint.port}"
    if isinstance(exc, TimeoutError) or deadline.expired():
        return TargetTimedOut(f"timed out after {deadline.seconds:g} s")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return TargetError(f"TLS certificate of {endpoint.host} not accepted: {exc.verify_message}")
    if isinstance(exc, ssl.SSLError):
        return TargetError(f"TLS error with {where}: {exc.reason or exc}")
    if isinstance(exc, ConnectionRefusedError):
        return TargetError(f"connection to {where} refused")
    if isinstance(exc, OSError):
        return TargetError(f"connection to {where} failed: {exc.strerror or exc}")
    if isinstance(exc, ValueError):
        return TargetError(f"request to {endpoint.shown} not sent: {exc}")
    return TargetError(f"bad answer from {endpoint.shown}: {describe(exc)}")
