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

- **Kept states** (:class:`KeptStates`). A cache is one chat's: opening another chat, or
  switching the model away and back, would read a long chat again from its first token. So
  before a reading throws away :data:`KEEP_MIN_TOKENS` or more of the cache, and before a
  model is closed, the cache (llama.cpp's KV cells of the sequence, its tokens, and the token
  memory they were read with) is copied into memory the
  :class:`~tkchat.generate.controller.GenerationController` owns, bounded in bytes, least
  recently used first out. A prompt that shares a longer prefix with a kept state of the same
  model file (path, size, mtime, context) than with the live cache gets that state loaded
  first. A loaded state is the cache exactly as it was when it was kept (the KV cells are
  copied, not recomputed) with its ``read_to``, and the cut above applies to it unchanged: a
  prompt is read as it would have been had the cache never been left.

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
import mmap
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tkchat.generate.backend import PromptProgress
from tkchat.limits import DEFAULT_KEPT_MB

if TYPE_CHECKING:  # both come with llama-cpp-python; load() is what imports them
    import numpy as np
    from llama_cpp import Llama

CHUNK_TOKENS = 32  # a chunk: 0.2-0.6 s on the bundled model, so a bar moves a few times a second
# Only for the measured alternative (chunk_s): its first chunk, before any speed is known.
FIRST_CHUNK = 16
MIN_CHUNK = 4

# A cache about to lose at least this many tokens is kept first (:class:`KeptStates`): below
# it, reading them again costs less than a second on the bundled model.
KEEP_MIN_TOKENS = 256
SEQUENCE = 0  # the one sequence llama-cpp-python puts every token in

STOP_POLL_S = 0.005  # the watcher looks at the cancel event this often while a prompt is read
PromptReading = Generator[PromptProgress, None, bool]
LLAMA_LOG = logging.getLogger("llama-cpp-python")  # decides what llama.cpp's log prints
Segments = list[tuple[bytes, list[int]]]  # a TokenMemory's: bytes, and the tokens they were read as
# A model file as llama.cpp read it: its resolved path, size, mtime (ns), and the context.
ModelKey = tuple[str, int, int, int]


def model_key(path: Path, n_ctx: int) -> ModelKey:
    """The identity a kept state is filed under: the same file (a copy is another model,
    an edited one too) loaded with the same context."""
    resolved = path.resolve()
    stat = resolved.stat()
    return (str(resolved), stat.st_size, stat.st_mtime_ns, n_ctx)


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
        # Where this model's caches are kept, and its identity there: set by the backend
        # when a controller owns kept states (None: nothing is kept or loaded).
        self.kept: KeptStates | None = None
        self.model: ModelKey | None = None
        self.restored = 0  # of ``reused``, the tokens that came from a kept state
        self._loaded: KeptState | None = None  # the kept state bring_best just loaded

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
        self.restored = done if self._loaded is not None else 0
        self._loaded = None
        kept_bytes = self.kept.nbytes if self.kept is not None else 0
        yield PromptProgress(done, total, self.restored, kept_bytes)
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

    # -- kept states -----------------------------------------------------------------------

    def bring_best(self, prompt: list[int], segments: Segments) -> None:
        """Before :meth:`read`: if a kept state of this model shares a longer prefix with
        ``prompt`` than the live cache does, keep the live cache (when it holds enough to be
        worth it) and load that state; else keep the live cache if the reading is about to
        drop :data:`KEEP_MIN_TOKENS` or more of it. ``segments``: the token memory the live
        cache was read with, kept with it. Worker thread, model lock held (the only thread
        that saves or loads a state)."""
        self._loaded = None
        kept, model, llm = self.kept, self.model, self.llm
        if kept is None or model is None or not kept.limit or not prompt:
            return
        last = len(prompt) - 1
        live = min(common_prefix(llm.input_ids[: llm.n_tokens], prompt), last)
        best, shared = kept.best(model, prompt)
        if best is None or min(shared, last) <= live:
            if llm.n_tokens - live >= KEEP_MIN_TOKENS:
                self.keep(segments)
            return
        self.keep(segments)  # the live cache is replaced whole
        if self._load(best):
            kept.touch(best)
            self._loaded = best

    def keep(self, segments: Segments) -> None:
        """Copy the live cache (llama.cpp's cells of the sequence), its tokens and
        ``segments`` into the kept states, if it holds :data:`KEEP_MIN_TOKENS` or more that
        no kept state already holds, and fits the bound. Worker thread (or the loader,
        closing the model), model lock held."""
        kept, model, llm = self.kept, self.model, self.llm
        if kept is None or model is None or llm.n_tokens < KEEP_MIN_TOKENS:
            return
        tokens = llm.input_ids[: llm.n_tokens].copy()
        if not kept.wants(model, tokens):
            return
        from llama_cpp import llama_state_seq_get_data, llama_state_seq_get_size

        ctx = llm._ctx.ctx
        size = int(llama_state_seq_get_size(ctx, SEQUENCE))
        if size + tokens.nbytes > kept.limit:
            return
        data = untouched_buffer(size)
        if int(llama_state_seq_get_data(ctx, data, size, SEQUENCE)) != size:
            return  # llama.cpp could not write it: nothing is kept
        kept.add(KeptState(model, tokens, min(self.read_to, len(tokens)), data, list(segments)))

    def _load(self, state: KeptState) -> bool:
        """Make ``state`` the live cache: its cells, its tokens, its ``read_to``. False (and
        an empty cache) if llama.cpp refused it."""
        from llama_cpp import llama_state_seq_set_data

        llm = self.llm
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        llm.n_tokens = self.read_to = 0
        if not llama_state_seq_set_data(llm._ctx.ctx, state.data, len(state.data), SEQUENCE):
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
            return False
        count = len(state.tokens)
        llm.input_ids[:count] = state.tokens
        llm.n_tokens, self.read_to = count, state.read_to
        return True

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


