"""A remote server as a backend: ``tkchat serve``, or any OpenAI-compatible server.

- :mod:`.backend` — :class:`RemoteBackend`, the :class:`~tkchat.generate.backend.Backend`
  the worker streams from; it picks the protocol when it loads;
- :mod:`.http` — the client: a server's address and token, one connection per request,
  the failures of a request in one sentence each;
- :mod:`.polling` — no wait longer than a poll, so Stop is noticed: the connect, the reads,
  the idle and event timeouts and a short request's deadline;
- :mod:`.bodies` — reading the answers: an event stream as it arrives (checked on its first
  line), a JSON body, each within its cap;
- :mod:`.tkchat_protocol` — ``tkchat serve``'s own event contract over SSE;
- :mod:`.openai_protocol` — ``/v1/chat/completions`` streaming, as llama.cpp's server,
  llama-cpp-python's, Ollama, vLLM and LM Studio speak it;
- :mod:`.errors` — :class:`RemoteError` and the sentences failures are told in.

The SSE framing itself is the transport stage's: :mod:`tkchat.transport.sse`.
"""

from tkchat.generate.remote.backend import DEFAULT_N_CTX, RemoteBackend
from tkchat.generate.remote.errors import RemoteError
from tkchat.generate.remote.http import POLL_S, server_base_url, split_server_url

__all__ = [
    "DEFAULT_N_CTX",
    "POLL_S",
    "RemoteBackend",
    "RemoteError",
    "server_base_url",
    "split_server_url",
]
