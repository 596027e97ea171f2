"""A scripted backend: the same answer every time, at any token rate.

First-class, not a mock: it makes classroom demos reproducible (the same text at exactly 50 or
5,000 tokens/s), and it lets the tests and the benchmark create the hard cases on demand:
a flood, a per-token CPU cost that holds the GIL, a crash at token *k*, and characters whose
UTF-8 bytes are split across tokens. It never stands in for the real model where the real
model is what is claimed.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from tkchat.conversation import MAX_N_CTX, Message
from tkchat.generate.backend import (
    GenerationRequest,
    JsonSupport,
    LoadWatch,
    PromptProgress,
    TokenStream,
)

PROMPT_STEP_S = 0.05  # how often a scripted prompt reading reports progress

SCRIPT = """\
## Why the window stays smooth

The model runs on a **worker thread**. Tokens travel through a `queue.Queue`, and the Tk main \
loop drains them every 16 ms, so a click is handled *between* two frames.

1. Generation: the model loop, off the main thread.
2. Transport: a thread-safe queue that never blocks the producer.
3. Consumption: one `after()` callback appends all new text at once.

```python
def drain(self) -> None:
    events = self.channel.drain()
    self.transcript.append("".join(e.text for e in events))
    self.root.after(16, self.drain)
```

流式输出只解决了"数据什么时候到",没有解决"数据到了以后界面怎么处理"。\
主线程一旦被占满,按钮和滚动条就都不响应了。

> Emoji and rare characters survive split bytes: 😀 🚀 🧠 𝄞 — and so does 中文.

That is the whole trick: **never block the thread that draws**. 🎉
"""

_SECTION = """\
### Part {n}: what the main loop does

In round {n} the loop wakes, takes *everything* waiting in the queue, and writes it with \
**one** insert. Clicks, keys and scrolling run between two such ticks, which is why the window \
answers within a frame however fast the tokens arrive.

- the worker owns the model and never touches a widget
- the queue is the only thing both threads share
- the main thread owns every widget, and only ever appends

```python
def tick_{n}(self) -> None:
    started = time.perf_counter()
    events = self.channel.drain()
    text = "".join(e.text for e in events if e.type == "chunk")
    if text:
        self.transcript.insert("end", text)
    self.root.after(16, self.tick_{n})
```

第{n}部分:界面线程只负责追加文字,模型在后台线程里生成。即使每秒到达上千个字,窗口仍然流畅。🙂

"""


_SECTION_ZH = """\
### 第{n}部分：主循环在做什么

第{n}轮，主循环醒来，把队列里**所有**等着的文字一次取走，用**一次**插入写进窗口。点击、按键和\
滚动都在两次这样的刷新之间处理，所以无论 token 来得多快，窗口都能在一帧之内回应。

- 工作线程拥有模型，从不碰任何控件
- 队列是两个线程唯一共享的东西
- 主线程拥有所有控件，而且只做追加

```python
def tick_{n}(self) -> None:
    events = self.channel.drain()  # 一次取走全部
    text = "".join(e.text for e in events if e.type == "chunk")
    if text:
        self.transcript.insert("end", text)  # 一次插入
    self.root.after(16, self.tick_{n})
```

> 表情和生僻字在字节被切开时也不会坏：😀 🚀 🧠 𝄞 —— 汉字「龘」也一样。

