"""Refuse any request that is not addressed to this server (the DNS-rebinding defence).

The server listens on 127.0.0.1, but that alone does not keep other web sites out: a page
the user visits can make its own host name resolve to 127.0.0.1 and then send requests
that the browser considers same-origin. What such a page cannot change is the ``Host``
header (its own name) and the ``Origin`` header (its own origin). So every request must
name one of the allowed hosts in ``Host`` (with or without this server's port) and, when it
carries an ``Origin``, that origin must be ``http://<allowed host>:<port>``; anything else
gets 403. The server sends no CORS headers at all, so no other origin is ever invited in.

With an :class:`Access` (the server listens beyond the loopback, :mod:`~tkchat.serve.listen`)
the Host header proves nothing, since any machine on the network can send any Host. Then every
request except the page's own files (``GET /`` and ``/static/…``, which hold no secret) must
carry ``Authorization: Bearer <credential>`` (the scheme in any case, as HTTP wants; 401
without one), and an ``Origin``, when sent, must be the origin its own Host names (a
cross-site form still gets 403). A credential is one of:

- the server's **token**, for programs (OpenAI clients, curl). It is printed on the terminal
  only, never in a URL: a browser keeps the URLs it opened (history, sessions, tabs) on a lab
  PC that the next student uses.
- the **join code** in the link the server prints (``/#join=…``): it lets a browser in for
  :data:`JOIN_TTL_S` after the server starts, and nothing after, so the link left in a
  browser's history is dead by the next lesson.
- a **session**, which the page gets for the join code or the token (``POST /session``,
  answered ``{"session": "tks_…"}``). The page keeps it in ``sessionStorage``: bound to this
  origin (scheme, host *and port*, so another server on another port of the same host never
  sees it, as it would a cookie), kept across a reload, gone with the tab. A session lasts
  :data:`SESSION_TTL_S`; at most :data:`MAX_SESSIONS` are kept, the oldest ended first; one
  that ended gets a 401 that says so, and the page asks for the token.

The middleware runs on the server's event loop, in front of every route.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from tkchat.serve.errors import error_response

DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost")
SESSION_PATH = "/session"
JOIN_TTL_S = 15 * 60.0  # the printed link lets browsers in this long after the start
SESSION_TTL_S = 8 * 3600.0  # a school day
MAX_SESSIONS = 256  # a class of 30, a few tabs and reloads each
SESSION_PREFIX = "tks_"
NEEDS_TOKEN = (
    "This server needs its token: send 'Authorization: Bearer <token>', or open the link"
    " tkchat serve printed (with #join=) within 15 minutes of its start, or enter the token"
    " it printed."
)
LINK_EXPIRED = (
    "This link has expired (a link works for 15 minutes after tkchat serve starts): enter the"
    " token tkchat serve printed."
)
SESSION_ENDED = (
    "This page's session has ended (a session lasts 8 hours, and the server keeps the newest"
    " 256): enter the token tkchat serve printed, or open a new link."
)


def bracketed(host: str) -> str:
    """An IPv6 literal as it appears in a Host header or a URL."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class HostOriginGuard:
    """Pure ASGI middleware (loop thread): 403 unless Host (and Origin, when sent) name this
    server. This is the DNS-rebinding defence: a hostile page whose name now resolves to
    127.0.0.1 still sends its own name in ``Host`` and its own origin in ``Origin``."""

    def __init__(
        self, app: ASGIApp, allowed_hosts: Sequence[str], port: int, access: Access | None = None
    ) -> None:
        self.app = app
        self.access = access
        names = [bracketed(h.lower()) for h in allowed_hosts]
        self.hosts = {form for name in names for form in (name, f"{name}:{port}")}
        self.origins = {f"http://{name}:{port}" for name in names}
        if port == 80:  # browsers leave the default port out of Origin
            self.origins |= {f"http://{name}" for name in names}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        safe_send = partial(_send_with_safety_headers, send)  # every answer, the 403 too
        headers = Headers(scope=scope)
        access = self.access
        problem = self.problem(headers) if access is None else self.remote_problem(headers)
        if problem is not None:
            await error_response(403, "forbidden", problem)(scope, receive, safe_send)
            return
        if access is not None and not _public(scope):
            refused = access.refusal(headers)
            if refused is not None:
                await error_response(
                    401,
                    "unauthorized",
                    refused,
                    {"www-authenticate": "Bearer"},
                    code="invalid_api_key",  # what OpenAI calls a wrong key, so its clients agree
                )(scope, receive, safe_send)
                return
            if _is_session_request(scope):
                await access.sessions.start()(scope, receive, safe_send)
                return
        await self.app(scope, receive, safe_send)

    def problem(self, headers: Headers) -> str | None:
        """Why a request is refused, or None."""
        hosts = headers.getlist("host")
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            return f"Host {', '.join(hosts) or '(none)'} is not this server"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return f"Origin {origin} may not use this server"
        return None

    def remote_problem(self, headers: Headers) -> str | None:
        """With a token: one Host (any name), and an Origin only if it is that Host's own."""
        hosts = headers.getlist("host")
        if len(hosts) != 1:
            return "A request must name exactly one Host"
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"http://{hosts[0].lower()}":
            return f"Origin {origin} may not use this server"
        return None


