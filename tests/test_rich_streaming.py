"""Markdown rendered while an answer streams, and a view that never jumps (issue 12, bug 2).

Real window, scripted answers long enough to scroll. The view is read back with ``yview()``
and with the text of the line at the top of the window, before and after each change. The
answers stream through a token gate, a step at a time: each step's text is on screen before
the view is looked at, so "while it streams" is a number of steps, not a race with a pace.
Where the painter's time budget decides how a block is cut into callbacks, its clock is
stepped.
"""

from __future__ import annotations

import _tkinter
import itertools
import tkinter as tk
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from tests.conftest import pump_until
from tkchat.conversation import Sampling
from tkchat.events import Done
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, TokenGate, long_answer
from tkchat.ui.transcript import markdown_view
from tkchat.ui.transcript.markdown_view import HIDDEN_TAG
from tkchat.ui.transcript.view_keeper import ViewKeeper

pytestmark = pytest.mark.gui

LONG = long_answer(8_000)  # headings, lists, code; several screens
HEADING = "Part 2: what the main loop does"


@pytest.fixture
def painter_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The painter's clock moves a millisecond at each reading: a callback's budget (a few
    ms) holds a piece or two, however fast the machine."""
    clock = SimpleNamespace(now=0.0)

    def perf_counter() -> float:
        clock.now += 0.001
        return clock.now

    monkeypatch.setattr(markdown_view, "time", SimpleNamespace(perf_counter=perf_counter))


def gated(text: str = LONG, **kwargs: object) -> tuple[ScriptedBackend, TokenGate]:
    gate = TokenGate()
    return ScriptedBackend(text=text, gate=gate, **kwargs), gate  # type: ignore[arg-type]


def tokens_until(backend: ScriptedBackend, words: str) -> int:
    """How many of the backend's pieces bring ``words`` into its answer."""
    data = b""
    for count, piece in enumerate(backend.pieces(None), start=1):
        data += piece
        if words in data.decode("utf-8", errors="ignore"):
            return count
    raise AssertionError(f"{words!r} is not in the answer")


def step(root: tk.Tk, app, backend: ScriptedBackend, gate: TokenGate, tokens: int) -> None:
    """Let ``tokens`` more through and run the loop until their text is on screen."""
    gate.release(tokens)
    passed = gate.passed + tokens
    wanted = b"".join(itertools.islice(backend.pieces(None), passed)).decode(errors="ignore")
    answer = app.flow.answering.answer
    pump_until(root, lambda: answer.text == wanted, timeout=60, what=f"{passed} tokens shown")


def stream_in_steps(
    root: tk.Tk, app, backend: ScriptedBackend, gate: TokenGate, watch: Callable[[], None]
) -> int:
    """The rest of the answer in steps of 75 tokens (the long answer: 20 of them),
    ``watch()`` after each; then its end and its render, ``watch()`` after every turn of the
    loop. Returns the number of steps."""
    total = sum(1 for _ in backend.pieces(None))
    steps = 0
    while gate.passed + 75 < total:
        step(root, app, backend, gate, 75)
        watch()
        steps += 1
    gate.release(total)
    pump_watching(root, lambda: rendered(app), watch)
    return steps


def shows_end(app) -> bool:
    """What the reader sees: the transcript's last line is on screen."""
    return app.transcript.text.dlineinfo("end-1c") is not None


def at_end(app) -> bool:
    """The last line is on screen, and the scrollbar is at its end (it may lag a frame or
    two behind the view while Tk measures lines just written: :func:`settled_at_end`)."""
    return shows_end(app) and app.transcript.text.yview()[1] >= 0.999


def settled_at_end(root: tk.Tk, app) -> bool:
    """At the end once Tk has measured every line (its line heights are updated by timers
    after a change, and the scrollbar follows them)."""
    root.update()
    pump_until(root, lambda: at_end(app) or not shows_end(app), timeout=5, what="Tk's metrics")
    return at_end(app)