"""


def long_answer(min_chars: int = 11_000, language: str = "en") -> str:
    """A long markdown answer (headings, lists, code, Chinese, emoji) of at least
    ``min_chars`` characters: the case where "render once at the end" freezes the window.
    ``language="zh"``: the same, written in Chinese (the Chinese lessons' demos)."""
    title, section = (
        ("## 一段很长的回答\n\n", _SECTION_ZH)
        if language == "zh"
        else (
            "## A long answer\n\n",
            _SECTION,
        )
    )
    parts = [title]
    n = 1
    while sum(map(len, parts)) < min_chars:
        parts.append(section.format(n=n))
        n += 1
    return "".join(parts)


def script_for(language: str) -> str:
    """The scripted answer a window in ``language`` plays: a Chinese window's is Chinese (a
    Chinese class's compare windows streamed the English script to a Chinese prompt), about
    as long as :data:`SCRIPT`."""
    return long_answer(len(SCRIPT), "zh") if language == "zh" else SCRIPT


# A word with its leading whitespace, like a BPE vocabulary; Chinese has no spaces, so its
# characters go two at a time (as real tokenizers split it), and punctuation on its own.
_CJK = "\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"
_TOKEN = re.compile(rf"\s*[{_CJK}]{{1,2}}|\s*[^\s{_CJK}]+|\s+")


def scripted_tokens(text: str = SCRIPT) -> list[str]:
    """Split text into word-like tokens (leading whitespace kept), like a BPE vocabulary."""
    return _TOKEN.findall(text)


# A message's count, kept: the context policy counts the whole chat, then each message, on
# every question and every measure of the meter. Uncounted, a 1,000-message chat (3.4 million
# characters) cost its worker 0.37 s of CPU a question, beside the window: the long-chat
# bench's worst frame while resizing such a chat went from 20-35 ms to 8-10 ms (as a 100-message
# chat's) once counts were kept (2026-12-05).
@functools.lru_cache(maxsize=4096)
def _message_tokens(text: str) -> int:
    return len(scripted_tokens(text))


def _split_bytes(token: str) -> Iterator[bytes]:
    """Yield a token's UTF-8 bytes, cutting every non-ASCII character in the middle."""
    data = token.encode("utf-8")
    if token.isascii():
        yield data
        return
    for char in token:
        raw = char.encode("utf-8")
        if len(raw) == 1:
            yield raw
        else:  # two pieces: the first byte alone, then the rest
            yield raw[:1]
            yield raw[1:]


class TokenGate:
    """Lets a scripted answer through a given number of tokens at a time: whoever steps it (a
    test, a class walking through an answer) calls :meth:`release`; the worker waits at the
    gate before each token. No clock decides what arrives when, so a test can ask exactly
    "after 300 tokens, one tick: how many inserts?". Any thread."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._allowed = 0
        self.passed = 0  # tokens through the gate so far

    def release(self, tokens: int = 1) -> None:
        """Let ``tokens`` more tokens through."""
        with self._changed:
            self._allowed += tokens
            self._changed.notify_all()

    def wait_passed(self, tokens: int, timeout: float = 60.0) -> bool:
        """Until ``tokens`` have gone through in all (False: ``timeout`` seconds passed)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.passed >= tokens, timeout)

    def enter(self, cancel: threading.Event) -> bool:
        """Worker thread: wait for the next token's turn; False when Stop came first."""
        with self._changed:
            while self._allowed <= self.passed:
                if cancel.is_set():
                    return False
                self._changed.wait(0.005)  # (Stop sets an Event, not this condition)
            self.passed += 1
            self._changed.notify_all()
            return not cancel.is_set()


@runtime_checkable
class Steppable(Protocol):
    """A backend whose tokens a :class:`TokenGate` can pace (the pipeline view's steps and slow
    motion): the scripted backend, and a recorded answer replayed (``tkchat replay``).
    ``gate``: while set, each token waits at it to be let through; ``rate``: the tokens per
    second it plays at on its own (0: as fast as it can)."""

    gate: TokenGate | None

    @property
    def rate(self) -> float: ...


