"""A remote server's answer as an async token source: ``httpx.AsyncClient().stream(...)``.

When the window's model is a server (``tkchat --server URL``,
:class:`~tkchat.generate.remote.RemoteBackend`), the asyncio modes do what an asyncio chat
client does: ``POST /v1/chat/completions`` with ``"stream": true`` through an async HTTP
client, and ``async for`` over the bytes as they arrive. ``tkchat serve``, llama.cpp's server
and every OpenAI-compatible server speak it. No thread of ours waits on the network: the
coroutine waits on the loop, and the loop on its selector.

Why httpx: it is the HTTP client most Python chat code uses (OpenAI's own client is built on
it), one package for sync and async code, and it runs on asyncio as is. aiohttp is
async-only and heavier. (``httpx>=0.27`` is declared in pyproject.toml.)

One way to do each thing: the request is the sync backend's (its body,
:func:`~tkchat.generate.remote.openai_protocol.request_body`; its headers and token,
:meth:`~tkchat.generate.remote.http.HttpClient.request_parts`), the bytes are read into
events within the same bounds (:class:`~tkchat.generate.remote.bodies.EventBytes`), each
chunk is read by the same function (:func:`~tkchat.generate.remote.openai_protocol.read_chunk`),
and every failure — refused, an HTTP status, a server gone quiet for ``idle_timeout``, only
keep-alives for ``event_timeout`` — is the same sentence the sync backend's worker shows,
raised as :class:`~tkchat.aio.answer.SourceFailed`.

Stop cancels the task that iterates this source; the task then closes it (:meth:`aclose`):
the response and the client's connection are closed, so the server sees the disconnect and
stops generating (``tkchat serve`` counts it in ``/health``'s ``cancels``).

Everything here runs on the asyncio loop's thread (its own in ``asyncio-thread``, Tk's main
thread in ``asyncio-tk``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator

import httpx

from tkchat.aio.answer import SourceFailed
from tkchat.events import FinishReason, GenerationStats
from tkchat.generate.backend import GenerationRequest, PromptProgress
from tkchat.generate.remote import RemoteBackend, RemoteError
from tkchat.generate.remote.bodies import EventBytes, check_stream_type, parse_json
from tkchat.generate.remote.errors import closed_mid_answer
from tkchat.generate.remote.openai_protocol import CHAT_PATH, ended, read_chunk, request_body
from tkchat.generate.remote.watch import Watch
from tkchat.limits import MAX_JSON_BYTES


def _cause(exc: BaseException) -> BaseException:
    """The OS error under an httpx error (refused, unknown host...), which the sync client's
    sentences describe: the deepest one that has an errno (anyio wraps a refused connect in
    "All connection attempts failed"); the httpx error itself when there is none."""
    found: BaseException = exc
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and (seen.errno is not None or found is exc):
            found = seen
        seen = seen.__cause__ or seen.__context__
    return found


class RemoteTokens:
    """The answer of ``backend``'s server to ``request``, as an async iterator of text. The
    request is sent at the first ``__anext__``, on a client of its own. Loop thread."""

    context_dropped = 0  # the server applies its own context policy

    def __init__(self, backend: RemoteBackend, request: GenerationRequest) -> None:
        # The server has the tokenizer: the backend's estimate, as a worker counts a remote
        # prompt, so the context meter reads the same figure in every mode
        self.prompt_tokens = backend.count_tokens(request.messages)
        self.server = backend.http
        self.body = request_body(request, backend.model, progress=backend.ask_progress)
        self.reason: FinishReason = "stop"
        self.stats: GenerationStats | None = None
        self.client: httpx.AsyncClient | None = None
        self.response: httpx.Response | None = None
        self._reads: AsyncIterator[bytes] | None = None
        self._events = EventBytes()
        # The sync client's deadlines: idle (httpx's read timeout), and event (checked here)
        self._watch = Watch(None, self.server.idle_timeout, event_timeout=self.server.event_timeout)
        self._texts: deque[str | PromptProgress] = deque()  # read, not given yet
        self._finish: str | None = None
        self._over = False

    def __aiter__(self) -> RemoteTokens:
        return self

    async def __anext__(self) -> str | PromptProgress:
        try:
            if self._reads is None:
                self._reads = await self._open()
            while not self._texts and not self._over:
                await self._read(self._reads)
        except RemoteError as exc:
            raise SourceFailed(exc.kind, str(exc)) from exc
        if self._texts:
            return self._texts.popleft()
        raise StopAsyncIteration

    async def _open(self) -> AsyncIterator[bytes]:
        """Send the request; the answer's bytes once its status and type say it is a stream."""
        server = self.server
        timeout = httpx.Timeout(server.idle_timeout, connect=server.connect_timeout)
        # trust_env=False: no proxy from the environment, as the sync client (a local server)
        self.client = client = httpx.AsyncClient(timeout=timeout, trust_env=False)
        headers, data = server.request_parts("text/event-stream", self.body)
        url = server.base_url + CHAT_PATH
        try:
            request = client.build_request("POST", url, content=data, headers=headers)
            self.response = response = await client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise server.unreachable(_cause(exc)) from exc
        except httpx.TimeoutException as exc:
            raise self._watch.idle_error() from exc
        except httpx.TransportError as exc:
            raise server.no_answer(_cause(exc)) from exc
        self._watch.sent()
        if response.status_code == 401:
            raise server.unauthorized(CHAT_PATH)
        if response.status_code != 200:
            body = parse_json(
                await self._small_body(response), response.headers.get("Content-Type", "")
            )
            raise server.status_error(response.status_code, response.reason_phrase, CHAT_PATH, body)
        check_stream_type(response.headers.get("Content-Type", ""))
        return response.aiter_bytes()

    async def _small_body(self, response: httpx.Response) -> bytes:
        """At most ``MAX_JSON_BYTES`` (give or take one read) of an error's body."""
        body = b""
        try:
            async for data in response.aiter_bytes():
                body += data
                if len(body) >= MAX_JSON_BYTES:
                    break
        except httpx.TransportError:
            pass  # the status line already tells the story; the body is a bonus
        return body

    async def _read(self, reads: AsyncIterator[bytes]) -> None:
        """One read of the answer: its events' texts queued, its end noted."""
        try:
            data = await anext(reads, b"")
        except httpx.TimeoutException as exc:
            raise self._watch.idle_error() from exc
        except httpx.TransportError as exc:  # reset, or cut mid-body
            raise closed_mid_answer() from exc
        messages = self._events.feed(data)
        if messages is None:  # the body's end
            if self._finish is None:
                raise closed_mid_answer()
            self._end()  # a finished answer whose [DONE] the server left out
            return
        self._watch.touch()
        if messages:
            self._watch.heard()
        self._watch.check()  # keep-alives alone for event_timeout: given up
        for message in messages:
            parts = read_chunk(message.data)
            if parts is None:  # [DONE]
                self._end()
                return
            if parts.progress is not None:  # llama.cpp's, when asked (ask_progress)
                self._texts.append(parts.progress)
            if parts.text:
                self._texts.append(parts.text)
            self._finish = parts.finish or self._finish

    def _end(self) -> None:
        self._over = True
        self.reason = ended(self._finish)

    def interrupt(self) -> None:
        """Nothing from outside the loop: an httpx client belongs to its loop, so the request
        is closed by :meth:`aclose` at the task's next turn (the server then stops)."""

    async def aclose(self) -> None:
        """Close the response and the client's connection (at the end, on an error, or on
        Stop: then the server sees the disconnect at once and stops generating)."""
        self._over = True
        if self.response is not None:
            await self.response.aclose()
        if self.client is not None:
            await self.client.aclose()
