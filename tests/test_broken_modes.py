"""What each broken mode does wrong, seen in the real window and counted — and that it recovers.

The lessons say why each mode freezes the window; these tests check the mechanism itself, on
a scripted answer the test steps (:class:`Stepped`: a token goes through its gate only when
the test releases it), so no clock decides anything:

- ``blocking``: the model's tokens are iterated on the main thread, inside the click
  handler: the answer has ended before the handler returns, and no event travels;
- ``main-thread-reader``: the model runs on a worker, but the main thread reads every event
  off the channel itself, inside the click handler;
- ``per-chunk-render``: every chunk re-renders the whole answer's markdown: the k-th render
  parses the whole answer so far;
- ``no-coalesce``: one insert and one forced redraw per token;
- ``fixed``: a worker generates, and one tick puts everything that arrived since the last
  tick on screen in one insert.

How long each freeze lasts is the bench's to measure (``tkchat bench --modes``, ``tkchat
bench --lessons``), against baselines of the same run.
"""

from __future__ import annotations

import dataclasses
import threading
import tkinter as tk
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import pump_until, wait_until
from tkchat.conversation import Sampling
from tkchat.course.compare import window_commands
from tkchat.events import Done
from tkchat.generate.backend import GenerationRequest, TokenStream
from tkchat.generate.scripted import ScriptedBackend, TokenGate, scripted_tokens
from tkchat.i18n import LANGUAGES, STRINGS
from tkchat.modes import BROKEN_MODES, CORRECT_MODES, FIXED, MODES
from tkchat.transport.chaos import Chaos
from tkchat.ui.window.pipeline_choice import make_pipeline

pytestmark = pytest.mark.gui

TEXT = "One two three four five six seven eight nine ten eleven twelve. 中文 and 😀 too."
TOKENS = scripted_tokens(TEXT)  # the answer, token by token (each one whole characters)
MAIN = threading.main_thread().ident


@dataclass
class Stepped(ScriptedBackend):
    """A scripted answer the test steps through its ``gate``. At each token it notes the
    thread that iterates it (``threads``) and calls ``on_token()`` there; ``handled``
    counts the tokens whoever iterates it has dealt with (it asked for the next one)."""

    rate: float = 0.0
    text: str = TEXT
    gate: TokenGate | None = field(default_factory=TokenGate)
    threads: list[int] = field(default_factory=list)
    on_token: Callable[[], None] | None = None
    handled: int = 0

    def stream(self, request: GenerationRequest, cancel: threading.Event) -> TokenStream:
        inner = super().stream(request, cancel)
        while True:
            try:
                piece = next(inner)
            except StopIteration as end:
                return end.value  # type: ignore[no-any-return]
            self.threads.append(threading.get_ident())
            if self.on_token is not None:
                self.on_token()
            yield piece
            self.handled += 1

    def release_all(self) -> None:
        """Let the whole answer through now (a mode that iterates the model on the main
        thread would otherwise wait at the gate for ever)."""
        assert self.gate is not None
        self.gate.release(10 * len(scripted_tokens(self.text)) + (self.tokens or 0))

    def step(self, count: int) -> None:
        """Test thread, the Tk loop not run meanwhile (no tick can take anything): let
        ``count`` more tokens through and wait until their text has been sent."""
        assert self.gate is not None
        wanted = self.handled + count
        self.gate.release(count)
        wait_until(lambda: self.handled >= wanted, what=f"{wanted} tokens handled")


@dataclass
class Redraws:
    """Counts the forced redraws a pipeline asks of the window (``PipelineHost.redraw``)."""

    redraw: Callable[[], None]
    count: int = 0

    def __call__(self) -> None:
        self.count += 1
        self.redraw()


def count_redraws(app: Any) -> Redraws:
    """The pipelines the window makes from now on (at the next change of mode) have their
    forced redraws counted."""
    counter = Redraws(app.pipeline_host.redraw)
    app.pipelines.host = dataclasses.replace(app.pipeline_host, redraw=counter)
    return counter


