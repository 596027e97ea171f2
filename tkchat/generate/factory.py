"""Which backend to make, as one options value per backend, and the one function that makes
it. The command line, the window's model switching, its lessons' demos and the lab all go
through :func:`make_backend`.

The options are plain values: the backends' modules are imported only when one is made, so
the command line may build them before ``--help`` (and without llama.cpp).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:  # for the annotations only
    from tkchat.generate.backend import Backend


@dataclass(frozen=True)
class LlamaOptions:
    """A local GGUF model: the arguments of :class:`~tkchat.generate.llama_backend.
    LlamaBackend` (``model`` None: ``$TKCHAT_MODEL``, then the bundled model; ``n_ctx``,
    ``context_for`` and ``gpu_layers`` None: automatic; ``label``: the name to show)."""

    model: str | None = None
    n_ctx: int | None = None
    n_threads: int | None = None
    context_for: Callable[[str], int | None] | None = None
    gpu_layers: int | None = None
    label: str | None = None


@dataclass(frozen=True)
class ScriptedOptions:
    """The scripted backend, no model: see :class:`~tkchat.generate.scripted.ScriptedBackend`.
    Its faults (``token_cost_ms``, ``fail_at``, ``split_utf8``) are here only: a real model
    is never given them."""

    rate: float = 50.0
    tokens: int | None = None
    prompt_rate: float = 0.0
    echo: bool = False
    token_cost_ms: float = 0.0
    fail_at: int | None = None
    split_utf8: bool = False


@dataclass(frozen=True)
class RemoteOptions:
    """A server (``tkchat serve`` or an OpenAI-compatible one) and its bearer token (None:
    ``$TKCHAT_SERVER_TOKEN``): see :class:`~tkchat.generate.remote.RemoteBackend`."""

    url: str
    token: str | None = None


BackendOptions: TypeAlias = LlamaOptions | ScriptedOptions | RemoteOptions


def make_backend(options: BackendOptions) -> Backend:
    """The backend ``options`` describe. Never raises for a bad model or a dead server:
    loading reports it, in the window."""
    if isinstance(options, ScriptedOptions):
        from tkchat.generate.scripted import ScriptedBackend

        return ScriptedBackend(
            rate=options.rate,
            tokens=options.tokens,
            prompt_rate=options.prompt_rate,
            echo=options.echo,
            token_cost_ms=options.token_cost_ms,
            fail_at=options.fail_at,
            split_utf8=options.split_utf8,
        )
    if isinstance(options, RemoteOptions):
        from tkchat.generate.remote import RemoteBackend

        return RemoteBackend(options.url, token=options.token)
    from tkchat.generate.llama_backend import LlamaBackend

    return LlamaBackend(
        options.model,
        n_ctx=options.n_ctx,
        n_threads=options.n_threads,
        context_for=options.context_for,
        gpu_layers=options.gpu_layers,
        label=options.label,
    )