def bearer_credentials(value: str) -> bytes | None:
    """The credentials of ``Authorization: Bearer <credentials>``; the scheme's name is
    case-insensitive (RFC 9110), so ``bearer`` and ``BEARER`` count. None for any other."""
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip().encode("utf-8", "replace")


class Access:
    """Who may use a server that listens beyond the loopback: the token, the join code until
    :data:`JOIN_TTL_S` after ``clock()`` at making, and the sessions (see the module
    docstring). Loop thread. ``clock``: ``time.monotonic``, or a test's."""

    def __init__(
        self, token: str, join_code: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.token = token.encode()
        self.join_code = join_code.encode()
        self.clock = clock
        self.join_until = clock() + JOIN_TTL_S
        self.sessions = Sessions(clock)

    def refusal(self, headers: Headers) -> str | None:
        """None if the request carries a credential that is good now; else the 401's
        sentence (a link that expired and a session that ended each say so)."""
        sent = bearer_credentials(headers.get("authorization", ""))
        if sent is None:
            return NEEDS_TOKEN
        if hmac.compare_digest(sent, self.token):  # (constant time: no timing oracle)
            return None
        if hmac.compare_digest(sent, self.join_code):
            return None if self.clock() < self.join_until else LINK_EXPIRED
        if sent.startswith(SESSION_PREFIX.encode()):
            return None if self.sessions.valid(sent) else SESSION_ENDED
        return NEEDS_TOKEN


class Sessions:
    """The sessions pages traded a join code or the token for. Loop thread. Only a hash of
    each session id is kept (with when it started): the ids exist in the pages alone."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._started: OrderedDict[bytes, float] = OrderedDict()  # oldest first

    def start(self) -> Response:
        """A new session, as JSON (the request's credential proved the right)."""
        session = SESSION_PREFIX + secrets.token_urlsafe(32)
        self._started[_digest(session.encode())] = self.clock()
        while len(self._started) > MAX_SESSIONS:
            self._started.popitem(last=False)
        return JSONResponse(
            {"session": session, "expires_in_s": SESSION_TTL_S},
            headers={"cache-control": "no-store"},
        )

    def valid(self, sent: bytes) -> bool:
        key = _digest(sent)
        started = self._started.get(key)
        if started is None:
            return False
        if self.clock() - started >= SESSION_TTL_S:
            del self._started[key]
            return False
        return True


def _digest(session: bytes) -> bytes:
    return hashlib.sha256(session).digest()


def _is_session_request(scope: Scope) -> bool:
    method: str = scope["method"]
    path: str = scope["path"]
    return method == "POST" and path == SESSION_PATH


def _public(scope: Scope) -> bool:
    """The page and its files: no secret in them, and the page must load to read its token."""
    path: str = scope["path"]
    return scope["method"] in ("GET", "HEAD") and (path == "/" or path.startswith("/static/"))


SAFETY_HEADERS = {
    # The content type is final: no browser guesses script from text.
    "x-content-type-options": "nosniff",
    # No other site may show our pages in a frame: a page that framed the client could
    # trick a click into it (clickjacking). Only a header can say this; the page's <meta>
    # CSP cannot (browsers ignore frame-ancestors there). X-Frame-Options is for old browsers.
    "content-security-policy": "frame-ancestors 'none'",
    "x-frame-options": "DENY",
}


async def _send_with_safety_headers(send: Send, message: ASGIMessage) -> None:
    """Add :data:`SAFETY_HEADERS` to a response's start (a route's own value wins)."""
    if message["type"] == "http.response.start":
        message.setdefault("headers", [])
        headers = MutableHeaders(scope=message)
        for name, value in SAFETY_HEADERS.items():
            headers.setdefault(name, value)
    await send(message)
