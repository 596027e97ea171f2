"""The llama-cpp-python backend: a local GGUF model, streamed token by token.

We drive ``Llama.generate`` ourselves rather than ``create_chat_completion(stream=True)``:
that gives one token per iteration (so Stop is checked between every two tokens), the raw
bytes of each token (so the worker's UTF-8 assembler, not the library, decides where
characters end), and the finish reason. Before it, :class:`~tkchat.generate.prompt_eval.
PromptReader` reads the prompt (reusing the cached prefix, in chunks, with progress and a
Stop that reaches inside llama.cpp), so ``generate`` finds it all evaluated and samples at once.
Loading reports llama.cpp's progress and can be cancelled (:func:`_load_progress`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from tkchat.conversation import Message
from tkchat.events import Offload
from tkchat.generate.backend import (
    BackendError,
    ContextOverflowError,
    GenerationRequest,
    JsonSupport,
    LoadCancelled,
    LoadWatch,
    ModelLoadError,
    TokenStream,
)
from tkchat.generate.chat_template import TemplateCancelled, check_prompt_size, render_bounded
from tkchat.generate.hardware import OffloadChoice, adjust, model_layers
from tkchat.generate.json_grammar import parses
from tkchat.generate.model_file import (
    InvalidModelFile,
    check_complete,
    check_gguf,
    choose_model_path,
    model_header,
)
from tkchat.generate.prompt_eval import (
    KeptStates,
    ModelKey,
    PromptReader,
    TokenMemory,
    covered,
    model_key,
)
from tkchat.limits import MAX_NAME_CHARS, cut

if TYPE_CHECKING:  # importing llama_cpp loads the native library: only load() does that
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_grammar import LlamaGrammar
    from llama_cpp.llama_types import ChatCompletionRequestMessage

log = logging.getLogger(__name__)
Segments = list[tuple[bytes, list[int]]]

DEFAULT_N_CTX = 4096  # a model whose file does not say what it was trained with
# The context a model gets unless the user chose one: its trained context, at most this. The
# KV cache grows with the context, and llama.cpp allocates all of it at load: a 7B model's
# f16 cache is 0.5 GiB per 4,096 tokens, so a model trained for 131,072 tokens would take
# 16 GiB before its first word. 8,192 holds a long chat, and all of the bundled model's.
MAX_AUTO_N_CTX = 8192


def auto_n_ctx(trained: int | None) -> int:
    """The context a model gets when nobody chose one (see :data:`MAX_AUTO_N_CTX`)."""
    return min(trained or DEFAULT_N_CTX, MAX_AUTO_N_CTX)


def default_n_threads() -> int:
    """Leave the UI a core: on 2 cores, llama.cpp with 2 threads raised UI lag p99 from
    0.4 ms to 5 ms for +15 % tokens/s (design notes, section 2)."""
    return max(1, (os.cpu_count() or 2) - 1)


def batch_threads_now(n_threads: int, load: Callable[[], float] | None = None) -> int:
    """Threads for reading the next prompt: every core (:func:`default_n_threads_batch`)
    while the machine is otherwise quiet, else ``n_threads``. llama.cpp's threads wait for
    each other at every step of a batch: on 2 cores with two other busy programs, reading
    1,051 tokens took 50 s with 2 threads and 31 s with 1 (2026-12-04), while quiet, 2
    threads read 28 % faster. ``load``: the machine's run-queue length over the last minute
    (``os.getloadavg``; a test gives its own). Worker thread."""
    cores = os.cpu_count() or 1
    try:
        busy = (load or (lambda: os.getloadavg()[0]))()
    except OSError:  # no load average here (Windows): as on a quiet machine
        busy = 0.0
    # This process's own answer counts about one: the rest is other programs'.
    return n_threads if busy >= cores - 0.5 else default_n_threads_batch(n_threads)


def default_n_threads_batch(n_threads: int) -> int:
    """Threads for reading a prompt: every core. llama.cpp uses them only for a batch of
    several tokens (a prompt, a chat read again) and ``n_threads`` for each token of an
    answer, so the window's core is taken only while nothing streams (threads started from
    the worker run at its lowered priority: tkchat/threads.py). A 1,500-token prompt in the
    window on 2 cores (tkchat bench --prompt-tokens 1500, 2026-12-03): 97 prompt tokens/s
    instead of 76, lag p99 4.1 ms against 7.6, max 18 ms against 66 (a long task)."""
    return max(n_threads, os.cpu_count() or 1)


class LlamaBackend:
    """A GGUF model through llama-cpp-python. Every method runs on a worker thread.

    llama-cpp-python's types are incomplete (its ctypes layer is untyped): what comes out of
    it gets an explicit type where it enters this class, and the rest of tkchat sees only
    those.
    """

    context_known = True  # the model's own tokenizer counts, and n_ctx is the real context
    json_support: JsonSupport = "grammar"  # llama.cpp samples under a GBNF grammar

    def __init__(
        self,
        model: str | None = None,
        *,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        context_for: Callable[[str], int | None] | None = None,
        gpu_layers: int | None = None,
        label: str | None = None,
    ) -> None:
        """``model``: a path as the user typed it (``~`` allowed); None: $TKCHAT_MODEL, then
        the bundled model. Nothing is checked here — :meth:`load` reports problems, on the
        loader thread, so the window is already up to show them.

        The context: ``n_ctx`` if given (``--n-ctx``), else what ``context_for(file name)``
        says (the user's choice for that model, called on the loader thread), else
        :func:`auto_n_ctx` of the model's trained context. ``gpu_layers``: the layers to
        offload (None: automatic, see :mod:`tkchat.generate.hardware`). ``label``: the name
        to show instead of the file's (an Ollama model's ``llama3.2:3b``, not its blob's
        hash)."""
        self.model = model
        self.wanted_n_ctx = n_ctx
        self.context_for = context_for
        self.n_ctx = n_ctx or DEFAULT_N_CTX  # the real figure once loaded
        self.n_ctx_train: int | None = None  # what the model was trained with, once loaded
        self.n_threads = n_threads or default_n_threads()
        self.machine_load: Callable[[], float] | None = None  # (None: os.getloadavg)
        self.gpu_layers = gpu_layers
        self.offload: Offload | None = None  # where the loaded model runs, once loaded
        self.label = label
        self.name = label or (Path(model).name if model else "the bundled model")
        # The file's own name once loaded, by which Settings remembers a context for it (the
        # shown name may be a label: an Ollama or Jan model's)
        self.file_name: str | None = None
        self._llm: Llama | None = None
        self._format: Jinja2ChatFormatter | None = None
        self._is_end: Callable[[int], bool] | None = None  # end-of-generation token?
        self.reader: PromptReader | None = None  # reads prompts into this model's cache
        # The last chat tokenized, its tokens and segments: the worker counts a chat to fit it
        # into the context, then streams that same chat; this saves tokenizing it twice.
        self._last_prompt: tuple[tuple[Message, ...], list[int], Segments] | None = None
        # What the model read and wrote, as tokens: a follow-up re-tokenises only what is new.
        self.memory = TokenMemory()
        self.remembered = 0  # tokens of the last prompt taken from memory, not re-tokenised
        self.last_read: tuple[list[int], int] = ([], 0)  # the last streamed prompt, remembered
        # Caches kept from earlier (the controller's, set before load: it outlives this
        # backend), and this model's identity there once loaded. None: nothing is kept.
        self.kept: KeptStates | None = None
        self.model_key: ModelKey | None = None

    def load(self, watch: LoadWatch | None = None) -> None:
        """Loader thread. ``watch`` gets llama.cpp's progress; cancelling it stops the load
        at the next tensor, and llama.cpp frees what it had allocated."""
        if self._llm is not None:
            return  # already loaded (switching back to this backend)
        # First: without llama-cpp-python no model file matters, and its sentence says so
        make_llama, eog = _llama_cpp()
        given = choose_model_path(self.model)
        path = check_gguf(given)
        # as the user knows it (a linked file's target may be a hash)
        self.name = self.label or cut(given.name, MAX_NAME_CHARS)
        try:
            header = model_header(path)  # every count checked before llama.cpp reads the file
        except InvalidModelFile:
            check_complete(path, header_cut=False)  # a download cut short says so instead
            raise
        check_complete(path)  # the header holds together: is all the data it names there?
        self.file_name = given.name
        chosen = self.context_for(given.name) if self.context_for is not None else None
        n_ctx = self.wanted_n_ctx or chosen or auto_n_ctx(header.context_length)
        watch = watch or LoadWatch()
        offload = OffloadChoice.for_setting(self.gpu_layers)
        try:
            with _load_progress(watch):
                llm = make_llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=default_n_threads_batch(self.n_threads),
                    n_gpu_layers=offload.requested,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            if watch.cancelled:
                raise LoadCancelled(_cancelled_sentence(self.name)) from exc
            raise ModelLoadError(f"llama.cpp could not load {path.name}: {exc}") from exc
        if watch.cancelled:  # after the last tensor: the context was being made
            llm.close()
            raise LoadCancelled(_cancelled_sentence(self.name))
        self._format = _chat_formatter(llm, path.name)
        vocab = llm._model.vocab  # a ctypes pointer, untyped in llama_cpp

        def is_end(token: int) -> bool:
            """<|im_end|>, eos and the like: the model is done."""
            return bool(eog(vocab, token))

        self._is_end = is_end
        self.n_ctx = llm.n_ctx()
        self.n_ctx_train = header.context_length
        self.offload = offload.outcome(model_layers(llm.metadata))
        self.reader = PromptReader(llm)
        with contextlib.suppress(OSError):  # a file gone since it was read: nothing is kept
            self.model_key = self.reader.model = model_key(path, self.n_ctx)
        self.reader.kept = self.kept
        self._llm = llm

    def keep_state(self) -> None:
        """Keep the model's cache among :attr:`kept` (if it is worth keeping), so that a
        backend of the same file loaded later starts from it. The controller calls it on the
        loader thread, model lock held, before closing this backend (never :meth:`close`
        itself, which may run on the main thread)."""
        if self.reader is not None:
            self.reader.keep(self.memory.segments)

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
            self._format = self._is_end = None
            self._last_prompt = None
            self.reader = None
            self.memory.forget()

    def _loaded(self) -> tuple[Llama, Jinja2ChatFormatter, Callable[[int], bool]]:
        """The model, its chat formatter and its end test; ModelLoadError before load()."""
        if self._llm is None or self._format is None or self._is_end is None:
            raise ModelLoadError("The model is not loaded yet")
        return self._llm, self._format, self._is_end

    def _reader(self) -> PromptReader:
        if self.reader is None:
            raise ModelLoadError("The model is not loaded yet")
        return self.reader

    @property
    def llm(self) -> Llama:
        """The loaded ``Llama`` (ModelLoadError before :meth:`load`): for the benchmark's
        baselines, which time llama-cpp-python alone. Model lock held."""
        return self._loaded()[0]

    def forget_prompt(self) -> None:
        """Empty the model's cache, so the next prompt is read from its first token (the
        benchmark's cold runs; tests comparing answers with and without reuse). Model lock
        held."""
        llm = self.llm
        llm.n_tokens = 0
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        if self.kept is not None and self.model_key is not None:
            self.kept.forget(self.model_key)  # nor from a kept cache

    def chat_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The tokens the model reads for ``messages`` (template applied). Model lock held."""
        return list(self._prompt_tokens(messages))

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        return self._prompt(messages)[0]

    def _prompt(self, messages: Sequence[Message]) -> tuple[list[int], Segments]:
        """The tokens of ``messages`` rendered, and their segments for :class:`TokenMemory`:
        what the memory holds of the rendered text is reused, only the rest is tokenised."""
        llm, format_chat, _ = self._loaded()
        key = tuple(messages)
        if self._last_prompt is not None and self._last_prompt[0] == key:
            return self._last_prompt[1], self._last_prompt[2]
        # llama_cpp types a chat as one TypedDict per role; the template reads only "role"
        # and "content", so plain dicts with those two keys are all it needs.
        chat = cast(
            "list[ChatCompletionRequestMessage]",
            [{"role": m.role, "content": m.content} for m in messages],
        )
        # A template is a program from the model file: bounded in time, stopped by Stop.
        prompt: str = render_bounded(lambda: format_chat(messages=chat).prompt, self.name)
        check_prompt_size(prompt, messages, self.name)

        def tokenize(text: bytes, first: bool) -> list[int]:
            ids: list[int] = llm.tokenize(text, add_bos=first, special=True)
            return ids

        text = prompt.encode("utf-8")
        tokens, segments, self.remembered = self._memory_for(text).tokens_for(text, tokenize)
        self._last_prompt = (key, tokens, segments)
        return tokens, segments

    def _memory_for(self, prompt: bytes) -> TokenMemory:
        """The token memory that holds the most of ``prompt``: this model's own, or that of
        a cache kept from earlier (a chat opened again: its answers as the model sampled
        them, which a fresh tokenisation would not give back, so the kept cache matches)."""
        if self.kept is None or self.model_key is None:
            return self.memory
        kept = self.kept.segments_for(self.model_key, prompt, covered(self.memory.segments, prompt))
        return self.memory if kept is None else TokenMemory(kept)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return len(self._prompt_tokens(messages))

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Worker thread. Yields the prompt's reading progress, then each token's bytes;
        returns "stop", "length", or "cancelled" when Stop came while reading the prompt."""
        llm, _, is_end = self._loaded()
        reader = self._reader()
        try:
            prompt, segments = self._prompt(request.messages)
        except TemplateCancelled:
            return "cancelled"
        room = self.n_ctx - len(prompt)
        if room < 1:
            raise ContextOverflowError(
                f"The conversation needs {len(prompt)} tokens but the model's context holds "
                f"{self.n_ctx}. Start a new conversation or shorten the message."
            )
        sampling = request.sampling
        budget = min(sampling.max_tokens, room) if sampling.max_tokens else room
        llm._ctx.set_n_threads(self.n_threads, batch_threads_now(self.n_threads, self.machine_load))
        reader.bring_best(prompt, self.memory.segments)  # before the memory is the new prompt's
        self.memory.remember(segments)
        self.last_read = (prompt, self.remembered)
        read = yield from reader.read(prompt, cancel)
        log.info(
            "prompt of %d tokens: %d reused from the cache (%d of them kept from earlier), "
            "%d evaluated (%d re-tokenised)",
            len(prompt), reader.reused, reader.restored, reader.evaluated,
            len(prompt) - self.remembered,
        )  # fmt: skip
        if not read:
            return "cancelled"  # what was read stays cached: sending it again continues
        if sampling.seed is not None:
            llm.set_seed(sampling.seed)
        tokens = llm.generate(
            prompt,
            temp=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            repeat_penalty=sampling.repeat_penalty,
            grammar=_grammar(request),
            # The reader left exactly this prompt in the cache, with its last logits:
            # generate's own prefix check finds it whole and samples at once.
            reset=True,
        )
        for produced, token in enumerate(tokens, start=1):
            if is_end(token):
                return "stop"
            piece: bytes = llm.detokenize([token])
            self.memory.wrote(token, piece)
            yield piece
            if produced >= budget:
                return "length"
        return "stop"


class EngineMissing(ModelLoadError):
    """llama-cpp-python cannot be imported: not installed (its compile failed, or tkchat was
    installed without it), or its native library does not load. Only a local model needs it:
    the scripted backend, ``--server``, a replay and the lessons run on without it."""

    kind = "engine_missing"
    key = "app.engine_missing"  # tkchat/i18n/window.py: this sentence, in English and Chinese


ENGINE_MISSING = (
    "The local model needs llama-cpp-python: pip install llama-cpp-python (it compiles "
    "llama.cpp, several minutes); meanwhile --server URL, --backend scripted and the "
    "lessons work."
)


def _llama_cpp() -> tuple[type[Llama], Callable[[object, int], bool]]:
    """llama-cpp-python's model class and its end-of-generation test, imported here, on the
    loader thread (the import loads the native library): nothing else at start-up imports
    it, so tkchat runs without it. :class:`EngineMissing` when it cannot be imported."""
    try:
        from llama_cpp import Llama, llama_vocab_is_eog
    except (ImportError, OSError, RuntimeError) as exc:  # a library that fails to load: OSError
        log.info("llama-cpp-python cannot be imported: %s: %s", type(exc).__name__, exc)
        raise EngineMissing(ENGINE_MISSING) from exc
    return Llama, cast(Callable[[object, int], bool], llama_vocab_is_eog)


def _grammar(request: GenerationRequest) -> LlamaGrammar | None:
    """Worker thread. The grammar of the request's JSON mode, if any (built by
    :mod:`tkchat.generate.json_grammar`). Checked again here, at the cost of a cache look-up:
    llama.cpp's sampler takes a grammar it cannot parse as no sampler, and the process
    crashes at the first token."""
    fmt = request.json_format
    if fmt is None or fmt.grammar is None:
        return None
    from llama_cpp.llama_grammar import LlamaGrammar

    if not parses(fmt.grammar):
        raise BackendError("The JSON grammar of this request cannot be read by llama.cpp.")

    return LlamaGrammar.from_string(fmt.grammar, verbose=False)


def _chat_formatter(llm: Llama, file_name: str) -> Jinja2ChatFormatter:
    """The model's own chat template, ready to render prompts; a file without one, or with
    one Jinja cannot read, is one sentence (and the model is closed). Loader thread."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        llm.close()
        raise ModelLoadError(f"{file_name} has no chat template in its GGUF metadata")
    try:
        return Jinja2ChatFormatter(
            template=template,
            eos_token=_token_text(llm, llm.token_eos()),
            bos_token=_token_text(llm, llm.token_bos()),
        )
    except Exception as exc:  # Jinja's syntax errors and the like: one sentence
        llm.close()
        detail = cut(f"{type(exc).__name__}: {exc}", 200)
        raise ModelLoadError(f"The chat template of {file_name} cannot be read ({detail})") from exc


