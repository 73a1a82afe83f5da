"""Which addresses web_fetch may reach: public ones, judged with what they carry inside
(an IPv4 address in a mapped, 6to4, NAT64 or Teredo IPv6 one), and how names resolve."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterator

from lore.errors import ToolError

__all__ = ["Networks", "Resolver", "WebAddressRefused", "inside", "refusal", "system_resolver"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host, port -> the addresses it resolves to, as text
Resolver = Callable[[str, int], Awaitable[list[str]]]

Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class WebAddressRefused(ToolError):
    """The URL's host is, or resolves to, an address web_fetch may not reach."""


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ToolError(f"the host {host!r} could not be resolved ({exc.strerror})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def refusal(address: str) -> str | None:
    """Why `address` is not public (loopback, private, link-local, …), or None if it is.
    An IPv6 address carrying an IPv4 one (mapped, 6to4, NAT64, Teredo) is judged by both."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    for each in _with_embedded(ip):
        kind = _kind(each)
        if kind:
            return kind if each == ip else f"{kind} ({each} inside it)"
    return None


def _with_embedded(ip: IPAddress) -> Iterator[IPAddress]:
    """What an address carries, then the address itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            yield ip.ipv4_mapped
        if ip.sixtofour is not None:
            yield ip.sixtofour
        if ip.teredo is not None:
            yield from ip.teredo
        if ip in _NAT64:
            yield ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    yield ip


def inside(address: str, networks: Networks) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return any(ip in network for network in networks)


def _kind(ip: IPAddress) -> str:
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("not a public address", not ip.is_global),
    )
    return next((name for name, hit in checks if hit), "")
