"""A model behind an HTTP server, as a :class:`~tkchat.generate.backend.Backend`.

The worker streams from a server exactly as from a local model: it pulls pieces from
:meth:`RemoteBackend.stream`, and keeps its own jobs (UTF-8 assembly, coalescing, Stop,
exactly one final event). This class only decides which protocol to speak and ties the HTTP
plumbing (:mod:`.http`) to it (:mod:`.tkchat_protocol`, :mod:`.openai_protocol`).

The protocol is chosen in :meth:`RemoteBackend.load` from ``GET /health``: ``tkchat serve``
names itself there; any other server is taken as OpenAI-compatible.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace

from tkchat.conversation import Message
from tkchat.generate.backend import (
    GenerationRequest,
    JsonSupport,
    LoadCancelled,
    LoadWatch,
    TokenStream,
)
from tkchat.generate.remote import openai_protocol, tkchat_protocol
from tkchat.generate.remote.errors import Cancelled, RemoteError
from tkchat.generate.remote.http import TOKEN_ENV_VAR, HttpClient, split_server_url
from tkchat.limits import EVENT_TIMEOUT_S, HANDSHAKE_TIMEOUT_S, MAX_NAME_CHARS, cut

DEFAULT_N_CTX = 4096  # when the server does not say (OpenAI-compatible servers never do)


class RemoteBackend:
    """A model behind an HTTP server. Every method runs on a worker (or loader) thread,
    except :meth:`close`, which any thread may call.

    ``url``: the server, with or without a trailing ``/`` or ``/v1``. ``model``: the model
    name to ask an OpenAI-compatible server for (None: the first one ``/v1/models`` lists).
    ``connect_timeout``: seconds to wait for a TCP (and TLS) connection. ``idle_timeout``:
    seconds the server may stay silent — before the answer starts or in its middle — before
    the generation fails with a clear message. ``event_timeout``: seconds a streamed answer
    may go without an event, keep-alive comments or not (a server that only says "still
    here" is not answering). ``handshake_timeout``: seconds each request of :meth:`load`
    may take in all, however slowly its answer trickles in. ``token``: the bearer token of a
    ``tkchat serve --allow-remote`` server, or an OpenAI-compatible server's API key, sent
    with every request; None: ``$TKCHAT_SERVER_TOKEN`` (unset or empty: no token). The
    environment is the advised way: a token on a command line shows in ``ps``.
    """

    # The server has the tokenizer and applies its own context policy (a tkchat server the
    # one of generate/context.py): our token count is only an estimate, so the worker does
    # not fit the chat itself.
    context_known = False

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        connect_timeout: float = 5.0,
        idle_timeout: float = 60.0,
        token: str | None = None,
        event_timeout: float = EVENT_TIMEOUT_S,
        handshake_timeout: float = HANDSHAKE_TIMEOUT_S,
    ) -> None:
        """Nothing is contacted (or raised) here: :meth:`load` reports problems, on the loader
        thread, when the window is already up to show them."""
        self.url = url
        self.model = model
        self.n_ctx = DEFAULT_N_CTX
        self.protocol: str | None = None  # "tkchat" or "openai", known after load()
        # The largest chat a tkchat server's /chat takes: (characters, bytes of body).
        self.limits = (
            tkchat_protocol.DEFAULT_MAX_PROMPT_CHARS,
            tkchat_protocol.DEFAULT_MAX_BODY_BYTES,
        )
        # Ask for llama.cpp's prompt progress (``return_progress``)? Only a llama.cpp server
        # gets the extra field: strict OpenAI-compatible servers refuse unknown ones.
        self.ask_progress = False
        self._url_error: str | None = None
        try:
            scheme, host, port, base = split_server_url(url)
        except ValueError as exc:
            scheme, host, port, base = "http", url, 0, ""
            self._url_error = f"Not a usable server address: {exc}"
        self._http = HttpClient(
            scheme,
            host,
            port,
            base,
            connect_timeout=connect_timeout,
            idle_timeout=idle_timeout,
            token=os.environ.get(TOKEN_ENV_VAR) if token is None else token,
        )
        self._http.event_timeout = event_timeout
        self._http.handshake_timeout = handshake_timeout
        self.name = self._make_name()

    # -- settings and naming ------------------------------------------------------------------

    @property
    def connect_timeout(self) -> float:
        return self._http.connect_timeout

    @connect_timeout.setter
    def connect_timeout(self, seconds: float) -> None:
        self._http.connect_timeout = seconds

    @property
    def idle_timeout(self) -> float:
        return self._http.idle_timeout

    @idle_timeout.setter
    def idle_timeout(self, seconds: float) -> None:
        self._http.idle_timeout = seconds

    @property
    def address(self) -> str:
        """``HOST:PORT`` (IPv6 literals in brackets), as in the window's title."""
        return self._http.address

    @property
    def base_url(self) -> str:
        """The server's URL without ``/v1`` — the one error messages quote."""
        return self._http.base_url

    @property
    def http(self) -> HttpClient:
        """The server as this backend reaches it — address, token, timeouts, and the
        sentences its failures are told in — for a client of another kind to read (the
        asyncio client, ``tkchat/aio/remote_source.py``). Change nothing through it."""
        return self._http

    def _make_name(self) -> str:
        if self.model is None:
            return f"server at {self.address}"
        # What a server calls its model reaches the title and the status line: bounded (a
        # 1 MB name stalled the window; the request still names the model exactly).
        return f"server {cut(_short_model_name(self.model), MAX_NAME_CHARS)} at {self.address}"

    # -- the Backend protocol -------------------------------------------------------------------

    def load(self, watch: LoadWatch | None = None) -> None:
        """Loader thread. Ask the server what it is: tkchat's ``/health`` names itself; any
        other server is taken as OpenAI-compatible, and ``/v1/models`` must answer. (Two
        short requests: there is no progress to report in ``watch``.)

        Each request must be over within ``handshake_timeout``, and a cancelled ``watch``
        (the user gave the load up) or :meth:`close` ends it at the next poll."""
        try:
            self._load(None if watch is None else lambda: watch.cancelled)
        except Cancelled:
            raise LoadCancelled(f"Connecting to {self.base_url} was cancelled.") from None

    def _load(self, cancelled: Callable[[], bool] | None) -> None:
        if self._url_error is not None:
            raise RemoteError(self._url_error, kind="server_unreachable")
        status, health = self._http.get_json(tkchat_protocol.HEALTH_PATH, cancelled)
        if tkchat_protocol.is_tkchat(status, health):
            self.protocol = "tkchat"
            self.n_ctx = tkchat_protocol.context_size(health) or DEFAULT_N_CTX
            self.limits = tkchat_protocol.limits(health)
            if self.model is None:
                self.model = tkchat_protocol.model_name(health) or "tkchat"
        else:
            self.protocol = "openai"
            self.n_ctx = DEFAULT_N_CTX
            status, models = self._http.get_json(openai_protocol.MODELS_PATH, cancelled)
            names = openai_protocol.served_models(status, models, self.base_url)
            self.ask_progress = openai_protocol.is_llama_cpp(models)
            if self.model is None:
                if not names:
                    raise RemoteError(
                        f"The server at {self.base_url} lists no model "
                        f"(GET {openai_protocol.MODELS_PATH})",
                        kind="server_error",
                    )
                self.model = names[0]
        self.name = self._make_name()

    @property
    def json_support(self) -> JsonSupport:
        """An OpenAI-compatible server gets ``response_format`` as the client sent it and
        decides (llama-cpp-python's server honours ``json_object`` and refuses ``json_schema``
        with a 422, which reaches the client as an error); a tkchat server's ``/chat`` takes
        none (its own ``/v1`` does: ask it there)."""
        return "passed_on" if self.protocol == "openai" else "none"

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """A rough estimate, not a count: about four characters per token plus a few tokens
        of chat template per message. The server has the tokenizer; we do not. Of a chat
        longer than a tkchat server takes, what is sent of it (:meth:`stream`): the context
        meter showed a 1,000-message chat as 864,001 of 8,192 tokens."""
        if self.protocol == "tkchat":
            messages = tkchat_protocol.within_limits(messages, *self.limits)
        return sum(math.ceil(len(m.content) / 4) + 4 for m in messages)

    def close(self) -> None:
        """Any thread. Abort whatever is still open; the owning threads then close it."""
        self._http.abort_all()

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Worker thread. Yields each text delta as UTF-8 bytes; returns "stop" or "length"
        (or "cancelled" when Stop came while waiting on the network)."""
        if self.protocol is None:
            raise RemoteError(
                "The server has not been checked yet (load() first)", kind="server_error"
            )
        if cancel.is_set():
            return "cancelled"
        if self.protocol == "tkchat":
            sent = tkchat_protocol.within_limits(request.messages, *self.limits)
            request = replace(request, messages=sent)
            path, body = tkchat_protocol.CHAT_PATH, tkchat_protocol.request_body(request)
            answer_text = tkchat_protocol.answer_text
        else:
            path = openai_protocol.CHAT_PATH
            body = openai_protocol.request_body(request, self.model, progress=self.ask_progress)
            answer_text = openai_protocol.answer_text
        watch = self._http.watch(cancel)
        try:
            exchange = self._http.open("POST", path, body, watch, accept="text/event-stream")
        except Cancelled:
            return "cancelled"
        try:
            return (yield from answer_text(self._http.event_stream(exchange, path)))
        except Cancelled:
            return "cancelled"
        finally:
            # Stop, an error, the end, or the worker closing us (GeneratorExit): in every case
            # the connection goes now, so the server sees the disconnect at once.
            self._http.release(exchange)


def _short_model_name(model: str) -> str:
    """llama-cpp-python names a model by its file path; the title wants the file name. Hub
    names such as ``Qwen/Qwen2.5-0.5B-Instruct`` stay as they are."""
    if model.startswith(("/", "~")) or "\\" in model or model.lower().endswith(".gguf"):
        return re.split(r"[\\/]", model)[-1] or model
    return model