@dataclass
class ScriptedBackend:
    """Plays ``text`` (repeated up to ``tokens`` tokens) at ``rate`` tokens per second.

    ``rate`` 0 means as fast as possible. ``token_cost_ms`` burns CPU per token while holding
    the GIL, like a backend that does its sampling in Python. ``fail_at`` raises at that token.
    ``split_utf8`` cuts multi-byte characters across tokens. ``prompt_rate`` (tokens/s, 0: at
    once) makes it read the prompt first, reporting progress as the real model does, so a
    window test or a class can watch a long prompt being read without the model.
    ``echo`` begins every answer with the question it answers (then the script): a class of
    simulated students can check that each answer went to the one who asked
    (``tkchat bench --class``). ``gate`` (a :class:`TokenGate`) paces it instead of ``rate``:
    each token waits to be let through.
    """

    rate: float = 50.0
    tokens: int | None = None
    token_cost_ms: float = 0.0
    fail_at: int | None = None
    split_utf8: bool = False
    prompt_rate: float = 0.0
    echo: bool = False
    text: str = SCRIPT
    context: int = 8192  # its context, for answers of up to half of it (n_ctx)
    name: str = "scripted"
    gate: TokenGate | None = None
    # It counts its own tokens exactly (the worker fits long chats into n_ctx); it has no
    # model file or server model to name.
    context_known: ClassVar[bool] = True
    model: ClassVar[str | None] = None
    # Its text is fixed: JSON mode would be a promise it cannot keep (tkchat serve says 400).
    json_support: ClassVar[JsonSupport] = "none"

    @property
    def n_ctx(self) -> int:
        """Its context: at least twice the answer it is asked to play (``tokens``), so that
        the worker's policy keeps room for the whole answer (at most half the context:
        :func:`~tkchat.generate.context.answer_room`) and a conversation never takes more
        tokens than its context holds, as on a model, whose answer ends where its context
        does. Lesson 11's flood of 30,000 tokens read "30,019 / 8,192 tokens". A power of
        two, as a model's context usually is; never more than a context a user may ask for."""
        if self.tokens is None or 2 * self.tokens <= self.context:
            return self.context
        return min(1 << (2 * self.tokens - 1).bit_length(), MAX_N_CTX)

    def load(self, watch: LoadWatch | None = None) -> None:
        """Nothing to load."""

    def close(self) -> None:
        """Nothing to free."""

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(_message_tokens(m.content) + 4 for m in messages)

    def pieces(self, limit: int | None, question: str = "") -> Iterator[bytes]:
        """The byte pieces of the script, repeated until ``limit`` pieces (None: once);
        ``question`` (with ``echo``) comes first, once."""
        vocab = scripted_tokens(self.text)
        first = scripted_tokens(f"{question}\n\n") if question else []
        count = 0
        while True:
            for token in [*first, *vocab]:
                parts = _split_bytes(token) if self.split_utf8 else iter((token.encode(),))
                for part in parts:
                    if limit is not None and count >= limit:
                        return
                    yield part
                    count += 1
            first = []
            if limit is None:
                return

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        """Worker thread."""
        if self.prompt_rate > 0:
            total = self.count_tokens(request.messages)
            # A step's worth per step, as a model reads only while it runs: counted from the
            # clock, a worker kept off the CPU on a busy machine jumped to the end and
            # showed no progress at all.
            step = max(1, round(self.prompt_rate * PROMPT_STEP_S))
            done = 0
            while done < total:
                yield PromptProgress(done, total)
                if cancel.wait(PROMPT_STEP_S):  # wake at once on Stop
                    return "cancelled"
                done = min(total, done + step)
            yield PromptProgress(total, total)
        question = request.messages[-1].content if self.echo and request.messages else ""
        wanted = self.tokens
        if wanted is None:
            wanted = sum(1 for _ in self.pieces(None, question))
        cap = request.sampling.max_tokens or wanted
        limit = min(wanted, cap)
        period = 1.0 / self.rate if self.rate > 0 else 0.0
        started = time.perf_counter()
        for index, piece in enumerate(self.pieces(limit, question)):
            if self.fail_at is not None and index + 1 >= self.fail_at:
                raise RuntimeError(f"the scripted backend crashed at token {index + 1}, as asked")
            if self.gate is not None:
                if not self.gate.enter(cancel):
                    return "cancelled"
            elif period:
                delay = started + index * period - time.perf_counter()
                if delay > 0 and cancel.wait(delay):  # wake at once on Stop
                    return "cancelled"
            if self.token_cost_ms:
                _burn(self.token_cost_ms / 1000.0)
            yield piece
        return "length" if cap < wanted else "stop"


def _burn(seconds: float) -> None:
    """Busy-wait holding the GIL, as CPU-bound Python per-token work does."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
