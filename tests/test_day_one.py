"""What someone leaving LM Studio, GPT4All or Jan meets on the first day (issue 22, "the
smaller items"), each on a real window on Xvfb, with real keys and clicks where they matter:
Enter while the model loads, Regenerate after a branch flipped, the versions' arrows and
their keys, a long pasted paragraph, a long status message, the menus' border.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import tkinter as tk
from dataclasses import dataclass, field

import pytest

from tests.conftest import pump_until
from tests.x_input import (
    click_at,
    focus_window,
    handled,
    keyboard_focus,
    move_to,
    needs_xdotool,
    press,
    type_text,
)
from tkchat.generate.backend import LoadWatch
from tkchat.generate.scripted import ScriptedBackend

pytestmark = pytest.mark.gui


@dataclass
class SlowToLoad(ScriptedBackend):
    """The scripted backend, whose load waits for ``loaded`` to be set (loader thread)."""

    loaded: threading.Event = field(default_factory=threading.Event)

    def load(self, watch: LoadWatch | None = None) -> None:
        self.loaded.wait(30)


# -- Enter while the model loads ----------------------------------------------------------------


@needs_xdotool
def test_enter_while_the_model_loads_sends_the_question_once_it_is_ready(
    root: tk.Tk, make_app
) -> None:
    """Reported: Enter pressed while the model loaded was refused ("not ready yet")."""
    backend = SlowToLoad(rate=0, text="Ready now.")
    app = make_app(backend, wait=False)
    focus_window(root)
    app.input.focus_set()
    type_text(root, "asked while it loads")
    press(root, "Return")
    assert not app.flow.model_ready and app.transcript.entries == []
    assert app.input.draft == "asked while it loads"  # kept in the box meanwhile
    said = app.status.get()
    backend.loaded.set()
    pump_until(
        root, lambda: bool(app.flow.answering.finished), timeout=30, what="the question to be sent"
    )
    assert [entry.text for entry in app.transcript.entries] == [
        "asked while it loads",
        "Ready now.",
    ]
    assert app.input.draft == ""
    assert said == app.t("app.send_when_ready")  # what the status line said meanwhile


# -- Regenerate after a branch flipped ----------------------------------------------------------


def test_after_flipping_to_another_branch_regenerate_and_ctrl_r_agree(
    root: tk.Tk, make_app
) -> None:
    """Reported: after flipping a question to its branch 1/2, the Regenerate button (and its
    menu item) were greyed out while Ctrl+R worked. The button was wrong: the branch ends
    with an answer and the model is ready, so there is something to regenerate. (While the
    branch is still being put on screen both refuse: Ctrl+R says "not ready".)"""
    backend = ScriptedBackend(rate=0, text="First answer.")
    app = make_app(backend, history=True)
    pump_until(root, lambda: app.conversations.ready and not app.flow.showing_conversation)
    for question in ("one?", "two?"):
        assert app.flow.send(question)
        pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    question = app.transcript.entries[2]
    app.flow.edit(question)
    app.input.set_draft("two, again?")
    backend.text = "Second answer."
    assert app.flow.send()
    pump_until(root, lambda: app.flow.answering.answer is None, what="the edited question's answer")
    assert app.flow.show_version(app.transcript.entries[2], -1)  # ◀ on the question: 1/2
    pump_until(root, lambda: not app.flow.showing_conversation, what="the branch")
    root.update()
    assert [entry.text for entry in app.transcript.entries][-1] == "First answer."
    assert app.regenerate_button.instate(["!disabled"]), "the button is greyed out"
    assert app.menubar.enabled("regenerate")
    finished = len(app.flow.answering.finished)
    keyboard_focus(root, app.input)
    root.event_generate("<Control-r>", when="tail")  # and the shortcut does what it says
    pump_until(
        root, lambda: len(app.flow.answering.finished) > finished, what="the regenerated answer"
    )
    answer = app.transcript.entries[-1]
    assert len(answer.versions) == 2 and answer.text == "Second answer."


# -- the versions' arrows, and their keys -------------------------------------------------------

LONG = "\n\n".join(f"Paragraph {n} of the long version." for n in range(1, 41))


def arrow_box(app, view, arrow: str) -> tuple[int, int, int, int] | None:
    """Where the "◀" or "▶" of ``view``'s header is drawn (None: off screen)."""
    text = app.transcript.text
    line_end = text.index(f"{text.index(view.head_mark)} lineend")
    index = text.search(arrow, view.head_mark, line_end)
    assert index, f"no {arrow} in the header"
    return text.bbox(index)


