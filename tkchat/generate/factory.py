"""Builds the backend a command line asks for (one place, used by the app and the bench)."""

from __future__ import annotations

from collections.abc import Callable

from tkchat.generate.backend import Backend
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.scripted import ScriptedBackend


def make_backend(
    kind: str,
    *,
    model: str | None = None,
    rate: float = 50.0,
    tokens: int | None = None,
    token_cost_ms: float = 0.0,
    fail_at: int | None = None,
    split_utf8: bool = False,
    prompt_rate: float = 0.0,
    echo: bool = False,
    n_ctx: int | None = None,
    n_threads: int | None = None,
    server: str | None = None,
    server_token: str | None = None,
    context_for: Callable[[str], int | None] | None = None,
    gpu_layers: int | None = None,
    label: str | None = None,
) -> Backend:
    """``kind`` is "llama" or "scripted"; a ``server`` URL means a remote server instead.
    Never raises for a bad model or a dead server: loading reports it, in the window.
    ``server_token``: the server's bearer token (None: ``$TKCHAT_SERVER_TOKEN``).
    ``n_ctx``, ``context_for``, ``gpu_layers`` (None: automatic) and ``label`` (the name to
    show): see :class:`LlamaBackend`."""
    if server:
        from tkchat.generate.remote import RemoteBackend

        return RemoteBackend(server, token=server_token)
    if kind == "scripted":
        return ScriptedBackend(
            rate=rate,
            tokens=tokens,
            token_cost_ms=token_cost_ms,
            fail_at=fail_at,
            split_utf8=split_utf8,
            prompt_rate=prompt_rate,
            echo=echo,
        )
    return LlamaBackend(
        model,
        n_ctx=n_ctx,
        n_threads=n_threads,
        context_for=context_for,
        gpu_layers=gpu_layers,
        label=label,
    )
