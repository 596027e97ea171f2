"""The transcript is read-only for the user and cheap for the program: real keys typed into
it change nothing, a selection still copies, the window's shortcuts still work from it; and
while an answer streams, no write toggles its ``state`` (each ``configure`` of a Text makes
Tk lay out every line on screen again) and a reader at the end is followed with ``see``.
Counted through a Tcl execution trace on the widget's command: every call, from anywhere."""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable

import pytest

from tests.conftest import pump_until
from tests.test_rich_streaming import (
    gated,
    rendered,
    shows_end,
    step,
    stream_in_steps,
    tokens_until,
)
from tests.x_input import handled, keyboard_focus, needs_xdotool, press, type_text
from tkchat.conversation import Sampling
from tkchat.course import lessons
from tkchat.generate.scripted import ScriptedBackend, long_answer
from tkchat.ui.readonly import READ_ONLY_CLASS
from tkchat.ui.transcript.answer_figures import FIGURES_TAG


def widget_calls(text: tk.Text) -> tuple[list[tuple[str, ...]], Callable[[], None]]:
    """Every call of ``text``'s Tcl command from now on, as its words (the command first),
    and what stops the count."""
    calls: list[tuple[str, ...]] = []

    def entered(command: str, _op: str) -> None:
        calls.append(tuple(text.tk.splitlist(command)))

    trace = ("execution", str(text), "enter", text.register(entered))
    text.tk.call("trace", "add", *trace)
    return calls, lambda: text.tk.call("trace", "remove", *trace)


@needs_xdotool
def test_keys_typed_into_the_transcript_change_nothing_and_a_selection_copies(
    root: tk.Tk, make_app
) -> None:
    app = make_app(ScriptedBackend(rate=0, text="An answer to read, not to edit."))
    app.flow.send("a question")
    pump_until(root, lambda: rendered(app), what="the answer")
    text = app.transcript.text
    assert READ_ONLY_CLASS in text.bindtags() and "Text" not in text.bindtags()
    before = text.get("1.0", "end")
    keyboard_focus(root, text)
    text.mark_set("insert", "end-1c")
    root.clipboard_clear()
    root.clipboard_append("PASTED")
    type_text(root, "typed")
    press(root, "Return", "BackSpace", "Delete", "ctrl+v", "ctrl+o", "ctrl+k", "Tab")
    keyboard_focus(root, text)
    press(root, "ctrl+h", "ctrl+d", "shift+Insert")
    assert text.get("1.0", "end") == before
    assert "PASTED" not in text.get("1.0", "end")
    # selecting and copying are the reader's
    start = text.search("not to edit", "1.0")
    text.tag_add("sel", start, f"{start} + 11c")
    keyboard_focus(root, text)
    press(root, "ctrl+c")
    assert root.clipboard_get() == "not to edit"
    # and the window's shortcuts reach it from there: Ctrl+N starts a new chat
    keyboard_focus(root, text)
    press(root, "ctrl+n")
    handled(root)
    assert "not to edit" not in text.get("1.0", "end")


def test_streaming_toggles_no_state_and_follows_the_end_with_see(root: tk.Tk, make_app) -> None:
    """As the model streams (a token a tick, inside a paragraph): each tick's insert is
    followed by ``see``, not by ``yview`` (whose redisplay measures every line on screen
    again), and never wrapped in ``configure -state``."""
    backend, gate = gated()
    app = make_app(backend, sampling=Sampling(max_tokens=0))
    app.flow.send("a long one")
    text = app.transcript.text
    step(root, app, backend, gate, tokens_until(backend, "In round 4 the loop"))
    assert text.yview()[0] > 0  # the premise: the answer fills the window
    pump_until(root, lambda: not app.transcript.painter.busy, what="the blocks so far painted")
    painter = app.transcript.painter
    slices_before = len(painter.slice_ms)
    calls, stop_counting = widget_calls(text)
    for _ in range(20):  # inside the paragraph "In round 4 the loop wakes, ...": no block ends
        step(root, app, backend, gate, 1)
        assert shows_end(app), "left the bottom while streaming"
    stop_counting()
    configures = [c for c in calls if c[1:2] == ("configure",) and "-state" in c]
    assert configures == [], configures[:3]
    # yview INDEX: only a painter slice that replaced a block's plain text puts the view
    # back so (ViewKeeper.restore); the ticks follow with see
    yviews = [c for c in calls if c[1:2] == ("yview",) and len(c) == 3]
    assert len(yviews) <= len(painter.slice_ms) - slices_before, yviews[:3]
    assert len([c for c in calls if c[1:2] == ("see",)]) >= 20
    assert len([c for c in calls if c[1:2] == ("insert",)]) >= 20


def test_a_flood_to_its_end_and_the_next_lesson_configure_no_big_widget(
    root: tk.Tk, make_app, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lesson 11 in a class: a long answer streams to its end (its last block painted, its
    figures line drawn), then the teacher picks lesson 12. The transcript, which holds the
    whole answer, is never ``configure``d (Tk would lay all of it out again: the fixed
    window's long tasks "in writable → Misc._configure" after a flood), and the lesson
    panel's live line, refreshed twice a second, reads no file and is configured only when
    its text changes ("in LessonPanel.refresh_figure → Misc._configure")."""
    backend, gate = gated(long_answer(20_000))
    app = make_app(backend, sampling=Sampling(max_tokens=0), show_lessons=True)
    panel = app.teaching.lesson_panel
    panel.select("11-backpressure")
    pump_until(root, lambda: not panel.rendering, what="lesson 11 on screen")
    app.flow.send("Flood the window with text.")
    text = app.transcript.text
    calls, stop_counting = widget_calls(text)
    stream_in_steps(root, app, backend, gate, lambda: None)
    pump_until(root, lambda: bool(text.tag_ranges(FIGURES_TAG)), what="its figures line")
    panel.select("12-cancellation")
    pump_until(root, lambda: not panel.rendering, what="lesson 12 on screen")
    stop_counting()
    assert len(app.transcript.answers[-1].text) > 20_000
    assert [c for c in calls if c[1:2] == ("insert",)], "the answer was watched as it came"
    assert [c for c in calls if c[1:2] == ("configure",)] == []
    # the live line, refreshed with nothing changed: no file read, no configure
    reads = []
    real_load = lessons.load_figures
    monkeypatch.setattr(lessons, "load_figures", lambda path: reads.append(path) or real_load(path))
    panel.refresh_figure()
    line = str(panel.figure_label.cget("text"))
    label_calls, stop_counting = widget_calls(panel.figure_label)  # type: ignore[arg-type]
    for _ in range(5):
        panel.refresh_figure()
    stop_counting()
    assert str(panel.figure_label.cget("text")) == line
    assert [c for c in label_calls if c[1:2] == ("configure",)] == []
    assert reads == []
