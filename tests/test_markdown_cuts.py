"""Display-only cuts never change what markdown means: a fuzz over long runs of every
markdown delimiter, in the real Tk window and in the page's renderer.

The window cuts what it shows twice over, for speed: a line gets a line end every 1,000
characters (Tk lays out a logical line as a whole), and a long block is rendered in pieces
of at most 1,000 characters (one main-thread callback each). Neither may open a fence, a
code span or any construct the source did not: a 20,001-character payload after a long
backtick run showed 1,054 characters in the window (the cut line of backticks opened a
fence), while the browser showed it all.

Compared: the letters and digits shown (text content, not pixels), since that is what a
cut swallowed; the delimiters themselves may be syntax in one place and text in another.
Three renderings of each case: the window as an answer streams in (cuts and all), the same
markdown rendered whole by the same converter (no cut at all), and the page's markdown.js
in Chromium.
"""

from __future__ import annotations

import html.parser
import re
import shutil
import time
import tkinter as tk
from collections.abc import Iterator
from pathlib import Path

import pytest

from tkchat.render.blocks import CUT_MARK, block_pieces, split_blocks
from tkchat.render.prose import code_spans, split_prose
from tkchat.render.scan import RawBlock
from tkchat.render.stream import BlockStream
from tkchat.render.to_html import block_to_html, markdown_to_safe_html
from tkchat.ui.base.translator import Translator
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.markdown_looks import CODE_HEAD_TAG
from tkchat.ui.transcript.markdown_view import HIDDEN_TAG
from tkchat.ui.transcript.transcript import Transcript

MARKDOWN_JS = Path(__file__).resolve().parent.parent / "tkchat" / "serve" / "static" / "markdown.js"
DELIMITERS = ("`", "~", "*", "_", "#", ">", "-", "+", "=", "|", "[", "]", "(", ")", "!")
DELIMITERS += ("\\", "<", "&", "1.", "    ", "\t")
RUNS = (3, 999, 1_001, 1_500)  # around the cuts (1,000 characters)
WORDS = " ".join(f"word{i}" for i in range(200)) + " "  # pushes a run across the cut
PAYLOAD = " ".join(f"p{i}" for i in range(300))


def cases() -> Iterator[tuple[str, str]]:
    """(name, answer) for each delimiter and run length: the run at the answer's start, in
    a word, after 1,200 characters of words, and on a line of its own in a paragraph."""
    for mark in DELIMITERS:
        for length in RUNS:
            run = mark * length
            name = f"{mark!r}x{length}"
            yield f"{name} at the start", run + PAYLOAD
            yield f"{name} in a word", "x" + run + PAYLOAD
            yield f"{name} after words", WORDS + run + " " + PAYLOAD
            yield f"{name} on its own line", WORDS + "\n" + run + "\n" + PAYLOAD


def letters(text: str) -> str:
    return "".join(re.findall(r"[A-Za-z0-9]", text))


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def uncut(text: str) -> str:
    """The text the same converter shows for ``text`` rendered whole (no cut anywhere)."""
    parser = _Text()
    parser.feed(markdown_to_safe_html(text))
    return "".join(parser.parts)


class Window:
    """One transcript; each answer streams in as a model's would, then is painted."""

    def __init__(self, root: tk.Tk) -> None:
        self.root = root
        self.transcript = Transcript(root, AfterScheduler(root), Translator("en"))
        self.transcript.pack(fill="both", expand=True)

    def shows(self, answer: str, chunk: int = 331) -> str:
        view = self.transcript.begin_answer()
        for start in range(0, len(answer), chunk):
            self.transcript.append(view, answer[start : start + chunk])
        self.root.update()
        self.transcript.finish(view)
        deadline = time.monotonic() + 60
        while self.transcript.painter.busy and time.monotonic() < deadline:
            self.root.update()
            time.sleep(0.002)
        assert not self.transcript.painter.busy
        shown: list[str] = []
        active: set[str] = set()
        for key, value, _index in self.transcript.text.dump(
            view.start_mark, view.end_mark, text=True, tag=True
        ):
            if key == "tagon":
                active.add(value)
            elif key == "tagoff":
                active.discard(value)
            elif key == "text" and not active & {CODE_HEAD_TAG, HIDDEN_TAG}:
                shown.append(value)  # (a code block's header: its language, "Copy code")
        self.transcript.clear()
        return "".join(shown)