def top_line(app) -> str:
    """The text of the line drawn at the top of the transcript."""
    text = app.transcript.text
    return str(text.get("@0,0", "@0,0 lineend"))


def top_y(app) -> int:
    info = app.transcript.text.dlineinfo("@0,0")
    assert info is not None
    return int(info[1])


def rendered(app) -> bool:
    return app.flow.answering.answer is None and not app.transcript.painter.busy


def pump_watching(root: tk.Tk, done: Callable[[], bool], watch: Callable[[], None]) -> None:
    """Run the loop until ``done()``, calling ``watch()`` after every turn of it."""

    def check() -> bool:
        watch()
        return done()

    pump_until(root, check, timeout=60, what="the answer, rendered")


def scroll_to(app, words: str) -> None:
    """What a reader does with the wheel: put the line holding ``words`` at the top."""
    text = app.transcript.text
    index = text.search(words, "1.0")
    assert index, f"{words!r} is not on screen"
    text.yview(f"{index} linestart")
    text.update_idletasks()


def test_a_reader_at_the_bottom_stays_there_while_it_streams_and_after_the_render(
    root: tk.Tk, make_app
) -> None:
    backend, gate = gated()
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.flow.send("a long one")
    ends: list[bool] = []

    def watch() -> None:
        if app.transcript.text.yview()[0] > 0 or ends:  # once the answer fills the window
            ends.append(shows_end(app))

    assert stream_in_steps(root, app, backend, gate, watch) > 10
    assert len(ends) > 10  # the premise: it went on streaming after it filled the window
    assert all(ends), f"left the bottom while streaming: {ends.count(False)} times"
    # and the final render did not jump back
    assert settled_at_end(root, app), app.transcript.text.yview()
    assert app.transcript.answers[-1].rendered


def test_a_reader_who_scrolled_up_stays_on_the_same_line_through_stream_and_render(
    root: tk.Tk, make_app
) -> None:
    backend, gate = gated()
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.flow.send("a long one")
    step(root, app, backend, gate, tokens_until(backend, "Part 4"))
    scroll_to(app, HEADING)  # still streaming: the reader scrolled up mid-answer
    y = top_y(app)
    fraction = app.transcript.text.yview()
    lines: list[str] = []
    stream_in_steps(root, app, backend, gate, lambda: lines.append(top_line(app)))
    root.update()
    moved = [line for line in lines if HEADING not in line]
    assert not moved, f"the view moved to {moved[0]!r}"
    assert HEADING in top_line(app) and "#" not in top_line(app)  # rendered, in place
    assert abs(top_y(app) - y) <= 1
    assert app.transcript.text.yview() != fraction  # (the text below grew: not a fraction)


def test_regenerate_follows_the_bottom_to_the_end(root: tk.Tk, make_app) -> None:
    backend, gate = gated()
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.flow.send("a long one")
    gate.release(10**6)
    pump_until(root, lambda: rendered(app), timeout=60, what="the first answer")
    assert settled_at_end(root, app)
    gate = backend.gate = TokenGate()
    assert app.flow.regenerate()
    ends: list[bool] = []
    stream_in_steps(root, app, backend, gate, lambda: ends.append(shows_end(app)))
    assert isinstance(app.flow.answering.finished[-1], Done) and len(app.transcript.answers) == 1
    assert all(ends), f"left the bottom while streaming: {ends.count(False)} times"
    assert settled_at_end(root, app), app.transcript.text.yview()


