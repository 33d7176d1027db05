"""The address guard: which addresses an http target may reach, judged on what a name resolves to."""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Sequence

import pytest

from sundial.shared.targets import TargetError
from sundial.shared.targets.guard import Resolver, checked_addresses, parse_literal, refusal


@pytest.mark.parametrize(
    ("address", "public", "local_stack"),
    [
        # (address, refusal outside the local stack, refusal with allow_private)
        ("93.184.216.34", None, None),
        ("2606:2800:220:1:248:1893:25c8:1946", None, None),
        ("169.254.169.254", "link-local address", "link-local address"),
        ("169.254.0.1", "link-local address", "link-local address"),
        ("fe80::1", "link-local address", "link-local address"),
        ("fd00:ec2::254", "metadata address", "metadata address"),
        # IPv6 forms that lead to the IPv4 metadata address: mapped, 6to4, NAT64.
        ("::ffff:169.254.169.254", "link-local address", "link-local address"),
        ("2002:a9fe:a9fe::1", "link-local address", "link-local address"),
        ("64:ff9b::a9fe:a9fe", "link-local address", "link-local address"),
        ("10.1.2.3", "private address", None),
        ("172.16.0.1", "private address", None),
        ("192.168.1.1", "private address", None),
        ("fd12:3456::1", "private address", None),
        ("::ffff:10.0.0.1", "private address", None),
        ("127.0.0.1", "loopback address", None),
        ("::1", "loopback address", None),
        ("0.0.0.0", "unspecified address", None),
        ("::", "unspecified address", None),
        ("224.0.0.1", "multicast address", None),
        ("ff02::1", "multicast address", None),
        ("240.0.0.1", "reserved address", None),
        ("100.64.0.1", "non-public address", None),  # carrier-grade NAT: neither private nor global
    ],
)
def test_refusal(address: str, public: str | None, local_stack: str | None) -> None:
    ip = ipaddress.ip_address(address)
    assert refusal(ip, allow_private=False) == public
    assert refusal(ip, allow_private=True) == local_stack


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),  # the short forms the socket layer accepts are literals too
        ("2130706433", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
        ("example.com", None),
        ("localhost", None),
    ],
)
def test_parse_literal(host: str, expected: str | None) -> None:
    parsed = parse_literal(host)
    assert (None if parsed is None else str(parsed)) == expected


def resolver_for(table: dict[str, Sequence[str]]) -> tuple[list[str], Resolver]:
    """A resolver answering from `table`, and the list of names it was asked for."""
    asked: list[str] = []

    def resolve(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    return asked, resolve


NAMES: dict[str, Sequence[str]] = {
    "public.test": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "metadata.test": ["169.254.169.254"],
    "metadata6.test": ["fd00:ec2::254"],
    "internal.test": ["10.0.0.5"],
    "mixed.test": ["93.184.216.34", "10.0.0.5"],
    "loopback.test": ["127.0.0.1", "::1"],
    "empty.test": [],
}


@pytest.mark.parametrize(
    ("host", "allow_private", "loopback_only", "error"),
    [
        ("public.test", False, False, None),
        ("metadata.test", True, False, "connection to metadata.test (169.254.169.254) refused: link-local"),
        ("metadata6.test", True, False, "connection to metadata6.test (fd00:ec2::254) refused: metadata"),
        ("internal.test", False, False, "connection to internal.test (10.0.0.5) refused: private address"),
        ("internal.test", True, False, None),
        # One bad answer refuses the name: a retry could be handed that one.
        ("mixed.test", False, False, "connection to mixed.test (10.0.0.5) refused: private address"),
        ("loopback.test", False, False, "connection to loopback.test (127.0.0.1) refused: loopback"),
        ("loopback.test", True, True, None),
        ("internal.test", True, True, "refused: plain http is allowed only to a loopback address"),
        ("public.test", False, True, "refused: plain http is allowed only to a loopback address"),
        ("nowhere.test", False, False, "could not resolve nowhere.test: Name or service not known"),
        ("empty.test", False, False, "could not resolve empty.test: no addresses"),
        ("169.254.169.254", True, False, "connection to 169.254.169.254 refused: link-local address"),
    ],
)
def test_checked_addresses(host: str, allow_private: bool, loopback_only: bool, error: str | None) -> None:
    asked, resolve = resolver_for(NAMES)

    def check() -> list[str]:
        found = checked_addresses(
            host,
            443,
            allow_private=allow_private,
            loopback_only=loopback_only,
            resolver=resolve,
            timeout=1.0,
        )
        return [str(a) for a in found]

    if error is None:
        assert check() == list(NAMES[host])
    else:
        with pytest.raises(TargetError, match=error.replace("(", r"\(").replace(")", r"\)")):
            check()
    # A literal is never handed to the resolver.
    assert asked == ([] if parse_literal(host) else [host])


def test_a_slow_resolver_runs_out_the_attempts_time() -> None:
    def slow(host: str, port: int) -> Sequence[str]:
        time.sleep(5.0)
        return ["93.184.216.34"]

    started = time.monotonic()
    with pytest.raises(TimeoutError):
        checked_addresses(
            "slow.test", 443, allow_private=False, loopback_only=False, resolver=slow, timeout=0.2
        )
    assert time.monotonic() - started < 2.5  # far from the resolver's 5 s, whatever the load
