"""Chinese in the transcript wraps as it does in print, and is copied as it was written.

Tk 8.6's word wrap breaks only at a space, so a Chinese paragraph was one long "word": moved
whole to the next line when it did not fit on the rest of one (the line before it left
short), then cut at any character, "，" first on a line included. The transcript now puts an
elided space where the lesson panel's rule lets Chinese break (ui/look/chinese_wrap.py).
Read back from a real window: where Tk ends each display line, what the selection, Ctrl+C,
the copy link and a search give. Each insert's work is counted, never timed.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Iterator

import pytest

from tests.conftest import pump_until
from tests.x_input import laid_out
from tkchat.ui.base.translator import Translator
from tkchat.ui.look import chinese_wrap
from tkchat.ui.look.chinese_wrap import (
    BREAK_SPACING,
    MAX_BREAKS_PER_LINE,
    BreakState,
    with_breaks,
)
from tkchat.ui.look.fit import BREAK_TAG, NO_LINE_END, NO_LINE_START
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.found import FOUND_TAG
from tkchat.ui.transcript.transcript import Transcript

ZH = (
    "模型每秒生成一百二十五个词元，窗口却冻结了整整六秒钟。"
    "这是因为主线程在等待模型的回答，而不是在处理事件。"
)
# Latin words, then a Chinese run that cannot fit on the rest of their line.
MIXED = "The answer streams in while the window " + ZH + ZH[:40]
QUESTION = "为什么窗口会冻结？" * 10


def shown(text: tk.Text, start: str, end: str) -> str:
    return str(text.tk.call(str(text), "get", "-displaychars", start, end))


def display_lines(text: tk.Text, start: str, end: str) -> Iterator[tuple[str, int]]:
    """Each display line from ``start`` to ``end``: what it shows, and its width in pixels."""
    index = text.index(start)
    end = text.index(end)
    while text.compare(index, "<", end):
        following = text.index(f"{index} +1 display lines")
        stop = following if text.compare(following, "<", end) else end
        info = text.dlineinfo(index)
        assert info is not None, f"line {index} is not on screen"
        yield shown(text, index, stop), info[2]
        if stop == end or text.compare(following, "<=", index):
            return
        index = following


def line_end(view: Transcript, mark: str) -> str:
    return view.text.index(f"{view.text.index(mark)} lineend")


def transcript(root: tk.Tk) -> Transcript:
    root.geometry("480x700")
    view = Transcript(root, AfterScheduler(root), Translator("zh"))
    view.pack(fill="both", expand=True)
    laid_out(root)
    return view


def stream(root: tk.Tk, view: Transcript, answer: str, tick: int = 3) -> object:
    answer_view = view.begin_answer()
    for start in range(0, len(answer), tick):
        view.append(answer_view, answer[start : start + tick])
    laid_out(root)
    return answer_view


def assert_laid_out_as_in_print(view: Transcript, start: str, end: str) -> list[str]:
    """No line starts with a closing mark or ends with an opening one, and every line but
    the last is full: short of the widest by at most the breaks' spacing and one mark moved
    (a run used to go whole to the next line, leaving the Latin words' line half empty).
    Returns the lines."""
    lines = list(display_lines(view.text, start, end))
    assert len(lines) > 2, lines
    char = view.body_font.measure("中")
    widest = max(width for _line, width in lines)
    for line, width in lines[:-1]:
        assert line[:1] not in NO_LINE_START, lines
        assert line.rstrip("\n")[-1:] not in NO_LINE_END, lines
        assert width >= widest - (BREAK_SPACING + 1) * char, (line, width, widest)
    return [line for line, _width in lines]


@pytest.mark.gui
def test_tk_breaks_at_an_elided_space_and_not_at_a_zero_width_space(root: tk.Tk) -> None:
    """What the fix rests on, in Tk itself: U+200B is measured 0 pixels wide and kept in the
    text, but word wrap never breaks there (the Chinese run still moves whole to the next
    line); an elided space is a break, and ``get -displaychars`` leaves it out."""
    text = tk.Text(root, width=30, height=12, wrap="word")
    text.pack()
    text.tag_configure("hidden", elide=True)
    text.insert("end", "Latin words first, " + "\u200b".join(ZH) + "\n")
    text.insert("end", "Latin words first, ")
    for number, character in enumerate(ZH):
        text.insert("end", *([" ", "hidden"] if number else []), character)
    laid_out(root)
    zero_width = [line for line, _w in display_lines(text, "1.0", "1.0 lineend")]
    elided = [line for line, _w in display_lines(text, "2.0", "end-1c")]
    assert zero_width[0] == "Latin words first, "  # the run went whole to the next line
    assert elided[0].startswith("Latin words first, 模")
    assert shown(text, "2.0", "end-1c") == "Latin words first, " + ZH


def test_breaks_follow_the_rule_however_the_text_arrives() -> None:
    """The same breaks whether the text comes whole or a character at a time (a tick's
    text is looked at with only the last character before it), all of them allowed by the
    lesson panel's rule, the text itself unchanged; a unit (毫秒) is never cut."""
    text = "「注意」：16 毫秒，" + ZH + "\n" + QUESTION + "（完）"

    def marked(step: int) -> str:
        state, out = BreakState(), []
        for start in range(0, len(text), step):
            runs, state = with_breaks(text[start : start + step], ("answer",), state)
            out += ["|" if BREAK_TAG in tags else chunk for chunk, tags in runs]
        return "".join(out)

    whole = marked(len(text))
    assert whole.count("|") > 20
    assert all(marked(step) == whole for step in (1, 2, 5))
    assert whole.replace("|", "") == text
    for before, after in zip(whole.split("|"), whole.split("|")[1:], strict=False):
        assert after[0] not in NO_LINE_START and before[-1] not in NO_LINE_END
    assert "毫|秒" not in whole


def test_a_logical_line_gets_a_bounded_number_of_breaks() -> None:
    """Tk's cost of a line grows with the square of its breaks: a line gets at most
    MAX_BREAKS_PER_LINE, at least BREAK_SPACING characters apart; a new line counts anew."""
    long = (ZH * 8)[: 2 * BREAK_SPACING * MAX_BREAKS_PER_LINE]
    runs, _state = with_breaks(long + "\n" + ZH, ("answer",))
    marked = "".join("|" if BREAK_TAG in tags else chunk for chunk, tags in runs)
    first, second = marked.split("\n")
    assert first.count("|") == MAX_BREAKS_PER_LINE
    assert all(len(piece) >= BREAK_SPACING for piece in first.split("|"))
    assert second.count("|") > 10


@pytest.mark.gui
def test_each_insert_looks_only_at_its_own_text(
    root: tk.Tk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While an answer streams, an insert every tick: each looks for breaks in that tick's
    text and the one character before it, never in the answer so far."""
    looked_at: list[tuple[str, str]] = []
    rule = chinese_wrap.break_points

    def counted(text: str, before: str = "") -> Iterator[int]:
        looked_at.append((text, before))
        return rule(text, before)

    monkeypatch.setattr(chinese_wrap, "break_points", counted)
    view = transcript(root)
    answer = MIXED * 3
    stream(root, view, answer, tick=3)
    assert len(looked_at) == len(range(0, len(answer), 3))
    assert all(len(text) <= 3 and len(before) <= 1 for text, before in looked_at)
    assert "".join(text for text, _before in looked_at) == answer


@pytest.mark.gui
def test_chinese_fills_its_lines_while_it_streams_and_once_painted(root: tk.Tk) -> None:
    view = transcript(root)
    question = view.add_user(QUESTION)
    answer = stream(root, view, MIXED + "\n\n" + ZH)
    # (An index first: in "head-1 + 1 lines" Tk would read the mark's name up to its "-".)
    question_line = view.text.index(f"{view.text.index(question.head_mark)} + 1 lines")
    assert_laid_out_as_in_print(view, question_line, answer.head_mark)
    lines = assert_laid_out_as_in_print(view, answer.start_mark, line_end(view, answer.start_mark))
    assert "模" in lines[0]  # the Chinese run starts on the Latin words' line
    view.finish(answer)
    pump_until(root, lambda: not view.painter.busy, what="the answer painted")
    laid_out(root)
    assert view.text.tag_ranges(BREAK_TAG)  # the painted text has its breaks too
    lines = assert_laid_out_as_in_print(view, answer.start_mark, line_end(view, answer.start_mark))
    assert "模" in lines[0]


@pytest.mark.gui
def test_what_is_copied_and_searched_is_the_text_as_written(root: tk.Tk) -> None:
    """The breaks are in the widget only: the selection (X's, and Ctrl+C's clipboard), the
    copy link and what the transcript says it shows hold the model's text exactly, and a
    search finds a word across a break and marks exactly that word."""
    view = transcript(root)
    answer = stream(root, view, MIXED)
    assert view.text.tag_ranges(BREAK_TAG)
    whole = (answer.start_mark, answer.end_mark)

    def copied() -> set[str]:
        """What the X selection (a middle click's paste) and Ctrl+C's clipboard hold."""
        view.text.tag_remove("sel", "1.0", "end")
        view.text.tag_add("sel", *whole)
        view.text.event_generate("<<Copy>>")
        return {root.selection_get(), root.clipboard_get()}

    assert copied() == {MIXED}  # plain, as it streamed
    assert MIXED in view.plain_text()
    view.act("copy", answer)  # the header's copy link: the message as it arrived
    assert root.clipboard_get() == answer.text == MIXED
    view.finish(answer)
    pump_until(root, lambda: not view.painter.busy, what="the answer painted")
    assert copied() == {MIXED + "\n"}  # painted: prose rendered as written, its line ended
    view.found.show("冻结")
    marked = view.text.tag_ranges(FOUND_TAG)
    assert len(marked) == 2 * MIXED.count("冻结")
    pairs = zip(marked[::2], marked[1::2], strict=True)
    assert {shown(view.text, str(start), str(end)) for start, end in pairs} == {"冻结"}