def click_arrow(root: tk.Misc, app, view, arrow: str) -> tuple[int, int]:
    """A real click on the arrow; returns where the pointer is, in the text's pixels."""
    box = arrow_box(app, view, arrow)
    assert box is not None, f"{arrow} is not on screen"
    x, y = box[0] + box[2] // 2, box[1] + box[3] // 2
    text = app.transcript.text
    click_at(root, text.winfo_rootx() + x, text.winfo_rooty() + y)
    return x, y


def under(point: tuple[int, int], box: tuple[int, int, int, int] | None) -> bool:
    return (
        box is not None
        and box[0] <= point[0] < box[0] + box[2]
        and box[1] <= point[1] < (box[1] + box[3])
    )


def settled(root: tk.Misc, app) -> None:
    pump_until(root, lambda: not app.flow.showing_conversation, what="the branch")
    pump_until(root, lambda: not app.transcript.painter.busy, timeout=30, what="the painting")
    root.update_idletasks()  # the view scrolled to where the transcript put it


@needs_xdotool
def test_the_answers_arrow_stays_under_the_pointer_that_clicked_it(root: tk.Tk, make_app) -> None:
    """Reported: after a click on ◀ the view stayed pinned to the bottom, so the arrows moved
    away (a longer version pushed the header off the top)."""
    backend = ScriptedBackend(rate=0, text=LONG)
    app = make_app(backend)
    focus_window(root)
    assert app.flow.send("a question")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the long answer")
    backend.text = "A short version."
    assert app.flow.regenerate()
    pump_until(root, lambda: app.flow.answering.answer is None, what="the short answer")
    settled(root, app)
    answer = app.transcript.entries[-1]
    pointer = click_arrow(root, app, answer, "◀")
    settled(root, app)
    assert answer.shown == 0 and "Paragraph 40" in app.transcript.plain_text()
    assert under(pointer, arrow_box(app, answer, "◀")), (pointer, arrow_box(app, answer, "◀"))
    pointer = click_arrow(root, app, answer, "▶")
    settled(root, app)
    assert answer.shown == 1
    assert under(pointer, arrow_box(app, answer, "▶"))


@needs_xdotool
def test_a_questions_arrow_stays_under_the_pointer_as_its_branch_comes_back(
    root: tk.Tk, make_app
) -> None:
    backend = ScriptedBackend(rate=0, text=LONG)
    app = make_app(backend, history=True)
    pump_until(root, lambda: app.conversations.ready and not app.flow.showing_conversation)
    focus_window(root)
    for question in ("one?", "two?"):
        assert app.flow.send(question)
        pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    app.flow.edit(app.transcript.entries[2])
    app.input.set_draft("two, shorter?")
    backend.text = "Short."
    assert app.flow.send()
    pump_until(root, lambda: app.flow.answering.answer is None, what="the edited question's answer")
    settled(root, app)
    question = app.transcript.entries[2]
    pointer = click_arrow(root, app, question, "◀")
    settled(root, app)
    question = app.transcript.entries[2]  # drawn again, with its first branch
    assert question.shown == 0 and app.transcript.entries[-1].text == LONG
    assert under(pointer, arrow_box(app, question, "◀"))


MARKDOWN = "\n\n".join(f"Point {n}: **bold**, `code` and a [link](x)." for n in range(1, 31))


def header_y(app, view) -> int:
    info = app.transcript.text.dlineinfo(view.head_mark)
    assert info is not None, "the header is off screen"
    return int(info[1])


@needs_xdotool
@pytest.mark.parametrize("scaling", [1.0, 2.0])
def test_at_the_end_a_shorter_version_leaves_the_arrows_under_the_pointer(
    root: tk.Tk, make_app, scaled, scaling: float
) -> None:
    """Reported in the field (issue 37): the ◀ ▶ of the last answer moved 32-52 px a click.
    At the end of a long chat the view cannot go below the last line, so a shorter version
    pulled the header down, and the painting of a longer one (in slices after the click)
    pulled it up with the end. The header now stays at its height through both: blank space
    after the last line makes room, until the next question is sent."""
    scaled(scaling)
    backend = ScriptedBackend(rate=0, text=MARKDOWN)
    app = make_app(backend)
    focus_window(root)
    for question in ("one?", "two?", "three?"):
        assert app.flow.send(question)
        pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    backend.text = "A short version."
    assert app.flow.regenerate()
    pump_until(root, lambda: app.flow.answering.answer is None, what="the short answer")
    settled(root, app)
    answer = app.transcript.entries[-1]
    text = app.transcript.text
    assert text.yview()[0] > 0  # a chat longer than the window, read at its end
    for arrow, shown in (("◀", 0), ("▶", 1), ("◀", 0), ("▶", 1)):
        y = header_y(app, answer)
        pointer = click_arrow(root, app, answer, arrow)
        settled(root, app)
        assert answer.shown == shown
        assert header_y(app, answer) == y, f"{arrow} to version {shown + 1}: the header moved"
        assert under(pointer, arrow_box(app, answer, arrow))
    # The next question takes the reader to the end, with no blank space left below it.
    assert app.flow.send("four?")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the last answer")
    settled(root, app)
    last = text.bbox("end-1c linestart")
    assert last is not None, "the end is on screen"
    assert text.winfo_height() - (last[1] + last[3]) < 3 * last[3]