def test_following_the_bottom_leaves_the_layout_to_tks_redisplay(root: tk.Tk) -> None:
    """A reader at the bottom, and a long paragraph written at the end (a rendered block):
    the keeper moves the view without laying it out in the callback (one ``yview``: no
    ``see``, no line metrics asked for); Tk's redisplay, which lays out the new view anyway,
    does it once. ``see("end")`` laid out the old view and the paragraph again in the
    callback (21 ms there against 2.5 ms of redisplay: the bench's lesson demos time it)."""
    text = tk.Text(root, wrap="word", width=80, height=25)
    text.pack()
    text.insert("end", "".join(f"line {i} " + "word " * (i % 60) + "\n" for i in range(400)))
    text.yview_moveto(1.0)
    root.update()
    keeper = ViewKeeper(text)
    keeper.changing(at_end=True)
    text.insert("end", "paragraph " * 2000 + "\n")
    asked: list[tuple[str, tuple[object, ...]]] = []

    def spying(name: str) -> Callable[..., object]:
        real = getattr(text, name)

        def spy(*args: object) -> object:
            asked.append((name, args))
            return real(*args)

        return spy

    watched = ("yview", "see", "dlineinfo", "bbox", "count", "update", "update_idletasks")
    for name in watched:
        setattr(text, name, spying(name))
    keeper.restore()
    for name in watched:
        delattr(text, name)
    assert asked == [("yview", ("end-1c",))]
    text.update_idletasks()  # the redisplay
    last = text.dlineinfo("end-1c")
    assert last is not None and last[1] + last[3] <= text.winfo_height(), last  # whole
    assert text.dlineinfo("end-2c") is not None  # the paragraph's end above it


def test_a_reader_a_few_lines_up_a_long_transcript_is_not_pulled_down(
    root: tk.Tk, make_app
) -> None:
    """In 20,000 lines, three lines up is 0.9998 of the scroll range: "at the bottom" must
    mean the last line is on screen, not a fraction."""
    backend, gate = gated()
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.transcript.add_note("".join(f"earlier line {i}\n" for i in range(20_000)))
    app.flow.send("a long one")
    step(root, app, backend, gate, tokens_until(backend, "Part 3"))
    app.transcript.text.yview_scroll(-3, "units")
    root.update()
    assert app.transcript.text.yview()[1] > 0.999  # the premise: a tiny fraction away
    pulled: list[bool] = []
    steps = stream_in_steps(root, app, backend, gate, lambda: pulled.append(shows_end(app)))
    root.update()
    assert steps > 5 and not any(pulled), "pulled down to the end of the answer"


def saved_chat(app, answers: int) -> int:
    """A saved conversation whose answers are long and all different (nothing cached)."""
    store = app.archive.store
    chat = store.create("long answers")
    for number in range(answers):
        store.add_message(chat.id, "user", f"Question {number}?")
        answer = long_answer(5_000).replace("Part ", f"Answer {number}, part ")
        store.add_message(chat.id, "assistant", answer.replace("round", f"round {number}:"))
    return int(chat.id)


def test_reopening_a_saved_chat_shows_its_end_and_stays_there(root: tk.Tk, make_app) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    chat = saved_chat(app, 3)
    app.conversations.show(chat)
    ends: list[bool] = []

    def watch() -> None:
        if not app.flow.showing_conversation:
            ends.append(shows_end(app))

    pump_watching(
        root, lambda: not app.flow.showing_conversation and not app.transcript.painter.busy, watch
    )
    assert all(view.rendered for view in app.transcript.answers)
    assert all(ends), f"left the end while it opened: {ends.count(False)} times"
    assert settled_at_end(root, app), app.transcript.text.yview()


def test_reopening_a_saved_chat_keeps_a_reader_who_scrolled_up_in_place(
    root: tk.Tk, make_app
) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    chat = saved_chat(app, 3)
    app.conversations.show(chat)
    heading = "Answer 1, part 3: what the main loop does"
    # One event at a time (update() would run every slice at once): the reader scrolls as
    # soon as the second answer is on screen, before its markdown is painted.
    while not app.transcript.text.search(heading, "1.0"):
        root.tk.dooneevent(_tkinter.DONT_WAIT)
    assert app.transcript.painter.busy and "### " + heading in app.transcript.plain_text()
    scroll_to(app, heading)
    y = top_y(app)
    lines: list[str] = []
    pump_watching(
        root, lambda: not app.transcript.painter.busy, lambda: lines.append(top_line(app))
    )
    root.update()
    assert all(heading in line for line in lines), "the view moved"
    assert heading in top_line(app) and "#" not in top_line(app)
    assert abs(top_y(app) - y) <= 1