def _token_text(llm: Llama, token: int) -> str:
    return llm._model.token_get_text(token) if token != -1 else ""


def _cancelled_sentence(name: str) -> str:
    return f"Loading {name} was cancelled; the memory it had taken is free again."


_PATCH_LOCK = threading.Lock()


@contextlib.contextmanager
def _load_progress(watch: LoadWatch) -> Iterator[None]:
    """Loader thread. Give llama.cpp a progress callback for the ``Llama`` made inside.

    llama.cpp calls ``progress_callback`` of the model parameters after each tensor it
    loads, and stops the load (freeing what it had allocated) when the callback returns
    false. ``Llama()`` builds those parameters itself from ``llama_model_default_params()``
    and offers no way to set the callback, so for the length of this block that function
    hands out defaults with ours filled in (and :func:`~tkchat.generate.hardware.adjust`'s
    changes) — to this thread only; any other thread still gets the plain defaults. The lock
    keeps two loads from patching at once.
    """
    import llama_cpp.llama_cpp as low

    def on_progress(fraction: float, _data: object) -> bool:
        return watch.progress(float(fraction))  # the GIL is taken for the call: keep it short

    callback = low.llama_progress_callback(on_progress)  # kept alive by this frame
    loader = threading.get_ident()
    plain = low.llama_model_default_params

    def with_callback() -> low.llama_model_params:
        params: low.llama_model_params = plain()
        if threading.get_ident() == loader:
            params.progress_callback = callback
            adjust(params)  # what this CPU must not use (hardware.py: AMX)
        return params

    with _PATCH_LOCK:
        low.llama_model_default_params = with_callback
        try:
            yield
        finally:
            low.llama_model_default_params = plain
