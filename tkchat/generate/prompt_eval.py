"""Reading the prompt: reuse what the model already read, evaluate the rest in chunks, and
let Stop reach inside llama.cpp.

``Llama.generate`` evaluates a whole prompt in one call that nothing interrupts: a pasted
document on a laptop model holds the worker (and the model lock) for minutes, with no sign of
progress. :class:`PromptReader` does that part itself, before ``generate`` runs:

- **Prefix reuse.** The model's KV cache still holds the tokens it read last time
  (``Llama.input_ids[:n_tokens]``, which llama-cpp-python keeps in step with the cache). Only
  the tokens after the longest common prefix are evaluated; everything from the first
  difference on is removed from the cache first. The comparison is by token, so a switched
  conversation, an edited message or a trimmed context simply share a shorter prefix: the
  cache can never serve tokens the new prompt does not have.
- **Chunks.** The rest is evaluated :data:`CHUNK_TOKENS` at a time, on boundaries at fixed
  positions (0, 32, 64, ...), and a :class:`~tkchat.generate.backend.PromptProgress` is
  yielded after each. Fixed, not sized from the speed just measured: how a batch is cut
  changes the last bits of the logits, and timing-dependent cuts would make a fixed seed give
  different answers from run to run. With fixed cuts, a prompt read again (regenerate, resend
  after Stop, an edited or switched or trimmed chat) is read exactly as a cold read would
  read it — the cache is cut back to a chunk boundary first — so it gives the same answer.
  (A follow-up question is the exception: its history holds the answer the model generated
  token by token, which is reused as it is rather than read again; reading it again would cost
  as much as the answer is long, at every turn.)
- **Stop inside a chunk.** While a chunk is evaluated, llama.cpp's abort callback
  (``llama_set_abort_callback``) is asked after every node of the compute graph, so Stop
  lands within one graph node, not one chunk. llama.cpp then drops the half-done chunk from
  the cache and ``n_tokens`` stays at the last whole chunk: the prefix evaluated so far
  stays, and sending the same prompt again continues from it.
- **A callback without Python** (:class:`AbortFlag`). A Python callback takes the GIL at
  each of its ~600 calls per decode; while the window's main thread runs Python, each call
  waits for it (up to the 5 ms switch interval), and a prompt took 5-8 times as long to read
  (288 tokens, one thread: 11-16 s against 2.0-2.6 s without a callback, a Python thread
  busy beside it). So the callback is libc's ``strlen`` over a two-byte buffer: C reading
  one byte, which a small watcher thread sets within :data:`STOP_POLL_S` of Stop.

Why the callback rather than chunks small enough for Stop alone (≤ 50 ms, checked between
them), measured each ``tkchat bench --prompt-tokens`` run (row ``prompt-chunks-only``, kept
here as ``chunk_s``): the callback stops within a few milliseconds instead of 15-45, and
reads faster, since its chunks need not shrink as the prompt grows. It is installed only
while the prompt is read: Stop is checked between tokens during generation.

Everything here runs on the worker thread that holds the model lock.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING

from tkchat.generate.backend import PromptProgress

if TYPE_CHECKING:  # both come with llama-cpp-python; load() is what imports them
    import numpy as np
    from llama_cpp import Llama

CHUNK_TOKENS = 32  # a chunk: 0.2-0.6 s on the bundled model, so a bar moves a few times a second
# Only for the measured alternative (chunk_s): its first chunk, before any speed is known.
FIRST_CHUNK = 16
MIN_CHUNK = 4

STOP_POLL_S = 0.005  # the watcher looks at the cancel event this often while a prompt is read
PromptReading = Generator[PromptProgress, None, bool]
LLAMA_LOG = logging.getLogger("llama-cpp-python")  # decides what llama.cpp's log prints


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

    ``chunk_s``: instead of fixed chunks, size each from the speed just measured, aiming at
    that many seconds; ``abort_callback``: let Stop interrupt a chunk. The defaults are the
    app's; ``chunk_s=0.05, abort_callback=False`` is the alternative the benchmark measures
    (Stop checked only between chunks).
    """

    def __init__(
        self, llm: Llama, *, chunk_s: float | None = None, abort_callback: bool = True
    ) -> None:
        self.llm = llm
        self.chunk_s = chunk_s
        self.abort_callback = abort_callback
        self.reused = 0  # tokens of the last prompt found in the cache
        self.evaluated = 0  # tokens of the last prompt evaluated this time
        self.chunks = 0
        # Where the last reading stopped: the cache up to here was read in fixed chunks,
        # beyond it are tokens the model generated one by one.
        self.read_to = 0
        self._flag = AbortFlag()

    @property
    def aborts_raised(self) -> int:
        """How many readings Stop reached inside llama.cpp: the abort callback's byte was
        raised (:class:`AbortFlag`), so the decode under way or the next one ends at its
        next graph node. Any thread."""
        return self._flag.raised

    def read(self, prompt: list[int], cancel: threading.Event) -> PromptReading:
        """Yield progress while evaluating; return True once the cache holds exactly
        ``prompt`` with fresh logits for its last token, False if stopped first."""
        llm = self.llm
        total = len(prompt)
        done = self._keep_prefix(prompt)
        self.reused, self.evaluated, self.chunks = done, 0, 0
        yield PromptProgress(done, total)
        if not self.abort_callback:
            return (yield from self._read_chunks(prompt, done, cancel))
        with self._flag.installed(llm, cancel):
            return (yield from self._read_chunks(prompt, done, cancel))

    def _read_chunks(self, prompt: list[int], done: int, cancel: threading.Event) -> PromptReading:
        """Evaluate ``prompt`` from ``done`` on, a chunk at a time."""
        llm = self.llm
        total = len(prompt)
        size = FIRST_CHUNK
        while done < total:
            if cancel.is_set():
                return False
            end = self._chunk_end(done, size, total)
            piece = prompt[done : min(end, total)]
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
            finally:
                self.read_to = llm.n_tokens
            size = self._next_size(len(piece), time.perf_counter() - began)
            done = llm.n_tokens
            self.evaluated += len(piece)
            self.chunks += 1
            yield PromptProgress(done, total)
        return True

    def _keep_prefix(self, prompt: list[int]) -> int:
        """Drop from the cache everything after the prefix it shares with ``prompt``; return
        the number of tokens kept. At least the last token is always evaluated again: its
        logits are what the first answer token is sampled from. Within what was read in
        chunks, the cut goes back to a chunk boundary, so the rest is read exactly as a cold
        read would read it."""
        llm = self.llm
        keep = max(0, min(common_prefix(llm.input_ids[: llm.n_tokens], prompt), len(prompt) - 1))
        if self.chunk_s is None and keep <= min(self.read_to, llm.n_tokens):
            keep -= keep % CHUNK_TOKENS
        if keep > 0 and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
            keep = 0  # a model whose cache cannot be cut (recurrent): start over
        if keep == 0:
            reset: Callable[[], None] = llm.reset  # (untyped in llama_cpp)
            reset()
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        llm.n_tokens = keep
        self.read_to = min(self.read_to, keep)
        return keep

    def _chunk_end(self, done: int, size: int, total: int) -> int:
        """Where the chunk starting at ``done`` ends: the next fixed boundary, or (for the
        measured alternative) ``size`` tokens on. A follow-up's few new tokens, which start
        off a boundary (after the answer the model generated), are read in one piece."""
        if self.chunk_s is not None:
            return done + size
        if done % CHUNK_TOKENS and total - done <= CHUNK_TOKENS:
            return total
        return (done // CHUNK_TOKENS + 1) * CHUNK_TOKENS

    def _next_size(self, size: int, took: float) -> int:
        """The alternative's next chunk, from this one's speed: at most twice as big, never
        more than a batch."""
        if self.chunk_s is None:
            return size
        if took <= 0:
            return min(size * 2, self.llm.n_batch)
        wanted = int(size * self.chunk_s / took)
        return max(MIN_CHUNK, min(wanted, size * 2, self.llm.n_batch))


class AbortFlag:
    """llama.cpp's abort callback, answered in C: the callback is libc's ``strlen`` and its
    data a two-byte buffer, so each call reads one byte (0: go on, 1: abort) and never takes
    the GIL. ``strlen`` returns 0 or 1, which the caller reads as the ``bool`` the callback
    type declares, on every ABI llama.cpp is built for.

    :meth:`installed` sets it on a context for one reading; a watcher thread
    (``tkchat-stop-watch``) raises the byte within :data:`STOP_POLL_S` of ``cancel``.
    """

    def __init__(self) -> None:
        from llama_cpp import ggml_abort_callback

        strlen = ctypes.cast(_libc().strlen, ctypes.c_void_p).value
        assert strlen is not None
        # Kept on the object: ctypes must not free the function pointers llama.cpp holds.
        self._callback = ggml_abort_callback(strlen)
        self._no_callback = ggml_abort_callback()  # NULL: no callback
        self._lock = threading.Lock()  # orders a watcher's abort against the reading's end
        # Readings whose byte a watcher raised (Stop came while llama.cpp read): a test waits
        # for it to know the next decode will be ended by the callback. Any thread reads it.
        self.raised = 0

    @contextlib.contextmanager
    def installed(self, llm: Llama, cancel: threading.Event) -> Iterator[None]:
        """Worker thread: the callback on ``llm``'s context while the block runs, its byte
        following ``cancel``. A Stop it answered is not logged as llama.cpp's error."""
        from llama_cpp import llama_set_abort_callback

        from tkchat.threads import own_thread

        ctx = llm._ctx.ctx
        # Each reading has a byte of its own: a watcher that has not yet seen its reading
        # end writes to its own byte, never to the next reading's. Not joined (that would
        # add up to one poll to every reading): the lock decides which came first.
        byte = ctypes.create_string_buffer(2)
        over = threading.Event()
        quiet_from = LLAMA_LOG.level
        llama_set_abort_callback(ctx, self._callback, ctypes.cast(byte, ctypes.c_void_p))
        own_thread(self._watch, args=(cancel, over, byte), name="tkchat-stop-watch").start()
        try:
            yield
        finally:
            llama_set_abort_callback(ctx, self._no_callback, None)
            with self._lock:
                over.set()
            LLAMA_LOG.setLevel(quiet_from)

    def _watch(
        self, cancel: threading.Event, over: threading.Event, byte: ctypes.Array[ctypes.c_char]
    ) -> None:
        """The watcher thread: raise the byte once ``cancel`` is set, unless ``over`` first."""
        while not over.is_set():
            if cancel.wait(STOP_POLL_S):
                with self._lock:
                    if not over.is_set():
                        # llama.cpp logs the abort it was asked for as an error ("removing
                        # memory module entries ..."): a Stop is not an error.
                        LLAMA_LOG.setLevel(logging.CRITICAL)
                        byte[0] = b"\x01"
                        self.raised += 1
                return


def _libc() -> ctypes.CDLL:
    """The C library, whose ``strlen`` is the abort callback."""
    if sys.platform == "win32":
        return ctypes.cdll.msvcrt
    return ctypes.CDLL(None)


class TokenMemory:
    """The text the model has read and written, kept with its token ids: so that the next
    prompt re-tokenises only what is new. Worker thread, model lock held.

    A follow-up's prompt is the last prompt, the answer, and a few hundred bytes of template
    and question. Tokenising all of it again from text gives back the *canonical* tokens of
    the answer, which are often not the ones the model sampled (" wonder" + "ful" where it
    wrote " wonderful"; worse in Chinese, where one character may be one token or three
    bytes): the cache then matches only up to the first such place, and the rest of the
    answer is read again at every turn. So the memory is a list of segments, each some bytes
    of prompt with the tokens they were read as: a rendered prompt's new part is one segment,
    each token the model generated one more. A new prompt keeps every leading segment its
    text starts with (cut on a character boundary) and tokenises only the rest; a prompt that
    shares nothing (another chat) is tokenised whole. The cache itself is matched by token
    ids afterwards (:class:`PromptReader`), so a wrong guess here costs time, never content.
    """

    def __init__(self) -> None:
        self.segments: list[tuple[bytes, list[int]]] = []

    def tokens_for(
        self, prompt: bytes, tokenize: Callable[[bytes, bool], list[int]]
    ) -> tuple[list[int], list[tuple[bytes, list[int]]], int]:
        """``prompt``'s tokens, the segments they make, and how many came from memory.
        ``tokenize(text, first)``: text to tokens (``first``: at the prompt's start, with BOS)."""
        kept: list[tuple[bytes, list[int]]] = []
        at, cut = 0, 0  # bytes matched; segments up to a character boundary
        for piece, ids in self.segments:
            if not piece or prompt[at : at + len(piece)] != piece:
                break
            kept.append((piece, ids))
            at += len(piece)
            if at == len(prompt) or prompt[at] & 0xC0 != 0x80:  # not inside a character
                cut = len(kept)
        kept = kept[:cut]
        at = sum(len(piece) for piece, _ in kept)
        tokens = [t for _, ids in kept for t in ids]
        remembered = len(tokens)
        rest = prompt[at:]
        if rest or not kept:
            fresh = tokenize(rest, not kept)
            kept.append((rest, fresh))
            tokens += fresh
        return tokens, kept, remembered

    def remember(self, segments: list[tuple[bytes, list[int]]]) -> None:
        """The prompt about to be read (from :meth:`tokens_for`)."""
        self.segments = list(segments)

    def wrote(self, token: int, piece: bytes) -> None:
        """One token the model generated, with its bytes."""
        self.segments.append((piece, [token]))

    def forget(self) -> None:
        self.segments = []