def test_blocks_are_rendered_while_the_answer_streams(root: tk.Tk, make_app) -> None:
    """Each block is rendered once the next has begun; only the open last one is plain.
    Nothing is ever missing meanwhile, and non-BMP characters split across tokens survive."""
    backend, gate = gated(SCRIPT, split_utf8=True)
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.flow.send("show me")
    view = app.flow.answering.answer
    # The heading, the list and the code block are done; the Chinese paragraph has begun.
    step(root, app, backend, gate, tokens_until(backend, "流式"))
    shown = app.transcript.plain_text
    pump_until(
        root,
        lambda: "## Why" not in shown() and "```" not in shown(),
        what="the blocks above, rendered",
    )
    assert app.flow.answering.answer is view  # while the answer still streams
    assert shown().count("Why the window stays smooth") == 1  # every word of them, once
    assert shown().count("def drain(self) -> None:") == 1
    assert app.transcript.painter.streaming_slice_ms  # it painted while streaming
    gate.release(10**6)
    pump_until(root, lambda: rendered(app), what="the answer, rendered")
    assert view.text == SCRIPT and view.rendered
    for piece in ("😀 🚀 🧠 𝄞", "中文", "never block the thread that draws", "queue.Queue"):
        assert shown().count(piece) == 1, piece
    assert "**" not in shown() and "\ufffd" not in shown()


def test_the_open_block_stays_plain_until_the_next_one_starts(root: tk.Tk, make_app) -> None:
    text = (
        "First paragraph with **bold**.\n\nSecond paragraph, **still open** while the rest"
        " of its sentence keeps arriving, one word after another, for a while."
    )
    backend, gate = gated(text)
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.flow.send("go")
    step(root, app, backend, gate, tokens_until(backend, "open**"))
    shown = app.transcript.plain_text
    pump_until(root, lambda: "First paragraph with bold." in shown(), what="the first, rendered")
    assert app.flow.answering.answer is not None  # while the answer still streams ...
    assert "Second paragraph, **still open**" in shown()  # ... the open block is plain
    gate.release(10**6)
    pump_until(root, lambda: rendered(app), what="the end")
    assert shown().count("Second paragraph, still open while the rest") == 1
    assert "**" not in shown()


def test_a_new_answer_while_the_previous_one_still_renders(
    root: tk.Tk, make_app, painter_clock: None
) -> None:
    # It ends with a long code block never closed: complete only when the answer ends, then
    # painted in many pieces (a piece or two per callback: the painter's clock is stepped).
    listing = "\n".join(f"step_{i:03d} = run({i})  # a line of a long listing" for i in range(150))
    backend = ScriptedBackend(rate=0, text=f"{LONG}\n```python\n{listing}")
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.flow.send("one")
    while (
        app.flow.answering.answer is not None
    ):  # one event at a time: update() could paint it all at once
        root.tk.dooneevent(_tkinter.DONT_WAIT)
    assert app.transcript.painter.busy  # the premise: its last block is still to be painted
    backend.text = SCRIPT
    app.flow.send("two")
    pump_until(root, lambda: rendered(app), timeout=60, what="both answers, rendered")
    first, second = app.transcript.answers
    assert first.rendered and second.rendered
    shown = app.transcript.plain_text()
    assert shown.count("Why the window stays smooth") == 1
    assert shown.count("Part 9: what the main loop does") == 1
    assert shown.index("Part 9: what") < shown.index("Why the window stays smooth")


