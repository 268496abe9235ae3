"""Who is the client? Forwarded headers are believed only from the proxies the operator named.

uvicorn believes `X-Forwarded-For` and `X-Forwarded-Proto` from 127.0.0.1 by default. On a server with no proxy
in front, that lets any local process choose the client address the log-in back-off is keyed on; behind a proxy
that appends to the header instead of overwriting it, every client could (issue 34: a rotated header took the
back-off from 9 to 256 passwords a minute). `tritonlab serve` switches uvicorn's handling off and puts
`TrustedProxies` in front of the app instead:

- No trusted proxy (the default): the peer address is the client. Forwarded headers are ignored.
- The peer is a trusted proxy (`--trusted-proxy ADDR`, or `TRITONLAB_TRUSTED_PROXIES`; an address or a
  network, e.g. `127.0.0.1` or `10.0.0.0/24`): the client is the right-most `X-Forwarded-For` entry that is not
  itself a trusted proxy (the documented nginx overwrites the header with the one address it saw, so there is
  exactly one), and the scheme is `X-Forwarded-Proto` when that is `http` or `https`. An entry that is not an
  IP address ends the walk: the last address believed stays the client (at worst the proxy itself, which puts
  everyone behind it under one back-off counter: never a way around it).
- The peer is not a trusted proxy: as with none configured.

Either way every forwarded header (`X-Forwarded-*`, `X-Real-IP`, `Forwarded`) is removed from the request
before the app sees it, so nothing below can read a client's forgery by mistake.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

ENV = "TRITONLAB_TRUSTED_PROXIES"
FORWARDED_HEADERS = frozenset(
    {
        b"x-forwarded-for",
        b"x-forwarded-proto",
        b"x-forwarded-host",
        b"x-forwarded-port",
        b"x-real-ip",
        b"forwarded",
    }
)
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """The trusted proxies named by `values` (addresses or networks; commas and spaces also separate). Raises
    ValueError, with a sentence for people, for anything that is not one, and for a network that trusts every
    address (what this module exists to prevent)."""
    found: list[Network] = []
    for value in values:
        for item in value.replace(",", " ").split():
            try:
                network = ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(
                    f"{item!r} is not an IP address or network (give the proxy's address as it connects to the "
                    "server, e.g. 127.0.0.1 or 10.0.0.0/24)"
                ) from None
            if network.prefixlen == 0:
                raise ValueError(
                    f"{item!r} trusts every address: any client could then choose its own address; name the "
                    "proxy's address instead"
                )
            found.append(network)
    return tuple(found)


def from_env() -> tuple[Network, ...]:
    """The trusted proxies of TRITONLAB_TRUSTED_PROXIES (none when unset)."""
    return parse_networks([os.environ.get(ENV, "")])


def _address(text: str) -> Address | None:
    try:
        ip = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


class TrustedProxies:
    """ASGI middleware: the client address and scheme from a trusted proxy's headers, else the peer's."""

    def __init__(self, app: ASGIApp, trusted: Iterable[Network] = ()) -> None:
        self.app = app
        self.trusted = tuple(trusted)

    def is_trusted(self, ip: Address | None) -> bool:
        return ip is not None and any(ip in network for network in self.trusted)

    def client(self, peer: Address | None, forwarded_for: list[str]) -> Address | None:
        """The client behind the trusted `peer`: walk `X-Forwarded-For` from the right, past trusted proxies."""
        client = peer
        for entry in reversed(forwarded_for):
            ip = _address(entry)
            if ip is None:
                break
            client = ip
            if not self.is_trusted(ip):
                break
        return client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers") or []
        forwarded = [(k.lower(), v) for k, v in headers if k.lower() in FORWARDED_HEADERS]
        scope = {**scope, "headers": [(k, v) for k, v in headers if k.lower() not in FORWARDED_HEADERS]}
        peer_pair = scope.get("client")
        peer = _address(str(peer_pair[0])) if peer_pair else None
        if forwarded and self.is_trusted(peer):
            entries = [
                part
                for k, v in forwarded
                if k == b"x-forwarded-for"
                for part in v.decode("latin-1").split(",")
            ]
            client = self.client(peer, entries)
            if client is not None and client != peer:
                scope["client"] = (str(client), 0)
            protos = [
                v.decode("latin-1").split(",")[-1].strip().lower()
                for k, v in forwarded
                if k == b"x-forwarded-proto"
            ]
            if protos and protos[-1] in ("http", "https"):
                scope["scheme"] = (
                    protos[-1] if scope["type"] == "http" else {"http": "ws", "https": "wss"}[protos[-1]]
                )
        await self.app(scope, receive, send)
