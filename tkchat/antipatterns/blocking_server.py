"""BROKEN ON PURPOSE — ``tkchat serve --broken``: the model iterated on the event loop.

The server-side twin of ``blocking``. A first async server often reads::

    for token in await asyncio.to_thread(generate_tokens, prompt):
        yield frame(token)

and looks right: the model call is "moved to a thread". But ``generate_tokens`` is a
generator function, so the thread only *creates* the generator, which costs nothing, and hands
it back at once. Every token is computed later, by ``next()`` in the ``for``, and the ``for``
runs on the event loop. Writing a frame does not give the loop a turn either (the socket's
buffer has room), so the whole answer is one long task: while it streams no other request is
read, ``/health`` waits, and a client's disconnect is not even noticed.

:class:`BlockingChatServer` is the real server with only ``POST /chat`` replaced by that
version; ``tkchat bench --serve-loop`` runs both and measures the loop (see
``tkchat/lab/bench/server_loop.py``). The fix is ``tkchat/serve/bridge.py``: a worker thread
iterates, and only finished events cross to the loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tkchat.events import Chunk, Done, Error, GenerationStats
from tkchat.generate.backend import BackendError, PromptProgress
from tkchat.generate.worker import Utf8Assembler
from tkchat.serve.server import ChatServer
from tkchat.serve.streaming import SSE_HEADERS
from tkchat.serve.validation import parse_chat_request, read_json
from tkchat.transport.sse import encode_event

BANNER = "BROKEN ON PURPOSE: /chat iterates the model on the event loop (the article's version)"


class BlockingChatServer(ChatServer):
    """``tkchat serve`` with a BROKEN ``POST /chat``; every other route is the real one.
    Event loop thread — where, unlike the real server, the model also runs."""

    broken = True
    # Answers being iterated right now. The real server knows it is busy from its workers
    # (GenerationSlot.line); this one has no worker, so /health would say "not busy" in the
    # moments its blocked loop does answer (when a slow reader makes a write wait).
    answering = 0

    @property
    def busy(self) -> bool:
        return super().busy or self.answering > 0

    async def chat(self, request: Request) -> StreamingResponse:
        payload = await read_json(request, self.max_body_bytes)
        generation = parse_chat_request(payload, self.max_prompt_chars)
        gen = self.controller.new_gen()
        cancel = threading.Event()
        # THE MISTAKE: the thread returns a generator that has not computed anything yet.
        tokens = await asyncio.to_thread(self.backend.stream, generation, cancel)

        async def frames() -> AsyncIterator[bytes]:
            started = time.perf_counter()
            assembler = Utf8Assembler()
            count, seq = 0, 0
            final: Done | Error
            self.answering += 1
            try:
                # ... and here, on the event loop, each next() runs the model for one token.
                for piece in tokens:
                    if isinstance(piece, PromptProgress):
                        continue
                    count += 1
                    text = assembler.feed(piece)
                    if text:
                        seq += 1
                        yield encode_event(Chunk(gen, seq, text))
                stats = GenerationStats(tokens=count, elapsed_s=time.perf_counter() - started)
                final = Done(gen, seq + 1, "stop", stats)
            except BackendError as exc:
                final = Error(gen, seq + 1, exc.kind, str(exc))
            except Exception as exc:  # the contract: one error event, whatever went wrong
                final = Error(gen, seq + 1, type(exc).__name__, f"{type(exc).__name__}: {exc}")
            finally:
                cancel.set()
                self.answering -= 1
            yield encode_event(final)

        return StreamingResponse(frames(), headers=SSE_HEADERS)

    async def health(self, request: Request) -> Response:
        """The real report, labelled: whoever asks can tell this server is the broken one."""
        response = await super().health(request)
        report = json.loads(bytes(response.body))
        return JSONResponse({**report, "broken": BANNER})