def untouched_buffer(size: int) -> ctypes.Array[ctypes.c_uint8]:
    """``size`` bytes (at least one) that Python never writes: fresh anonymous pages, which
    the kernel gives as zeros when they are first touched, here by llama.cpp's copy, which
    ctypes runs without the GIL. Any thread.

    Why not ``(ctypes.c_uint8 * size)()``: ctypes zero-fills a new array with the GIL held.
    A kept state of a 600-token answer on the bundled model is about 15 MB, and its memset
    held the GIL for 7-9 ms at the start of the next answer, so the window's next Tcl call
    waited for it (the fixed window's worst frame, seen with ``perf sched`` on 2026-12-05).
    The pages go back to the system when the array is freed (the mapping goes with it)."""
    pages = mmap.mmap(-1, max(1, size))
    return (ctypes.c_uint8 * size).from_buffer(pages)


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

    def __init__(self, segments: Segments | None = None) -> None:
        self.segments: Segments = list(segments or [])

    def tokens_for(
        self, prompt: bytes, tokenize: Callable[[bytes, bool], list[int]]
    ) -> tuple[list[int], list[tuple[bytes, list[int]]], int]:
        """``prompt``'s tokens, the segments they make, and how many came from memory.
        ``tokenize(text, first)``: text to tokens (``first``: at the prompt's start, with BOS)."""
        kept = leading_segments(self.segments, prompt)
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


def leading_segments(segments: Segments, prompt: bytes) -> Segments:
    """The leading ``segments`` that ``prompt`` starts with, cut on a character boundary."""
    kept: Segments = []
    at, cut = 0, 0  # bytes matched; segments up to a character boundary
    for piece, ids in segments:
        if not piece or prompt[at : at + len(piece)] != piece:
            break
        kept.append((piece, ids))
        at += len(piece)
        if at == len(prompt) or prompt[at] & 0xC0 != 0x80:  # not inside a character
            cut = len(kept)
    return kept[:cut]


def covered(segments: Segments, prompt: bytes) -> int:
    """How many bytes of ``prompt`` the leading ``segments`` hold."""
    return sum(len(piece) for piece, _ in leading_segments(segments, prompt))


@dataclass(eq=False)
class KeptState:
    """One cache, kept: ``data`` is llama.cpp's copy of the sequence's KV cells, ``tokens``
    what they hold, ``read_to`` how many of those were read in fixed chunks (see
    :meth:`PromptReader._keep_prefix`), ``segments`` the token memory they were read with."""

    model: ModelKey
    tokens: np.ndarray
    read_to: int
    data: ctypes.Array[ctypes.c_uint8]
    segments: Segments
    nbytes: int = field(init=False, default=0)  # the memory it takes, roughly to the byte

    def __post_init__(self) -> None:
        text = sum(len(piece) + 8 * len(ids) for piece, ids in self.segments)
        self.nbytes = len(self.data) + self.tokens.nbytes + text


