"""Prose laid out by tkhtmlview's parser without a widget, on the preparer's thread (issue 38:
the costliest callback of a streaming answer was its last block's layout, in the main thread,
when the answer ended).

The layout is tkhtmlview's own: the same runs, looks and text as its widget gives, on every
lesson, a long generated chat and the bundled model's answer to the bench's question. And in
the window, no piece of prose is laid out on the main thread: not while the answer streams,
not when it ends. Counted, no clock."""

from __future__ import annotations

import threading
import tkinter as tk
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import pump_until, wait_until
from tkchat.conversation import Sampling
from tkchat.generate.scripted import SCRIPT, ScriptedBackend, long_answer
from tkchat.lab.bench.scenarios.chat_text import long_conversation
from tkchat.render.safe_markdown import block_to_html, split_blocks
from tkchat.ui.transcript import html_layout
from tkchat.ui.transcript.html_layout import (
    HtmlLayout,
    HtmlPreparer,
    StyleRun,
    _trimmed,
    parser_families,
    style_key,
)

LESSONS = Path(__file__).resolve().parent.parent / "lessons"
TRICKY = (
    "- a\n  - b\n    - c\n- d",
    "1. one\n2. two\n\n   a paragraph in it\n3. three",
    "10. ten\n11. eleven",
    "* a\n\n* b\n\n  text",
    "> a quote with **bold**\n> and more",
    "Hello  world   with   spaces  ",
    "line one  \nline two",
    "a <b>raw</b> & amp; &lt; x",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "😀 emoji *em* 𝄞 more **bold 😀** end",
    "###### H6 *x*",
    "[a link](http://x) and ![an image](http://y/z.png)",
    "***bold italic*** ~~strike~~ `code` x",
    "a\tb\tc",
    "中文的段落，**加粗**，还有 `代码`。",
)


def _corpus() -> list[str]:
    texts = [path.read_text(encoding="utf-8") for path in sorted(LESSONS.rglob("*.md"))]
    texts += [text for _role, text in long_conversation(12)]
    return [*texts, SCRIPT, long_answer(6_000), *TRICKY]


def _widget_runs(widget: Any, html: str) -> list[StyleRun]:
    """What the transcript read back from tkhtmlview's widget before (the reference)."""
    widget.set_html(html)
    runs: list[StyleRun] = []
    active: list[str] = []
    for key, value, _index in widget.dump("1.0", "end-1c", text=True, tag=True):
        if key == "tagon":
            active.append(value)
        elif key == "tagoff" and value in active:
            active.remove(value)
        elif key == "text" and value:
            look = style_key(widget.html_parser._w_tags.get(active[-1]) if active else None)
            if runs and runs[-1][1] == look:
                runs[-1] = (runs[-1][0] + value, look)
            else:
                runs.append((value, look))
    return _trimmed(runs)


@pytest.mark.gui
def test_the_layout_without_a_widget_is_tkhtmlview_s(root: tk.Tk) -> None:
    from tkhtmlview import HTMLText, html_parser

    from tkchat.ui.look.html_fonts import share_fonts

    share_fonts(html_parser)
    widget = HTMLText(root)
    layout = HtmlLayout(parser_families())
    blocks = [block for text in _corpus() for block in split_blocks(text)]
    assert len(blocks) > 600
    differ = [
        block
        for block in blocks
        if layout.runs(block_to_html(block)) != _widget_runs(widget, block_to_html(block))
    ]
    assert differ == []


def test_the_preparer_lays_out_on_its_own_thread_once_and_hands_it_over_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[str] = []
    real = HtmlLayout.runs

    def runs(self: HtmlLayout, html: str) -> list[StyleRun]:
        threads.append(threading.current_thread().name)
        return real(self, html)

    monkeypatch.setattr(HtmlLayout, "runs", runs)
    preparer = HtmlPreparer(("Helvetica", "Courier"))
    try:
        assert not preparer.ready("Some **bold** text.")
        assert not preparer.ready("Some **bold** text.")  # asked once
        wait_until(lambda: preparer.ready("Some **bold** text."), what="the layout")
        laid_out = preparer.take("Some **bold** text.")
        assert laid_out is not None and "".join(chunk for chunk, _ in laid_out) == (
            "Some bold text.\n"
        )
        assert preparer.take("Some **bold** text.") is None  # handed over once
        assert threads == ["tkchat-markdown"] and preparer.laid_out == 1
    finally:
        preparer.close()


def test_a_piece_whose_layout_fails_is_ready_with_nothing_to_take(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The main thread then lays it out itself: its error is reported where the painter
    reports a rendering bug, and that block stays plain."""

    def broken(self: HtmlLayout, html: str) -> list[StyleRun]:
        raise RuntimeError("a layout bug")

    monkeypatch.setattr(HtmlLayout, "runs", broken)
    preparer = HtmlPreparer(("Helvetica", "Courier"))
    try:
        preparer.ready("x")
        wait_until(lambda: preparer.ready("x"), what="the failed layout")
        assert preparer.take("x") is None
    finally:
        preparer.close()


@pytest.mark.gui
def test_no_prose_is_laid_out_on_the_main_thread_while_it_streams_or_when_it_ends(
    root: tk.Tk, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real = HtmlLayout.runs

    def runs(self: HtmlLayout, html: str) -> list[StyleRun]:
        threads.append(threading.current_thread().name)
        return real(self, html)

    monkeypatch.setattr(html_layout.HtmlLayout, "runs", runs)
    text = long_answer(4_000) + "\n\n1. a last list\n2. **of steps**, still open at the end"
    app = make_app(ScriptedBackend(rate=0, text=text), sampling=Sampling(max_tokens=0))
    app.flow.send("go")
    pump_until(
        root,
        lambda: app.flow.answering.answer is None and not app.transcript.painter.busy,
        what="the answer, painted",
    )
    looks = app.transcript.painter.looks
    assert looks.laid_out_here == 0
    assert threads and set(threads) == {"tkchat-markdown"}
    assert looks.preparer.laid_out == len(threads)
    shown = app.transcript.plain_text()
    assert "**" not in shown and "of steps, still open at the end" in shown  # the last block
    assert app.transcript.answers[-1].rendered