def test_a_block_that_fails_to_render_stays_plain_and_the_rest_renders(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(ScriptedBackend(rate=0), sampling=Sampling(max_tokens=0))
    painter = app.transcript.painter
    real = painter._runs_for

    def broken(piece):
        if piece.kind == "list":
            raise RuntimeError("a rendering bug")
        return real(piece)

    monkeypatch.setattr(painter, "_runs_for", broken)
    app.flow.send("go")
    pump_until(root, lambda: rendered(app), what="the answer, rendered")
    shown = app.transcript.plain_text()
    assert "1. Generation: the model loop" in shown  # the list: plain, and whole
    assert "## Why" not in shown and "```" not in shown  # the blocks around it: rendered
    assert app.transcript.answers[-1].rendered
    assert "markdown rendering failed" in caplog.text
    caplog.clear()  # logged as it should be; the fixture would fail the test on it


def test_a_job_whose_marks_were_removed_never_raises(root: tk.Tk, make_app) -> None:
    """The painter must not trust that the transcript told it: slices after the answer's
    marks vanished (and giving up on such a job) raise nothing."""
    app = make_app(ScriptedBackend(rate=0))
    transcript, painter = app.transcript, app.transcript.painter

    def ended_answer():
        view = transcript.begin_answer()
        transcript.append(view, LONG)
        transcript.finish(view)  # its slices are scheduled; none has run yet
        assert view.job is not None and painter.busy
        return view, view.job

    view, _job = ended_answer()
    transcript.text.mark_unset(view.start_mark, view.end_mark)  # behind the painter's back
    pump_until(root, lambda: not painter.busy, what="the painter to let go")
    assert not view.rendered
    assert not transcript.text.tag_ranges(HIDDEN_TAG)  # nothing half-painted left behind
    # Giving up on a job after an error, when even the painter's own marks are gone:
    view, job = ended_answer()
    transcript.text.mark_unset(job.start_mark, job.end_mark, job.shown_mark, job.plain_mark)
    painter._give_up(job)
    assert not painter.busy and not view.rendered


def test_code_of_every_look_shares_the_four_fonts_of_code(root: tk.Tk, make_app) -> None:
    """Highlighted code is a tag per look (keyword, name, string, ...), but its fonts are
    four at most (bold or not, italic or not): a font per look cost the first code block of
    a session its own 12-16 ms slice."""
    backend, gate = gated()
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.flow.send("a long one")
    gate.release(sum(1 for _ in backend.pieces(None)))
    pump_until(root, lambda: rendered(app), timeout=60, what="the answer, rendered")
    text = app.transcript.text
    code_tags = [tag for tag in text.tag_names() if tag.startswith("md-code-")]
    fonts = {str(text.tag_cget(tag, "font")) for tag in code_tags}
    assert len(code_tags) > 4  # the premise: more looks than fonts
    assert len(fonts) <= 4, fonts


@pytest.mark.parametrize("cut", [True, False], ids=["cut in its heading", "whole"])
def test_an_answer_cut_in_a_heading_does_not_end_in_a_big_heading(
    root: tk.Tk, make_app, cut: bool
) -> None:
    """Lesson 11's flood in Chinese, cut at its token count, ended in a half-written heading
    painted large. A heading the answer was cut in stays as it streamed (plain, its marks
    shown); the same answer not cut paints it as a heading."""
    text = "Intro line here.\n\n### Part 3: what the main loop does\n\nbody text"
    backend = ScriptedBackend(rate=0, text=text)
    limit = tokens_until(backend, "Part 3: what") if cut else 0
    app = make_app(backend, sampling=Sampling(max_tokens=limit))
    app.flow.send("a question")
    pump_until(root, lambda: rendered(app), what="the answer, painted")
    widget = app.transcript.text
    first = widget.search("Intro line here.", "1.0")
    heading = widget.search("Part 3: what", "1.0")
    assert first and heading
    assert set(widget.tag_names(first)) - {"answer"}, "the paragraph before it is painted"
    shown = widget.get(f"{heading} linestart", f"{heading} lineend")
    painted = set(widget.tag_names(heading)) - {"answer"}
    if cut:
        assert shown == "### Part 3: what" and not painted
    else:
        assert shown == "Part 3: what the main loop does" and painted