def parsed_texts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, how many characters each whole-answer markdown conversion of the
    ``per-chunk-render`` mode was given, in order."""
    from tkchat.antipatterns import per_chunk_render

    convert = per_chunk_render.convert_whole_document
    parsed: list[int] = []

    def counted(text: str) -> str:
        parsed.append(len(text))
        return convert(text)

    monkeypatch.setattr(per_chunk_render, "convert_whole_document", counted)
    return parsed


def click_send(app: Any, prompt: str = "the same prompt") -> None:
    """What a click on Send does: Tk calls the button's command."""
    app.input.set_draft(prompt)
    app.send_button.invoke()


def one_tick(root: tk.Tk, app: Any) -> None:
    """Run the Tk loop until the pump's tick has taken what is queued."""
    events = app.pump.events
    pump_until(root, lambda: app.pump.events > events, what="a tick of the pump")


def finish(root: tk.Tk, app: Any, backend: Stepped, answers: int = 1) -> str:
    """Let the rest of the answer through and run the loop until ``answers`` answers have
    ended; the last one's text."""
    backend.release_all()
    pump_until(root, lambda: len(app.flow.answering.finished) >= answers, what="the answer")
    assert isinstance(app.flow.answering.finished[-1], Done)
    return str(app.transcript.answers[-1].text)


@pytest.fixture
def stepped_app(make_app: Callable[..., Any]) -> Callable[[str], tuple[Any, Stepped]]:
    def build(mode: str) -> tuple[Any, Stepped]:
        backend = Stepped()
        app = make_app(backend, sampling=Sampling(max_tokens=0))
        app.teaching.set_mode(mode)
        return app, backend

    return build


def test_blocking_iterates_the_model_on_the_main_thread_inside_the_click(stepped_app) -> None:
    app, backend = stepped_app("blocking")
    redraws = count_redraws(app)
    backend.release_all()
    inserts, events = app.transcript.inserts, app.pump.events
    click_send(app)
    # No Tk loop has run since the click, and the answer has ended: inside the handler ...
    assert len(app.flow.answering.finished) == 1
    # ... where every token was generated, on the main thread,
    assert len(backend.threads) == len(TOKENS) and set(backend.threads) == {MAIN}
    # and written by the handler itself, each with a forced redraw: no event travelled.
    assert app.pump.events == events
    assert app.transcript.inserts - inserts == len(TOKENS) == redraws.count
    assert app.transcript.answers[-1].text == TEXT


