"""Which addresses an http target may reach (docs/api.md, Targets), checked on the address actually dialled.

The name is resolved here, every resolved address is judged, and the caller connects to a judged
address: a second lookup by the socket layer could answer differently (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Sequence

from sundial.shared.targets.errors import TargetError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]
"""Maps (host, port) to address strings; the system resolver unless a caller injects another."""

# Instance metadata services; link-local ones are refused anyway, the IPv6 one is a private (ULA) address.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
_NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")

# Refused outside the local stack, in this order (loopback addresses are also private, say the first).
_NOT_PUBLIC = (
    ("is_loopback", "loopback address"),
    ("is_unspecified", "unspecified address"),
    ("is_multicast", "multicast address"),
    ("is_reserved", "reserved address"),
    ("is_private", "private address"),
    # fec0::/10, deprecated but still routed inside some networks; Python counts it as global.
    ("is_site_local", "site-local address"),
)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host`, in its order, without duplicates.

    Raises socket.gaierror when the name does not resolve.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def parse_literal(host: str) -> IPAddress | None:
    """The address `host` spells, in any form the socket layer would accept ("127.1" too), else None."""
    try:
        infos = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return None
    return ipaddress.ip_address(infos[0][4][0])


def embedded_ipv4(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, NAT64), since that is where it leads."""
    if isinstance(address, ipaddress.IPv4Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64_PREFIX:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def refusal(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why a target may not reach `address` ("link-local address", ...), or None when it may."""
    address = embedded_ipv4(address)
    if address.is_link_local:
        return "link-local address"
    if address in METADATA_ADDRESSES:
        return "metadata address"
    if allow_private:
        return None
    for attribute, reason in _NOT_PUBLIC:
        if getattr(address, attribute, False):  # an IPv4 address has no is_site_local
            return reason
    return None if address.is_global else "non-public address"


def checked_addresses(
    host: str,
    port: int,
    *,
    allow_private: bool,
    loopback_only: bool,
    resolver: Resolver,
    timeout: float,
) -> list[IPAddress]:
    """The addresses of `host`, every one allowed; `loopback_only` for plain http.

    Raises TargetError when the name does not resolve or any address is refused (one bad answer
    refuses the lot, since a later attempt could be handed that one), and TimeoutError when the
    lookup outlasts `timeout` seconds.
    """
    if "%" in host:
        # A zone id picks an interface of this host: never a target's to choose (create refuses it).
        raise TargetError(f"connection to {host} refused: a zone id names a local interface")
    literal = parse_literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        addresses = [ipaddress.ip_address(a) for a in _resolve_within(host, port, resolver, timeout)]
    for address in addresses:
        _judge(host, address, allow_private=allow_private, loopback_only=loopback_only)
    if not addresses:
        raise TargetError(f"could not resolve {host}: no addresses")
    return addresses


def _judge(host: str, address: IPAddress, *, allow_private: bool, loopback_only: bool) -> None:
    reason = refusal(address, allow_private=allow_private)
    if reason is None and loopback_only and not embedded_ipv4(address).is_loopback:
        reason = "plain http is allowed only to a loopback address"
    if reason is None:
        return
    shown = str(address) if host == str(address) else f"{host} ({address})"
    raise TargetError(f"connection to {shown} refused: {reason}")


def _resolve_within(host: str, port: int, resolver: Resolver, timeout: float) -> Sequence[str]:
    # getaddrinfo takes no timeout; a daemon thread lets the attempt give up on a slow resolver.
    outcome: list[Sequence[str] | BaseException] = []

    def resolve() -> None:
        try:
            outcome.append(resolver(host, port))
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=resolve, name=f"resolve {host}", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise TimeoutError(f"resolving {host}")
    result = outcome[0]
    if isinstance(result, socket.gaierror):
        raise TargetError(f"could not resolve {host}: {result.strerror or result}") from result
    if isinstance(result, BaseException):
        raise result
    return result
