"""Refuse any request that is not addressed to this server (the DNS-rebinding defence).

The server listens on 127.0.0.1, but that alone does not keep other web sites out: a page
the user visits can make its own host name resolve to 127.0.0.1 and then send requests
that the browser considers same-origin. What such a page cannot change is the ``Host``
header (its own name) and the ``Origin`` header (its own origin). So every request must
name one of the allowed hosts in ``Host`` (with or without this server's port) and, when it
carries an ``Origin``, that origin must be ``http://<allowed host>:<port>``; anything else
gets 403. The server sends no CORS headers at all, so no other origin is ever invited in.

With a ``token`` (the server listens beyond the loopback, :mod:`~tkchat.serve.listen`) the
Host header proves nothing, since any machine on the network can send any Host. Then every
request except the page's own files (``GET /`` and ``/static/…``, which hold no secret) must
carry ``Authorization: Bearer <token>`` (the scheme in any case, as HTTP wants) or a session
cookie (401 without either), and an ``Origin``, when sent, must be the origin its own Host
names (a cross-site form still gets 403).

The session is what the page trades its URL's token for (``POST /session`` with the token,
answered here: 204 and an ``HttpOnly``, ``SameSite=Strict`` cookie). The page can then take
the token out of its address bar and history at once, and a reload still works: it carries
the cookie, not the token. Sessions live in the server's memory (at most
:data:`MAX_SESSIONS`, the oldest forgotten first) and end with it.

The middleware runs on the server's event loop, in front of every route.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from tkchat.serve.errors import error_response

DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost")
SESSION_PATH = "/session"
MAX_SESSIONS = 64


def bracketed(host: str) -> str:
    """An IPv6 literal as it appears in a Host header or a URL."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


class HostOriginGuard:
    """Pure ASGI middleware (loop thread): 403 unless Host (and Origin, when sent) name this
    server. This is the DNS-rebinding defence: a hostile page whose name now resolves to
    127.0.0.1 still sends its own name in ``Host`` and its own origin in ``Origin``."""

    def __init__(
        self, app: ASGIApp, allowed_hosts: Sequence[str], port: int, token: str | None = None
    ) -> None:
        self.app = app
        self.token = token
        self.sessions = Sessions(f"tkchat-session-{port}")  # (a cookie per port: one host)
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
        problem = self.problem(headers) if self.token is None else self.remote_problem(headers)
        if problem is not None:
            await error_response(403, "forbidden", problem)(scope, receive, safe_send)
            return
        if self.token is not None and not _public(scope) and not self.authorized(headers):
            await error_response(
                401,
                "unauthorized",
                "This server needs its token: send 'Authorization: Bearer <token>', or open the"
                " URL tkchat serve printed (with #token=) in this browser once.",
                {"www-authenticate": "Bearer"},
                code="invalid_api_key",  # what OpenAI calls a wrong key, so its clients agree
            )(scope, receive, safe_send)
            return
        if self.token is not None and _is_session_request(scope):
            await self.sessions.start()(scope, receive, safe_send)
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

    def authorized(self, headers: Headers) -> bool:
        """Whether the request carries the token (compared in constant time) or a session
        this server started."""
        assert self.token is not None
        sent = bearer_credentials(headers.get("authorization", ""))
        if sent is not None and hmac.compare_digest(sent, self.token.encode()):
            return True
        return self.sessions.valid(headers)


def bearer_credentials(value: str) -> bytes | None:
    """The credentials of ``Authorization: Bearer <credentials>``; the scheme's name is
    case-insensitive (RFC 9110), so ``bearer`` and ``BEARER`` count. None for any other."""
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip().encode("utf-8", "replace")


class Sessions:
    """The sessions pages traded their token for (see the module docstring). Loop thread.
    Only a hash of each session id is kept: the ids themselves exist in the cookies alone."""

    def __init__(self, cookie: str) -> None:
        self.cookie = cookie
        self._hashes: OrderedDict[bytes, None] = OrderedDict()

    def start(self) -> Response:
        """A new session: 204, and its cookie (the token's own request proved the right)."""
        session = secrets.token_urlsafe(32)
        self._hashes[_digest(session)] = None
        while len(self._hashes) > MAX_SESSIONS:
            self._hashes.popitem(last=False)
        response = Response(status_code=204)
        response.set_cookie(
            self.cookie, session, httponly=True, samesite="strict", path="/", secure=False
        )
        return response

    def valid(self, headers: Headers) -> bool:
        sent = _cookie(headers.get("cookie", ""), self.cookie)
        return sent is not None and _digest(sent) in self._hashes


def _digest(session: str) -> bytes:
    return hashlib.sha256(session.encode("utf-8", "replace")).digest()


def _cookie(header: str, name: str) -> str | None:
    """The value of cookie ``name`` in a ``Cookie`` header (bounded: a header is at most
    what uvicorn accepts)."""
    for pair in header.split(";"):
        key, _, value = pair.strip().partition("=")
        if key == name:
            return value
    return None


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