def test_the_main_thread_reader_reads_every_event_itself_inside_the_click(
    stepped_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, backend = stepped_app("main-thread-reader")
    backend.release_all()
    channel = app.controller.channel
    readers: list[int] = []
    get = channel.get

    def noted_get(timeout: float | None = None) -> Any:
        readers.append(threading.get_ident())
        return get(timeout)

    monkeypatch.setattr(channel, "get", noted_get)
    events = app.pump.events
    click_send(app)
    assert len(app.flow.answering.finished) == 1  # ended inside the handler
    assert backend.threads and MAIN not in backend.threads  # the model ran on a worker,
    # but the main thread waited for each of its events: a chunk a token, then the end
    assert set(readers) == {MAIN} and len(readers) >= len(TOKENS) + 1
    assert app.pump.events == events  # the tick got none of them
    assert app.transcript.answers[-1].text == TEXT


def test_per_chunk_render_parses_the_whole_answer_again_for_every_chunk(
    root: tk.Tk, stepped_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, backend = stepped_app("per-chunk-render")
    parsed = parsed_texts(monkeypatch)
    click_send(app)  # returns at once: a worker generates
    assert app.flow.answering.pipeline.name == "per-chunk-render"
    shown = 0
    for count in (3, 4, 5):
        backend.step(count)
        before = len(parsed)
        one_tick(root, app)
        # one conversion per chunk (a token, here), each of the whole answer so far
        assert parsed[before:] == [len("".join(TOKENS[: shown + k + 1])) for k in range(count)]
        shown += count
    assert finish(root, app, backend) == TEXT
    assert parsed == [len("".join(TOKENS[: k + 1])) for k in range(len(TOKENS))]
    # what the k-th chunk cost, it cost again for every chunk after it: quadratic
    assert sum(parsed) == sum(len(token) * (len(TOKENS) - k) for k, token in enumerate(TOKENS))


def test_no_coalesce_inserts_and_redraws_once_per_token(root: tk.Tk, stepped_app) -> None:
    app, backend = stepped_app("no-coalesce")
    redraws = count_redraws(app)
    click_send(app)
    answer = app.transcript.answers[-1]
    for count in (3, 5):
        backend.step(count)
        inserts = app.transcript.inserts
        one_tick(root, app)
        assert app.transcript.inserts - inserts == count  # one insert a token
    assert redraws.count == 8  # each forced on screen at once
    assert finish(root, app, backend) == TEXT
    assert len(answer.arrivals) == len(TOKENS) == redraws.count
    assert MAIN not in backend.threads


def test_fixed_puts_everything_a_tick_brings_on_screen_in_one_insert(
    root: tk.Tk, stepped_app
) -> None:
    app, backend = stepped_app(FIXED)
    click_send(app)
    worker = app.controller.current
    answer = app.transcript.answers[-1]
    shown = 0
    for count in (4, 1, 6):
        chunks = worker.sender.chunks
        backend.step(count)
        assert worker.sender.chunks == chunks + 1  # merged into the chunk still queued
        inserts = app.transcript.inserts
        one_tick(root, app)
        shown += count
        assert app.transcript.inserts - inserts == 1  # the tick's tokens in one insert
        assert answer.text == "".join(TOKENS[:shown])
    assert finish(root, app, backend) == TEXT
    assert backend.threads and MAIN not in backend.threads  # a worker generated


def test_fixed_shows_the_chunks_a_tick_brings_in_one_insert(root: tk.Tk, stepped_app) -> None:
    """Over a transport that never merges (the chaos transport, here doing nothing else),
    every token travels as its own chunk: one tick still shows them all in one insert."""
    app, backend = stepped_app(FIXED)
    app.demos.set_chaos(Chaos(seed=1, shuffle=1, duplicate=0.0, delay=0.0))
    click_send(app)
    worker = app.controller.current
    backend.step(6)
    assert worker.sender.chunks == 6  # six chunk events queued
    inserts = app.transcript.inserts
    one_tick(root, app)
    assert app.transcript.inserts - inserts == 1
    assert app.transcript.answers[-1].text == "".join(TOKENS[:6])
    assert finish(root, app, backend) == TEXT


@pytest.mark.parametrize("mode", BROKEN_MODES)
def test_a_broken_mode_keeps_the_text_and_the_next_fixed_answer_streams_again(
    root: tk.Tk, stepped_app, mode: str
) -> None:
    app, backend = stepped_app(mode)
    backend.release_all()
    app.flow.send("the same prompt")
    assert finish(root, app, backend) == TEXT  # nothing lost, doubled or reordered
    # It came back by itself: the next question, in the fixed mode, goes through the pump.
    app.teaching.set_mode(FIXED)
    backend.gate = TokenGate()
    backend.threads.clear()
    app.flow.send("the same prompt")
    assert app.flow.answering.pipeline.name == FIXED
    backend.step(5)
    inserts = app.transcript.inserts
    one_tick(root, app)
    assert app.transcript.inserts - inserts == 1
    assert finish(root, app, backend, answers=2) == TEXT
    assert backend.threads and MAIN not in backend.threads


def test_modes_are_labelled_and_switch_from_the_next_question(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0))
    assert not app.teaching.warning.winfo_ismapped() and "BROKEN" not in root.title()
    app.teaching.set_mode("blocking")
    root.update()
    assert app.teaching.warning.winfo_ismapped() and "BROKEN" in app.teaching.warning.cget("text")
    assert "BROKEN" in root.title()
    assert app.flow.answering.pipeline.name == FIXED  # nothing changes until the next question
    app.flow.send("now")
    assert app.flow.answering.pipeline.name == "blocking"
    app.teaching.mode_box.set("fixed")
    app.teaching.mode_box.event_generate("<<ComboboxSelected>>")
    root.update()
    assert app.teaching.mode == FIXED and not app.teaching.warning.winfo_ismapped()


def test_every_mode_is_a_pipeline_and_broken_ones_live_in_antipatterns(make_app) -> None:
    app = make_app(ScriptedBackend(rate=0))
    for name in MODES:
        pipeline = make_pipeline(name, app.pipeline_host)
        assert pipeline.name == name
        assert pipeline.broken == (name in BROKEN_MODES) == (name not in CORRECT_MODES)
        assert type(pipeline).__module__.startswith("tkchat.antipatterns.") == pipeline.broken
        for lang in LANGUAGES:  # the banner's one-line summary, in both languages
            assert STRINGS[lang][f"mode.{name}"]
    with pytest.raises(ValueError, match="unknown mode"):
        make_pipeline("turbo", app.pipeline_host)


def test_compare_places_broken_left_and_fixed_right_with_one_seed() -> None:
    left, right = window_commands(
        "per-chunk-render",
        ["--backend", "scripted"],
        prompt="hi",
        seed=3,
        max_tokens=64,
        screen=(1600, 1000),
    )
    assert left[left.index("--mode") + 1] == "per-chunk-render"
    assert right[right.index("--mode") + 1] == FIXED
    for command in (left, right):
        assert command[command.index("--seed") + 1] == "3"
        assert command[command.index("--prompt") + 1] == "hi"
    assert left[left.index("--geometry") + 1].endswith("+0+0")


def test_the_per_chunk_render_answer_is_no_wider_than_a_half_screen_window(
    root: tk.Tk, make_app
) -> None:
    """Seen in compare on a 1280-pixel projector: the broken window's answer, 88 characters
    wide, was cut at the window's right edge."""
    from tests.x_input import laid_out

    gate = TokenGate()  # the answer waits after its first token: its widget stays
    app = make_app(ScriptedBackend(gate=gate), mode="per-chunk-render", projector=True)
    root.geometry("628x640+0+0")
    laid_out(root)
    assert app.flow.send("q")
    widget = next(iter(app.flow.answering.pipeline.widgets.values()))
    laid_out(root)
    assert widget.winfo_reqwidth() <= app.transcript.text.winfo_width()
    app.flow.answering.stop()


def test_compare_speaks_the_class_s_language_in_both_windows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Chinese class got two English windows (``--lang`` was refused). Both windows get
    the language and projector mode, and the prompt is in that language."""
    from tkchat.cli import main
    from tkchat.course import compare

    started: list[tuple[list[str], str]] = []

    def run_compare(_broken: str | None, model_args: list[str], **kwargs: Any) -> int:
        started.append((model_args, kwargs["prompt"]))
        return 0

    monkeypatch.setattr(compare, "run_compare", run_compare)
    assert main(["compare", "--backend", "scripted", "--lang", "zh", "--projector"]) == 0
    ((model_args, prompt),) = started
    assert model_args[model_args.index("--lang") + 1] == "zh" and "--projector" in model_args
    assert prompt == compare.DEFAULT_PROMPTS["zh"]
    assert main(["compare", "--toolkit", "qt", "--projector"]) == 2  # Qt has none: said


def test_the_compare_button_opens_windows_in_the_window_s_language(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), compare_command=lambda broken: ["compare", broken])
    assert app.teaching.compare_command("blocking") == ["compare", "blocking", "--lang", "en"]
    app.toggle_language()
    app.text_size.set_projector(True)
    command = app.teaching.compare_command("blocking")
    assert command == ["compare", "blocking", "--lang", "zh", "--projector"]


# (That compare opens the two windows, one of them BROKEN, and closes both on SIGTERM is
# tests/test_class_plan.py::test_compare_as_the_plan_gives_it_opens_two_windows.)
