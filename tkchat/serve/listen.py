"""Where ``tkchat serve`` listens, and what it takes to listen beyond this machine.

By default the server binds the loopback only, and the Host/Origin guard is its defence
against other web sites (:mod:`~tkchat.serve.guard`). Anything else (``0.0.0.0``, ``::``, a LAN
address or name) lets other machines in, and there the Host header proves nothing: a client on
the LAN can send ``Host: 127.0.0.1`` and was served a full completion. So a non-loopback
address needs an explicit opt-in (``--allow-remote``), and then every request but the page's
own files needs a credential (:mod:`~tkchat.serve.guard`): the token the server makes at start
and prints on the terminal (``Authorization: Bearer <token>``, for programs), or what a browser
gets from the printed link (``/#join=…``, good for 15 minutes: never the token, since a browser
keeps the links it opened).

Addresses:

- ``localhost`` is both 127.0.0.1 and ::1 (when the machine has IPv6), since a browser may try
  either: two sockets on the same port.
- ``::`` is made dual-stack where the system allows it, so IPv4 clients get in as well.

Plain functions, called on the main thread before the server starts.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import socket

LOCALHOST_ADDRESSES = ("127.0.0.1", "::1")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (a loopback literal, or a name that resolves
    to loopback addresses alone); unknown names count as not loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(
        ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos
    )


def open_sockets(host: str, port: int) -> list[socket.socket]:
    """Bound, listening sockets for ``host`` (see the module); OSError if none can be had.
    With ``port`` 0 every socket gets the port the first one was given."""
    if host == "localhost":
        first = socket.create_server((LOCALHOST_ADDRESSES[0], port))
        sockets = [first]
        with contextlib.suppress(OSError):  # no IPv6 loopback on this machine: IPv4 alone
            sockets.append(
                socket.create_server(
                    (LOCALHOST_ADDRESSES[1], first.getsockname()[1]), family=socket.AF_INET6
                )
            )
        return sockets
    if ":" in host:
        dual = host.strip("[]") == "::" and socket.has_dualstack_ipv6()
        return [
            socket.create_server(
                (host.strip("[]"), port), family=socket.AF_INET6, dualstack_ipv6=dual
            )
        ]
    return [socket.create_server((host, port))]


def new_token() -> str:
    """A fresh secret for one run of the server (192 bits, URL-safe), never starting with
    "-": one in 64 did, and ``tkchat --server-token -abc…`` read it as an option ("expected
    one argument") when pasted as the server printed it."""
    while (token := secrets.token_urlsafe(24)).startswith("-"):
        pass
    return token


def reachable_address(host: str) -> str:
    """The address to print for ``host``: a wildcard becomes this machine's address on its
    default route (found without sending anything), or its host name."""
    if host.strip("[]") not in ("0.0.0.0", "::", ""):
        return host
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # UDP connect: picks a route, sends no packet
        return str(probe.getsockname()[0])
    except OSError:
        return socket.gethostname()
    finally:
        probe.close()
