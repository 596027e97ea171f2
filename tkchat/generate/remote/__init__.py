"""A remote server as a backend: ``tkchat serve``, or any OpenAI-compatible server.

- :mod:`.backend` — :class:`RemoteBackend`, the :class:`~tkchat.generate.backend.Backend`
  the worker streams from; it picks the protocol when it loads;
- :mod:`.http` — the plumbing: connecting, reads that poll so Stop is noticed, the connect
  and idle timeouts, the caps on bodies, and the check that an answer is an event stream;
- :mod:`.tkchat_protocol` — ``tkchat serve``'s own event contract over SSE;
- :mod:`.openai_protocol` — ``/v1/chat/completions`` streaming, as llama.cpp's server,
  llama-cpp-python's, Ollama, vLLM and LM Studio speak it;
- :mod:`.errors` — :class:`RemoteError` and the sentences failures are told in.

The SSE framing itself is the transport stage's: :mod:`tkchat.transport.sse`.
"""

from tkchat.generate.remote.backend import DEFAULT_N_CTX, RemoteBackend
from tkchat.generate.remote.errors import RemoteError
from tkchat.generate.remote.http import POLL_S, split_server_url

__all__ = ["DEFAULT_N_CTX", "POLL_S", "RemoteBackend", "RemoteError", "split_server_url"]
