"""Prose laid out by tkhtmlview's parser without a widget, and code highlighted, on the
preparer's thread (issue 38: the costliest callback of a streaming answer was its last
block's layout, in the main thread, when the answer ended).

The layout is tkhtmlview's own: the same runs, looks and text as its widget gives, on every
lesson, a long generated chat and the scripted answers. And in the window, no piece is made
ready on the main thread: not while the answer streams, not when it ends. Counted, no
clock."""

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
from tkchat.render.blocks import Piece
from tkchat.render.safe_markdown import block_to_html, split_blocks
from tkchat.ui.transcript.html_layout import (
    HtmlLayout,
    StyleRun,
    _trimmed,
    numbered_from,
    parser_families,
    style_key,
)
from tkchat.ui.transcript.markdown_looks import MarkdownLooks
from tkchat.ui.transcript.preparer import Preparer

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
    reference = widget.html_parser  # and a list's start number, which tkhtmlview ignores
    opened = reference.handle_starttag
    reference.handle_starttag = lambda tag, attrs: (
        opened(tag, attrs),
        numbered_from(reference, tag, attrs),
    )
    layout = HtmlLayout(parser_families())
    blocks = [block for text in _corpus() for block in split_blocks(text)]
    assert len(blocks) > 600
    differ = [
        block
        for block in blocks
        if layout.runs(block_to_html(block)) != _widget_runs(widget, block_to_html(block))
    ]
    assert differ == []


def test_a_list_that_goes_on_after_a_paragraph_keeps_its_numbers() -> None:
    """Seen against a real server: items 8 to 10 of a model's list came after a paragraph,
    and the window numbered them 1, 2, 3 (the text saved said 8, 9, 10)."""
    layout = HtmlLayout(("Helvetica", "Courier"))
    text = "".join(text for text, _look in layout.runs(block_to_html("8. eight\n9. nine\n10. ten")))
    assert [line.split()[0] for line in text.splitlines()] == ["8.", "9.", "10."]
    first = "".join(text for text, _look in layout.runs(block_to_html("1. one\n2. two")))
    assert first.split()[0] == "1."


def test_the_preparer_works_on_its_own_thread_once_and_hands_it_over_once() -> None:
    threads: list[str] = []

    def work(markdown: str) -> str:
        threads.append(threading.current_thread().name)
        return markdown.upper()

    preparer: Preparer[str, str] = Preparer(work)
    try:
        assert not preparer.ready("some text")
        assert not preparer.ready("some text")  # asked once
        wait_until(lambda: preparer.ready("some text"), what="the work")
        assert preparer.take("some text") == "SOME TEXT"
        assert preparer.take("some text") is None  # handed over once
        assert threads == ["tkchat-markdown"] and preparer.prepared == 1
    finally:
        preparer.close()


def test_work_that_raises_is_ready_with_nothing_to_take() -> None:
    """The main thread then does it itself: its error is reported where the painter
    reports a rendering bug, and that block stays plain."""

    def broken(markdown: str) -> str:
        raise RuntimeError("a layout bug")

    preparer: Preparer[str, str] = Preparer(broken)
    try:
        preparer.ready("x")
        wait_until(lambda: preparer.ready("x"), what="the failed work")
        assert preparer.take("x") is None
    finally:
        preparer.close()


@pytest.mark.gui
def test_no_piece_is_made_ready_on_the_main_thread_while_it_streams_or_when_it_ends(
    root: tk.Tk, make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prose laid out and code highlighted: all of it on the preparer's thread."""
    threads: list[tuple[str, str]] = []
    real = MarkdownLooks._prepare

    def prepare(self: MarkdownLooks, piece: Piece, layout: HtmlLayout) -> Any:
        threads.append((piece.kind, threading.current_thread().name))
        return real(self, piece, layout)

    monkeypatch.setattr(MarkdownLooks, "_prepare", prepare)
    text = long_answer(4_000) + "\n\n1. a last list\n2. **of steps**, still open at the end"
    app = make_app(ScriptedBackend(rate=0, text=text), sampling=Sampling(max_tokens=0))
    app.flow.send("go")
    pump_until(
        root,
        lambda: app.flow.answering.answer is None and not app.transcript.painter.busy,
        what="the answer, painted",
    )
    looks = app.transcript.painter.looks
    assert looks.prepared_here == 0
    assert {thread for _kind, thread in threads} == {"tkchat-markdown"}
    assert {"fence", "list", "para", "heading"} <= {kind for kind, _thread in threads}
    assert looks.preparer.prepared == len(threads)
    shown = app.transcript.plain_text()
    assert "**" not in shown and "of steps, still open at the end" in shown  # the last block
    assert "```" not in shown and app.transcript.answers[-1].rendered
