"""The llama-cpp-python backend: a local GGUF model, streamed token by token.

We drive ``Llama.generate`` ourselves rather than ``create_chat_completion(stream=True)``:
that gives one token per iteration (so Stop is checked between every two tokens), the raw
bytes of each token (so the worker's UTF-8 assembler, not the library, decides where
characters end), and the finish reason.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from tkchat.generate.backend import (
    ContextOverflowError,
    GenerationRequest,
    Message,
    ModelLoadError,
    TokenStream,
)
from tkchat.generate.model_file import check_gguf, choose_model_path

if TYPE_CHECKING:  # importing llama_cpp loads the native library: only load() does that
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_types import ChatCompletionRequestMessage

DEFAULT_N_CTX = 4096


def default_n_threads() -> int:
    """Leave the UI a core: on 2 cores, llama.cpp with 2 threads raised UI lag p99 from
    0.4 ms to 5 ms for +15 % tokens/s (design notes, section 2)."""
    return max(1, (os.cpu_count() or 2) - 1)


class LlamaBackend:
    """A GGUF model through llama-cpp-python. Every method runs on a worker thread.

    llama-cpp-python's types are incomplete (its ctypes layer is untyped): what comes out of
    it gets an explicit type where it enters this class, and the rest of tkchat sees only
    those.
    """

    context_known = True  # the model's own tokenizer counts, and n_ctx is the real context

    def __init__(
        self,
        model: str | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
    ) -> None:
        """``model``: a path as the user typed it (``~`` allowed); None: $TKCHAT_MODEL, then
        the bundled model. Nothing is checked here — :meth:`load` reports problems, on the
        loader thread, so the window is already up to show them."""
        self.model = model
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_n_threads()
        self.name = Path(model).name if model else "the bundled model"
        self._llm: Llama | None = None
        self._format: Jinja2ChatFormatter | None = None
        self._is_end: Callable[[int], bool] | None = None  # end-of-generation token?
        # The last chat tokenized and its tokens: the worker counts a chat to fit it into the
        # context, then streams that same chat; this saves tokenizing it twice.
        self._last_prompt: tuple[tuple[Message, ...], list[int]] | None = None

    def load(self) -> None:
        if self._llm is not None:
            return  # already loaded (switching back to this backend)
        given = choose_model_path(self.model)
        path = check_gguf(given)
        self.name = given.name  # as the user knows it (a linked file's target may be a hash)
        try:
            from llama_cpp import Llama, llama_vocab_is_eog
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as exc:  # pragma: no cover - the package depends on it
            raise ModelLoadError(f"llama-cpp-python is not installed: {exc}") from exc
        try:
            llm = Llama(
                model_path=str(path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelLoadError(f"llama.cpp could not load {path.name}: {exc}") from exc
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelLoadError(f"{path.name} has no chat template in its GGUF metadata")
        self._format = Jinja2ChatFormatter(
            template=template,
            eos_token=_token_text(llm, llm.token_eos()),
            bos_token=_token_text(llm, llm.token_bos()),
        )
        vocab = llm._model.vocab  # a ctypes pointer, untyped in llama_cpp

        def is_end(token: int) -> bool:
            """<|im_end|>, eos and the like: the model is done."""
            return bool(llama_vocab_is_eog(vocab, token))

        self._is_end = is_end
        self.n_ctx = llm.n_ctx()
        self._llm = llm

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
            self._format = self._is_end = None
            self._last_prompt = None

    def _loaded(self) -> tuple[Llama, Jinja2ChatFormatter, Callable[[int], bool]]:
        """The model, its chat formatter and its end test; ModelLoadError before load()."""
        if self._llm is None or self._format is None or self._is_end is None:
            raise ModelLoadError("The model is not loaded yet")
        return self._llm, self._format, self._is_end

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        llm, format_chat, _ = self._loaded()
        key = tuple(messages)
        if self._last_prompt is not None and self._last_prompt[0] == key:
            return self._last_prompt[1]
        # llama_cpp types a chat as one TypedDict per role; the template reads only "role"
        # and "content", so plain dicts with those two keys are all it needs.
        chat = cast(
            "list[ChatCompletionRequestMessage]",
            [{"role": m.role, "content": m.content} for m in messages],
        )
        prompt: str = format_chat(messages=chat).prompt
        tokens: list[int] = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        self._last_prompt = (key, tokens)
        return tokens

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return len(self._prompt_tokens(messages))

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Worker thread. Yields each token's bytes; returns "stop" or "length"."""
        llm, _, is_end = self._loaded()
        prompt = self._prompt_tokens(request.messages)
        room = self.n_ctx - len(prompt)
        if room < 1:
            raise ContextOverflowError(
                f"The conversation needs {len(prompt)} tokens but the model's context holds "
                f"{self.n_ctx}. Start a new conversation or shorten the message."
            )
        sampling = request.sampling
        budget = min(sampling.max_tokens, room) if sampling.max_tokens else room
        if sampling.seed is not None:
            llm.set_seed(sampling.seed)
        tokens = llm.generate(
            prompt,
            temp=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            repeat_penalty=sampling.repeat_penalty,
            reset=True,  # reuses the KV cache for the shared prefix of a multi-turn chat
        )
        for produced, token in enumerate(tokens, start=1):
            if is_end(token):
                return "stop"
            piece: bytes = llm.detokenize([token])
            yield piece
            if produced >= budget:
                return "length"
        return "stop"


def _token_text(llm: Llama, token: int) -> str:
    return llm._model.token_get_text(token) if token != -1 else ""
