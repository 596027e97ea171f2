"""Which async token source answers: the model the controller holds, in process or remote.

Runs on the thread that starts an answer (the Send handler's: Tk's main thread); the source
it makes is iterated on the asyncio loop's thread.
"""

from __future__ import annotations

from tkchat.aio.answer import TokenSource
from tkchat.aio.local_source import LocalModelTokens
from tkchat.generate.backend import GenerationRequest
from tkchat.generate.controller import GenerationController
from tkchat.generate.remote import RemoteBackend


def token_source(
    controller: GenerationController, request: GenerationRequest, gen: int
) -> TokenSource:
    """The async source of ``request``'s answer from ``controller``'s backend: a server's
    through an async HTTP client, a model in this process through its worker."""
    backend = controller.backend
    if isinstance(backend, RemoteBackend):
        # Only here: httpx takes about 40 ms to import, and the first answer of an asyncio
        # mode on a local model waited for it on the main thread (a 37-40 ms stall, bench)
        from tkchat.aio.remote_source import RemoteTokens

        return RemoteTokens(backend, request)
    return LocalModelTokens(controller, request, gen)