@needs_xdotool
def test_alt_left_and_alt_right_flip_the_latest_versions_and_f1_lists_them(
    root: tk.Tk, make_app
) -> None:
    backend = ScriptedBackend(rate=0, text="First version.")
    app = make_app(backend)
    focus_window(root)
    app.input.focus_set()
    press(root, "alt+Left")
    assert app.status.get() == app.t("app.no_versions")
    assert app.flow.send("a question")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    backend.text = "Second version."
    assert app.flow.regenerate()
    pump_until(root, lambda: app.flow.answering.answer is None, what="the second version")
    app.input.focus_set()
    app.input.insert("1.0", "half a question")
    answer = app.transcript.entries[-1]
    press(root, "alt+Left")
    pump_until(root, lambda: not app.flow.showing_conversation, what="the first version")
    assert answer.shown == 0 and answer.text == "First version."
    press(root, "alt+Right")
    pump_until(root, lambda: not app.flow.showing_conversation, what="the second version")
    assert answer.shown == 1 and answer.text == "Second version."
    assert app.input.draft == "half a question"  # the keys did not type, nor move the cursor
    assert app.input.index("insert") == app.input.index("end-1c")
    for lang, previous in (("en", "Previous version (◀)"), ("zh", "上一个版本（◀）")):
        if app.t.lang != lang:
            app.toggle_language()
        app.show_shortcuts()
        sheet = app.shortcut_sheet
        assert sheet is not None
        assert ("Alt+Left", previous) in sheet.rows and len(sheet.rows) == len(set(sheet.rows))
        sheet.destroy()
        root.update()


# -- a long pasted paragraph --------------------------------------------------------------------

SENTENCES = (
    "The model runs on a worker thread, and its tokens travel through a queue.",
    "Nothing the window draws waits for the model, so a click is handled between frames.",
    "Why would a long answer freeze the window at all?",
    'The reader asked, "what happens when a paragraph runs on and on?"',
    "Then the layout of one long line costs more with every insert at its end!",
)
PARAGRAPH = " ".join(SENTENCES[n % len(SENTENCES)] for n in range(70))  # 5,500 characters
CHINESE = "".join(f"第{n}句：模型在工作线程上运行，令牌经由队列传给窗口。" for n in range(120))


def shown_lines(app, view, until: str = "end-1c") -> list[str]:
    """The lines the transcript shows for a message, soft breaks included, up to ``until``
    (the next message's header)."""
    text = app.transcript.text
    body = text.get(f"{text.index(view.head_mark)} + 1 lines", until)
    return [line for line in body.split("\n") if line.strip()]


def ends_a_sentence(line: str) -> bool:
    return line.rstrip().endswith((".", "?", "!", '"', "。"))


@needs_xdotool
@pytest.mark.parametrize("paragraph", [PARAGRAPH, CHINESE], ids=["english", "chinese"])
def test_a_long_pasted_paragraph_is_never_broken_mid_sentence(
    root: tk.Tk, make_app, paragraph: str
) -> None:
    """Reported: a pasted paragraph showed a line end every 1,000 characters, in the middle
    of a sentence (the display-only breaks that keep Tk fast on one long line)."""
    app = make_app(ScriptedBackend(rate=0, text=paragraph))
    focus_window(root)
    root.clipboard_clear()
    root.clipboard_append(paragraph)
    app.input.focus_set()
    press(root, "ctrl+v")
    assert app.input.draft == paragraph
    press(root, "Return")
    pump_until(root, lambda: bool(app.flow.answering.finished), what="the answer")
    pump_until(root, lambda: not app.transcript.painter.busy, timeout=30, what="the painting")
    question, answer = app.transcript.entries
    body = answer.notes_mark  # (its figures line and notes follow)
    for lines in (shown_lines(app, question, answer.head_mark), shown_lines(app, answer, body)):
        assert len(lines) > 1  # broken (Tk must not lay out 5,500 characters as one line) ...
        # ... between two sentences (the answer's last line is where max_tokens cut it)
        assert all(ends_a_sentence(line) for line in lines[:-1]), [ln[-30:] for ln in lines]
    assert question.text == paragraph and paragraph.startswith(answer.text)  # on screen only
    if paragraph.isascii():  # (Tk's clipboard_get garbles a long CJK text: a Tk bug)
        app.transcript.act("copy", question)
        assert root.clipboard_get() == paragraph