@pytest.fixture(scope="module")
def window_texts() -> dict[str, str]:
    """What the window shows of every case (one window for all: about 20 s)."""
    from tests.conftest import KEEP_ALIVE

    root = tk.Tk()
    KEEP_ALIVE.append(root)
    try:
        window = Window(root)
        return {name: window.shows(answer) for name, answer in cases()}
    finally:
        root.destroy()


@pytest.mark.gui
def test_cuts_for_display_never_change_what_the_window_shows(
    display: None, window_texts: dict[str, str]
) -> None:
    wrong = [
        name for name, answer in cases() if letters(window_texts[name]) != letters(uncut(answer))
    ]
    assert wrong == [], wrong


@pytest.mark.gui
def test_the_window_and_the_page_show_the_same_text(
    display: None, window_texts: dict[str, str]
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright drives the page")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium here")
    answers = [answer for _name, answer in cases()]
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--headless=new", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page()
            page.goto("about:blank")
            page.add_script_tag(path=str(MARKDOWN_JS))
            shown = page.evaluate(
                "(answers) => answers.map((markdown) => { const box = "
                "document.createElement('div'); box.append(TkMarkdown.renderMarkdown(markdown));"
                " return box.textContent; })",
                answers,
            )
        finally:
            browser.close()
    wrong = [
        name
        for (name, _answer), text in zip(cases(), shown, strict=True)
        if letters(text) != letters(window_texts[name])
    ]
    assert wrong == [], wrong


# -- the pieces, one by one ------------------------------------------------------------------


def test_the_block_stream_reads_the_source_and_counts_displayed_lines() -> None:
    """A line of 1,500 backticks is displayed as two lines, the first of only backticks:
    the stream still sees one paragraph line (no fence), counted as the two it shows."""
    stream = BlockStream(display_limit=1000)
    stream.feed("x" + "`" * 1500 + "y\n\nnext paragraph\n\nlast")
    block = stream.next_block()
    assert block is not None and block.raw.kind == "para"
    assert block.lines == 2  # its two displayed lines
    following = stream.next_block()
    assert following is not None and following.raw.lines == ["next paragraph"]
    assert following.lines == 2  # the blank line before it, then its text


def test_a_prose_cut_never_falls_inside_a_code_span() -> None:
    text = "before " + "`" + "code " * 400 + "`" + " after " * 50
    spans = code_spans(text)
    assert spans == [(7, 7 + 2 + 5 * 400)]
    pieces = split_prose(text, 600)
    whole = text[spans[0][0] : spans[0][1]]
    assert whole in pieces  # the span is one piece, longer than the limit, but whole


def test_code_spans_pair_runs_of_equal_length_only() -> None:
    assert code_spans("a ``b`` c") == [(2, 7)]
    assert code_spans("a ``` b") == []  # no partner: literal
    assert code_spans("`a`` b ``c` d`") == [(0, 11)]  # then "`" alone: literal


def test_a_piece_after_a_cut_cannot_open_a_block() -> None:
    """Every piece of a paragraph but the first starts with a zero-width space, so a fence,
    a heading or a list the middle of a paragraph never was stays text."""
    text = ("word " * 150) + "``` info\n# not a heading " + ("word " * 150)
    pieces = block_pieces(RawBlock("para", text.split("\n")), 400)
    assert len(pieces) > 1 and all(p.markdown.startswith(CUT_MARK) for p in pieces[1:])
    for piece in pieces:
        html_text = block_to_html(piece.markdown)
        assert "<pre" not in html_text and "<h1" not in html_text
        assert "\u200b" not in html_text  # the mark is taken out again
    joined = "\n\n".join(split_blocks(text, 400)).replace(CUT_MARK, "")
    assert letters(joined) == letters(text)
