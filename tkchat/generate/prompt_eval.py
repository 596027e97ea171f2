"""Reading the prompt: reuse what the model already read, evaluate the rest in timed chunks,
and let Stop reach inside llama.cpp.

``Llama.generate`` evaluates a whole prompt in one call that nothing interrupts: a pasted
document on a laptop model holds the worker (and the model lock) for minutes, with no sign of
progress. :class:`PromptReader` does that part itself, before ``generate`` runs:

- **Prefix reuse.** The model's KV cache still holds the tokens it read last time
  (``Llama.input_ids[:n_tokens]``, which llama-cpp-python keeps in step with the cache). Only
  the tokens after the longest common prefix are evaluated; everything from the first
  difference on is removed from the cache first. The comparison is by token, so a switched
  conversation, an edited message or a trimmed context simply share a shorter prefix: the
  cache can never serve tokens the new prompt does not have.
- **Chunks.** The rest is evaluated in chunks sized from the speed just measured, aiming at
  ``chunk_s`` seconds each (the cost of a token grows with its position, so the size keeps
  adapting). After each chunk a :class:`~tkchat.generate.backend.PromptProgress` is yielded.
- **Stop inside a chunk.** While a chunk is evaluated, llama.cpp's abort callback
  (``llama_set_abort_callback``) asks the cancel event after every node of the compute graph,
  so Stop lands within one graph node, not one chunk. llama.cpp then drops the half-done
  chunk from the cache and ``n_tokens`` stays at the last whole chunk: the prefix evaluated so
  far stays, and sending the same prompt again continues from it.

Why both chunks and the callback, measured on the bundled model (README, "Long prompts"):
chunks small enough for Stop alone (≤ 50 ms) cost throughput on bigger models and machines
where a batch is cheaper per token than a single token, while the callback alone gives no
progress and no chance to check between pieces. The callback is installed only while the prompt
is read: during generation it would run about 600 times per token, each time taking the GIL.

Everything here runs on the worker thread that holds the model lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

from tkchat.generate.backend import PromptProgress

if TYPE_CHECKING:  # both come with llama-cpp-python; load() is what imports them
    import numpy as np
    from llama_cpp import Llama

CHUNK_S = 0.25  # a chunk's target duration: progress about 4 times a second
FIRST_CHUNK = 16  # tokens, before any speed is known
MIN_CHUNK = 4
ABORTED = 2  # llama_decode's return code when the abort callback said stop

PromptReading = Generator[PromptProgress, None, bool]


def common_prefix(cached: np.ndarray, prompt: list[int]) -> int:
    """How many leading tokens ``cached`` and ``prompt`` share (vectorised: a 4,000-token
    history is compared in microseconds, not a Python loop)."""
    import numpy as np

    n = min(len(cached), len(prompt))
    if n == 0:
        return 0
    differ = np.flatnonzero(cached[:n] != np.asarray(prompt[:n], dtype=cached.dtype))
    return int(differ[0]) if len(differ) else n


class PromptReader:
    """Brings one ``Llama``'s KV cache to hold a prompt. Worker thread, model lock held.

    ``chunk_s``: target seconds per chunk. ``abort_callback``: let Stop interrupt a chunk
    (False: Stop is only checked between chunks — the alternative the benchmark measures).
    """

    def __init__(
        self, llm: Llama, *, chunk_s: float = CHUNK_S, abort_callback: bool = True
    ) -> None:
        self.llm = llm
        self.chunk_s = chunk_s
        self.abort_callback = abort_callback
        self.reused = 0  # tokens of the last prompt found in the cache
        self.evaluated = 0  # tokens of the last prompt evaluated this time
        self.chunks = 0
        self._cancel: threading.Event | None = None
        from llama_cpp import ggml_abort_callback

        # Kept on the object: ctypes must not free the C thunk while llama.cpp holds it.
        self._callback = ggml_abort_callback(self._should_abort)
        self._no_callback = ggml_abort_callback()  # NULL: no callback

    def _should_abort(self, _data: object) -> bool:
        """Called by llama.cpp on the worker thread (thread 0 of its pool) after each node of
        the compute graph, with the GIL taken for the call: one attribute read, no more."""
        cancel = self._cancel
        return cancel is not None and cancel.is_set()

    def read(self, prompt: list[int], cancel: threading.Event) -> PromptReading:
        """Yield progress while evaluating; return True once the cache holds exactly
        ``prompt`` with fresh logits for its last token, False if stopped first."""
        llm = self.llm
        total = len(prompt)
        done = self._keep_prefix(prompt)
        self.reused, self.evaluated, self.chunks = done, 0, 0
        yield PromptProgress(done, total)
        from llama_cpp import llama_set_abort_callback

        ctx = llm._ctx.ctx
        self._cancel = cancel
        if self.abort_callback:
            llama_set_abort_callback(ctx, self._callback, None)
        try:
            size = FIRST_CHUNK
            while done < total:
                if cancel.is_set():
                    return False
                piece = prompt[done : done + size]
                began = time.perf_counter()
                try:
                    llm.eval(piece)
                except RuntimeError:
                    # llama.cpp removed the unfinished chunk from the cache; say so in
                    # llama-cpp-python's bookkeeping too, whatever the reason was.
                    llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
                    if cancel.is_set():
                        return False
                    raise
                took = time.perf_counter() - began
                done = llm.n_tokens
                self.evaluated += len(piece)
                self.chunks += 1
                yield PromptProgress(done, total)
                size = self._next_size(len(piece), took)
            return True
        finally:
            self._cancel = None
            if self.abort_callback:
                llama_set_abort_callback(ctx, self._no_callback, None)

    def _keep_prefix(self, prompt: list[int]) -> int:
        """Drop from the cache everything after the prefix it shares with ``prompt``; return
        the number of tokens kept. At least the last token is always evaluated again: its
        logits are what the first answer token is sampled from."""
        llm = self.llm
        keep = common_prefix(llm.input_ids[: llm.n_tokens], prompt)
        keep = min(keep, len(prompt) - 1)
        if keep > 0 and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
            keep = 0  # a model whose cache cannot be cut (recurrent): start over
        if keep == 0:
            reset: Callable[[], None] = llm.reset  # (untyped in llama_cpp)
            reset()
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        llm.n_tokens = keep
        return keep

    def _next_size(self, size: int, took: float) -> int:
        """The next chunk's size from this one's speed: at most twice as big, never more
        than a batch."""
        if took <= 0:
            return min(size * 2, self.llm.n_batch)
        wanted = int(size * self.chunk_s / took)
        return max(MIN_CHUNK, min(wanted, size * 2, self.llm.n_batch))