# -- a long status message ----------------------------------------------------------------------


def pointer_on(root: tk.Misc, widget: tk.Misc) -> tuple[int, int]:
    """Move the pointer onto ``widget`` (a third of the way in); returns where it is."""
    root.update()
    x = widget.winfo_rootx() + widget.winfo_width() // 3
    y = widget.winfo_rooty() + widget.winfo_height() // 2
    move_to(root, x, y)
    return x, y


def tip_text(label) -> str | None:
    shown = label.tip.shown
    return None if shown is None or not shown.winfo_ismapped() else str(shown.cget("text"))


@needs_xdotool
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_long_status_message_can_be_read_whole(root: tk.Tk, make_app, lang: str) -> None:
    """Reported: a long status message was cut with "…" and there was no way to read the
    rest. Now the pointer resting on it, or a click, shows all of it."""
    app = make_app(ScriptedBackend(rate=0), language=lang)
    focus_window(root, "900x600+0+0")
    folder = "/home/someone/models/" + "a-folder-with-a-long-name/" * 6
    app.status.say("app.error", message=f"the model file {folder}model.gguf could not be read")
    root.update()
    status = app.status
    assert status.cget("text").endswith("…") and status.cut  # cut to the window's width
    move_to(root, 0, 500)
    spot = pointer_on(root, status)
    assert status.tip.timers.pending("tip")  # the pointer rests: the tip is on its way
    pump_until(root, lambda: tip_text(status) is not None, what="the tip")
    assert tip_text(status) == status.get()  # the whole message, in the window's language
    tip = status.tip.tip
    assert tip is not None and tip.winfo_rootx() + tip.winfo_width() <= root.winfo_screenwidth()
    move_to(root, 0, 500)  # the pointer leaves: the tip goes
    assert tip_text(status) is None and not status.tip.timers.pending("tip")
    # A click shows it at once: the pointer arrives with the click (one batch of events),
    # so the resting timer its arrival starts has not fired when the click is handled.
    click_at(root, *spot)
    shown = status.tip.shown
    assert shown is not None and str(shown.cget("text")) == status.get()
    status.say("app.stopped")  # a short message: nothing is cut, and the tip goes
    root.update()
    assert not status.cut and status.tip.shown is None
    move_to(root, 0, 500)


# -- the menus' border ----------------------------------------------------------------------------

needs_import = pytest.mark.skipif(shutil.which("import") is None, reason="needs imagemagick")


def rgb(widget: tk.Misc, colour: str) -> tuple[int, int, int]:
    red, green, blue = widget.winfo_rgb(colour)
    return red >> 8, green >> 8, blue >> 8


def distance(first: tuple[int, ...], second: tuple[int, ...]) -> int:
    return max(abs(a - b) for a, b in zip(first, second, strict=True))


@needs_import
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_menu_has_an_edge_that_is_not_its_background(
    root: tk.Tk, make_app, theme: str, tmp_path
) -> None:
    """Reported: the menus' border was the colour of their background, so a menu over the
    transcript had no edge. Read from the screen: the pixels of the menu's edge."""
    app = make_app(ScriptedBackend(rate=0), theme=theme)
    focus_window(root)
    menu = app.menubar.menus["menu.chat"]
    menu.post(root.winfo_rootx() + 300, root.winfo_rooty() + 160)
    try:
        pump_until(root, menu.winfo_ismapped, what="the menu")
        handled(root)  # its Expose handled: drawn
        root.winfo_pointerxy()  # a round trip: the X server has done the drawing Tk asked
        shot = tmp_path / "menu.png"
        subprocess.run(["import", "-window", str(menu.winfo_id()), str(shot)], check=True)
    finally:
        menu.unpost()
    image = tk.PhotoImage(master=root, file=str(shot))
    width, height = image.width(), image.height()
    background = rgb(root, str(menu.cget("background")))
    inside = tuple(image.get(width // 2, height - 2 * int(menu.cget("borderwidth")) - 1))
    assert distance(inside, background) <= 8  # (the capture is the menu itself)
    edges = [tuple(image.get(0, height // 2)), tuple(image.get(width // 2, 0))]
    edges += [tuple(image.get(width - 1, height // 2)), tuple(image.get(width // 2, height - 1))]
    assert all(distance(edge, background) >= 24 for edge in edges), (edges, background)
