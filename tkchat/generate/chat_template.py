"""Rendering a model's chat template within a time budget, in a way Stop can interrupt.

A GGUF file carries its chat template (Jinja) and llama-cpp-python renders it in Python, on
the worker thread, under the model lock. A template is a program: one that loops (a crafted
file: two nested ``range(100000)`` loops are ten billion turns) kept the worker inside the
rendering for good, holding the lock: Stop freed the window, but every later question said
"Generating…" for ever, and the loop's hold on the GIL raised the window's lag p99 to 90 ms.

Jinja has no ``while``: a template can only run long by turning its loops (or its macros)
very many times, and every turn executes a line of the template's compiled code. So for the
length of one rendering, this thread gets a trace function that looks at the clock (and at
Stop) every few dozen lines *of template code* — other frames are not traced line by line —
and raises when the budget (:data:`~tkchat.limits.CHAT_TEMPLATE_BUDGET_S`) is spent or Stop
was pressed. The rendering unwinds, the lock is released, and the question gets one
sentence naming the model file; the next question renders again from scratch.

What a trace cannot stop is a single long operation inside C (a string multiplied by a
billion): the size of what a rendering produced is checked afterwards
(:func:`check_prompt_size`), which bounds what reaches the tokenizer, not that allocation.

Worker (or counting) thread; the trace is this thread's alone and the previous one (a
debugger's, coverage's) is put back after.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

from tkchat.conversation import Message
from tkchat.generate.backend import BackendError
from tkchat.limits import CHAT_TEMPLATE_BUDGET_S, cut

T = TypeVar("T")
TEMPLATE_FILENAME = "<template>"  # what Jinja names the code it compiles from a string
CHECK_EVERY = 64  # template lines between two looks at the clock
PROMPT_SLACK_CHARS = 65_536  # what a template may add to a chat besides per-message tags
PER_MESSAGE_CHARS = 1_024

_scope = threading.local()


class ChatTemplateError(BackendError):
    """The model's chat template ran out of time or failed: one sentence, naming the file."""

    kind = "chat_template"


class TemplateCancelled(Exception):
    """Stop was pressed while the template rendered (the generation ends as cancelled)."""


class _OutOfTime(Exception):
    pass


@contextmanager
def stop_with(cancel: threading.Event) -> Iterator[None]:
    """Let Stop (``cancel``) interrupt every rendering on this thread inside the block (the
    worker wraps a generation in it: counting the chat to fit it, then streaming it)."""
    previous = getattr(_scope, "cancel", None)
    _scope.cancel = cancel
    try:
        yield
    finally:
        _scope.cancel = previous


def render_bounded(
    render: Callable[[], T], model: str, budget_s: float = CHAT_TEMPLATE_BUDGET_S
) -> T:
    """``render()``, interrupted after ``budget_s`` seconds of template code (then
    :class:`ChatTemplateError`) or by Stop inside :func:`stop_with` (then
    :class:`TemplateCancelled`). Any other failure of the template is a
    :class:`ChatTemplateError` too. ``model``: the file name the sentence names."""
    deadline = time.monotonic() + budget_s
    cancel: threading.Event | None = getattr(_scope, "cancel", None)
    turns = 0

    def line(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal turns
        turns += 1
        if turns % CHECK_EVERY == 0:
            if cancel is not None and cancel.is_set():
                raise TemplateCancelled
            if time.monotonic() > deadline:
                raise _OutOfTime
        return line

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        return line if frame.f_code.co_filename == TEMPLATE_FILENAME else None

    previous = sys.gettrace()
    sys.settrace(call)
    try:
        return render()
    except (TemplateCancelled, BackendError):
        raise
    except _OutOfTime:
        raise ChatTemplateError(
            f"The chat template of {model} did not finish within {budget_s:g} s, so this "
            "question was not sent (a template that loops is a broken or hostile model "
            "file; the next question is tried afresh)."
        ) from None
    except Exception as exc:
        raise ChatTemplateError(
            f"The chat template of {model} failed: {cut(f'{type(exc).__name__}: {exc}', 200)}"
        ) from exc
    finally:
        sys.settrace(previous)


def check_prompt_size(prompt: str, messages: Sequence[Message], model: str) -> str:
    """``prompt`` if it is the size a chat template makes of ``messages`` (the text, plus
    tags), else :class:`ChatTemplateError`: a template that multiplies its input."""
    allowed = PROMPT_SLACK_CHARS + sum(2 * len(m.content) + PER_MESSAGE_CHARS for m in messages)
    if len(prompt) > allowed:
        raise ChatTemplateError(
            f"The chat template of {model} made a prompt of {len(prompt):,} characters out "
            f"of a chat of {sum(len(m.content) for m in messages):,}; it was not sent."
        )
    return prompt


__all__ = [
    "ChatTemplateError",
    "TemplateCancelled",
    "check_prompt_size",
    "render_bounded",
    "stop_with",
]