class KeptStates:
    """Caches kept in memory, bounded by ``limit`` bytes (0: none kept), the least recently
    used leaving first. Owned by the :class:`~tkchat.generate.controller.GenerationController`,
    so a cache outlives the backend that read it.

    Only the thread that holds the model lock saves or loads a state (a worker before it
    reads a prompt, the loader as it closes a model), and it alone calls :meth:`add`,
    :meth:`best`, :meth:`wants`, :meth:`touch` and :meth:`segments_for`. :attr:`limit` may be
    set, and :attr:`nbytes` read, from any thread (the Settings, the status line): a small
    lock keeps the list whole.
    """

    def __init__(self, limit: int = DEFAULT_KEPT_MB * 1_000_000) -> None:
        self._limit = max(0, limit)
        self._states: list[KeptState] = []  # least recently used first
        self._lock = threading.Lock()
        self.evicted = 0  # states dropped for room (the bound at work)

    @property
    def limit(self) -> int:
        return self._limit

    @limit.setter
    def limit(self, limit: int) -> None:
        """Any thread. A smaller bound drops the least recently used at once (0: all)."""
        with self._lock:
            self._limit = max(0, limit)
            self._fit()

    @property
    def nbytes(self) -> int:
        """The memory every kept state takes. Any thread."""
        with self._lock:
            return sum(state.nbytes for state in self._states)

    def states(self) -> list[KeptState]:
        """The kept states, least recently used first. Any thread."""
        with self._lock:
            return list(self._states)

    def best(self, model: ModelKey, prompt: list[int]) -> tuple[KeptState | None, int]:
        """The state of ``model`` that shares the longest prefix with ``prompt``, and how
        long (None, 0: none shares any)."""
        found: tuple[KeptState | None, int] = (None, 0)
        for state in self.states():
            if state.model == model:
                shared = common_prefix(state.tokens, prompt)
                if shared > found[1]:
                    found = (state, shared)
        return found

    def wants(self, model: ModelKey, tokens: np.ndarray) -> bool:
        """Whether a cache holding ``tokens`` is worth keeping: False if a kept state holds
        all but fewer than :data:`KEEP_MIN_TOKENS` of them and more besides (that one is
        then the most recently used)."""
        for state in self.states():
            if state.model != model:
                continue
            shared = common_prefix(state.tokens, tokens.tolist())
            if len(tokens) - shared < KEEP_MIN_TOKENS <= len(state.tokens) - shared:
                self.touch(state)
                return False
        return True

    def add(self, state: KeptState) -> None:
        """Keep ``state`` as the most recently used. A kept state of the same model that
        holds fewer than :data:`KEEP_MIN_TOKENS` it does not goes (the new one serves it);
        then the least recently used, until all fit the bound."""
        ids = state.tokens.tolist()
        with self._lock:
            self._states = [
                old
                for old in self._states
                if old.model != state.model
                or len(old.tokens) - common_prefix(old.tokens, ids) >= KEEP_MIN_TOKENS
            ]
            self._states.append(state)
            self._fit()

    def touch(self, state: KeptState) -> None:
        """``state`` was just used: it leaves last."""
        with self._lock:
            if state in self._states:
                self._states.remove(state)
                self._states.append(state)

    def segments_for(self, model: ModelKey, prompt: bytes, beyond: int) -> Segments | None:
        """The token memory of the state of ``model`` that holds the most of ``prompt``'s
        text, if that is more than ``beyond`` bytes (what the backend's own memory holds)."""
        best: Segments | None = None
        for state in self.states():
            if state.model == model:
                held = covered(state.segments, prompt)
                if held > beyond:
                    best, beyond = state.segments, held
        return best

    def forget(self, model: ModelKey | None = None) -> None:
        """Drop the states of ``model`` (None: all). Any thread."""
        with self._lock:
            self._states = [s for s in self._states if model is not None and s.model != model]

    def _fit(self) -> None:
        """Lock held: drop the least recently used until the rest fit the bound."""
        total = sum(state.nbytes for state in self._states)
        while self._states and total > self._limit:
            total -= self._states.pop(0).nbytes
            self.evicted += 1
