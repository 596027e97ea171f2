"""A backend wrapper that can make the model die mid-answer, for the self-test.

``arm(k)`` makes the next generation raise after ``k`` tokens, as a crashed model server or
a killed process would. The window must then end the answer with a clear message and be
usable at once: that is question 2 of ``tkchat selftest``.
"""

from __future__ import annotations

import threading
import time

from tkchat.generate.backend import (
    Backend,
    BackendError,
    GenerationRequest,
    PromptProgress,
    TokenStream,
    WrappedBackend,
)


class ModelDied(BackendError):
    kind = "model_died"


class FaultInjector(WrappedBackend):
    """Wraps any backend. ``arm`` from any thread; the fault fires on the worker thread."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self._fail_after: int | None = None
        self.died_at: float | None = None  # perf_counter when the fault fired

    def arm(self, after_tokens: int) -> None:
        self.died_at = None
        self._fail_after = after_tokens

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Worker thread."""
        fail_after, self._fail_after = self._fail_after, None
        tokens = self.inner.stream(request, cancel)
        try:
            count = 0
            while True:
                try:
                    piece = next(tokens)
                except StopIteration as end:
                    return end.value or "stop"
                if isinstance(piece, PromptProgress):
                    yield piece  # not a token: the count is of answer tokens
                    continue
                count += 1
                if fail_after is not None and count > fail_after:
                    self.died_at = time.perf_counter()
                    raise ModelDied(
                        f"The model stopped responding after {fail_after} tokens "
                        "(a crash injected by the self-test)."
                    )
                yield piece
        finally:
            tokens.close()
