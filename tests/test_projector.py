"""Projector mode and big text: nothing cut, nothing overlapping, on a 1280×720 screen.

Checked by widget geometry (tests/conftest.py ``layout_problems``), not by eye: every widget
inside its parent, every label and button as wide as its text, with the sidebar, the lesson
panel, the BROKEN banner and a streamed answer all on screen, in English and in Chinese.
"""

from __future__ import annotations

import re
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from tkinter import ttk

import pytest

from tests.conftest import layout_problems, pump_until
from tests.x_input import laid_out
from tkchat.generate.scripted import ScriptedBackend
from tkchat.ui.chats.history import auto_title
from tkchat.ui.look.fit import (
    BREAK_OPPORTUNITY,
    NO_BREAK,
    breakable,
    configure_breaks,
    insert_breakable,
    text_as_written,
)
from tkchat.ui.settings.text_size import BIG_FIGURE_STEP, PROJECTOR_SIZE
from tkchat.ui.teaching.lesson_panel import LessonPanel
from tkchat.ui.window.chat_window import ChatApp

pytestmark = pytest.mark.gui

CJK = re.compile(r"[\u4e00-\u9fff]")
SCREEN_720P = "1280x690+0+0"  # the client area of a 1280×720 screen, below the menu bar


def crowded_window(root: tk.Tk, make_app, lang: str):
    app = make_app(ScriptedBackend(rate=0), language=lang, history=True, show_lessons=True)
    root.geometry(SCREEN_720P)
    app.teaching.set_mode("blocking")  # the red BROKEN banner, as in a class
    app.teaching.set_mode("fixed")
    app.teaching.set_mode("no-coalesce")
    app.flow.send("A question with a long answer, to fill the transcript.")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    painted(root, app)
    return app


def painted(root: tk.Tk, app) -> None:
    """The answer is all on screen (its markdown painted) and the window laid out."""
    pump_until(root, lambda: not app.transcript.painter.busy, what="the painting")
    laid_out(root)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_projector_mode_at_720p_cuts_nothing(root: tk.Tk, make_app, lang: str) -> None:
    app = crowded_window(root, make_app, lang)
    app.text_size.set_projector(True)
    laid_out(root)
    assert app.fonts.size >= PROJECTOR_SIZE
    panel = app.teaching.lesson_panel
    assert panel is not None
    # the open lesson follows the text size live, and the heartbeat is larger still
    assert tkfont.Font(root=root, font=panel.text.cget("font")).actual()["size"] >= PROJECTOR_SIZE
    big = tkfont.Font(root=root, font=app.health.heartbeat.cget("font")).actual()["size"]
    assert big > app.fonts.size
    assert layout_problems(root) == []
    # as a class sees it: projector on, one lesson after another picked in the panel
    for lesson in ("11-backpressure", "02-two-metrics", "14-heartbeat-selftest"):
        panel.select(lesson)
        lesson_painted(root, panel)
        assert layout_problems(root) == [], lesson
    app.text_size.set_projector(False)
    laid_out(root)
    assert app.fonts.size < PROJECTOR_SIZE
    assert layout_problems(root) == []


def test_projector_mode_off_gives_back_the_chats_list_and_the_size_and_remembers_neither(
    root: tk.Tk, make_app
) -> None:
    app = make_app(ScriptedBackend(rate=0), history=True)
    pump_until(root, lambda: app.conversations.ready, what="the history")
    sidebar = str(app.conversations.sidebar)

    def panes() -> list[str]:
        return [str(pane) for pane in app.panes.panes()]

    def heartbeat_size() -> int:
        font = tkfont.Font(root=root, font=app.health.heartbeat.cget("font"))
        return int(font.actual()["size"])

    app.text_size.set(13)  # the user's own size, remembered
    normal_heartbeat = heartbeat_size()
    assert app.remembered.current.font_size == 13 and panes()[0] == sidebar
    app.text_size.set_projector(True)
    assert app.text_size.projector and sidebar not in panes()  # the class needs the room
    assert app.fonts.size == PROJECTOR_SIZE
    assert heartbeat_size() == PROJECTOR_SIZE + BIG_FIGURE_STEP
    app.text_size.set_projector(True)  # again: nothing happens (the size before is kept)
    app.text_size.set_projector(False)
    assert not app.text_size.projector and panes()[0] == sidebar
    assert app.fonts.size == 13 and heartbeat_size() == normal_heartbeat
    assert app.remembered.current.font_size == 13  # the projector's sizes were not kept


def test_the_layout_check_can_fail(root: tk.Tk) -> None:
    frame = tk.Frame(root, width=100, height=40)
    frame.pack_propagate(False)
    frame.pack()
    tk.Label(frame, text="a label far too long for its hundred pixels").pack()
    laid_out(root)
    assert any("text cut" in problem for problem in layout_problems(root))


def test_chinese_breaks_between_characters_but_never_inside_a_figure() -> None:
    text = breakable("模型每秒 125 token/s，窗口每 16 毫秒更新一次")
    assert f"125{NO_BREAK}token/s" in text and f"16{NO_BREAK}毫秒" in text
    assert f"模{BREAK_OPPORTUNITY}型" in text
    assert "token/s" in text and BREAK_OPPORTUNITY not in "".join(c for c in text if c.isascii())


def test_no_chinese_line_starts_with_a_closing_mark_or_ends_with_an_opening_one() -> None:
    """Seen in lesson 04 at 1280×720: a line began with "，"."""
    text = breakable("回答照常流到屏幕上，足足流上（整整）六秒。然后「停」")
    for mark in "，）。":
        assert f"{BREAK_OPPORTUNITY}{mark}" not in text, mark
    for mark in "（「":
        assert f"{mark}{BREAK_OPPORTUNITY}" not in text, mark
    assert f"，{BREAK_OPPORTUNITY}足" in text and f"上{BREAK_OPPORTUNITY}（" in text


# -- every screen: 192 dpi, +4 text steps, 1280×720; light and dark; English and Chinese ------

SCREENS = {
    # (tk scaling in pixels per point, window geometry, text steps above the default)
    "1280x720": (None, SCREEN_720P, 0),
    "+4 steps": (None, SCREEN_720P, 4),
    "192 dpi": (192 / 72, "2560x1380+0+0", 0),  # a 2560×1440 screen at 200 %
    "192 dpi, +4 steps": (192 / 72, "2560x1380+0+0", 4),
}


def fits_its_column(tree: tk.Misc, font: tkfont.Font) -> list[str]:
    """Rows of a Treeview whose shown title is wider than its column (it should have been
    cut with "…")."""
    width = tree.column("#0", "width")
    return [
        tree.item(iid, "text")
        for iid in tree.get_children()
        if any(font.measure(line) > width for line in tree.item(iid, "text").split("\n"))
    ]


def in_language(root: tk.Tk, app, lang: str) -> None:
    """Switch the window to ``lang`` (the 中文/English button) and wait until all of it
    says so: the transcript relabels in slices, the health bar at its next refresh."""
    if app.t.lang != lang:
        app.toggle_language()
    pump_until(
        root,
        lambda: (
            not app.transcript.scheduler.pending("relabel")
            and bool(CJK.search(str(app.health.lag.cget("text")))) == (lang == "zh")
        ),
        what=f"the window in {lang}",
    )


@pytest.mark.parametrize("screen", list(SCREENS))
def test_every_screen_cuts_nothing(root: tk.Tk, make_app, screen: str, scaled) -> None:
    """Each screen in English and in Chinese, each in the light theme and the dark one: one
    window for the four, the language and the theme switched live (the button and View ▸
    Dark theme). (The window started in Chinese: test_teach_projector_at_720p_...)"""
    scaling, geometry, steps = SCREENS[screen]
    if scaling is not None:  # as an X server started with -dpi 192 reports it
        scaled(scaling)
    app = make_app(
        ScriptedBackend(rate=0), language="en", history=True, show_lessons=True, theme="light"
    )
    root.geometry(geometry)
    for mode in ("blocking", "no-coalesce"):  # the BROKEN banner, as in a class
        app.teaching.set_mode(mode)
    long_title = "A question with a long answer, to fill the transcript and the sidebar's row."
    pump_until(root, lambda: app.conversations.ready and not app.flow.showing_conversation)
    app.flow.new_chat()  # not the latest saved chat, which earlier tests may have left
    assert app.flow.send(long_title)
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    sidebar = app.conversations.sidebar
    title = auto_title(long_title)  # the conversation's title: its first question

    def first_row() -> str:
        rows = sidebar.tree.get_children()
        return str(sidebar.tree.item(rows[0], "text")) if rows else ""

    pump_until(root, lambda: shows(first_row(), title), what="the chat in the sidebar")
    for _ in range(steps):
        app.text_size.change(+1)
    for lang, theme in (("en", "light"), ("en", "dark"), ("zh", "dark"), ("zh", "light")):
        in_language(root, app, lang)
        app.appearance.set_theme(theme, save=False)
        app.appearance.set_chat_only(False, save=False)
        painted(root, app)
        assert layout_problems(root) == [], (lang, theme)
        if scaling is not None:
            # The window's own sizes followed the density: the sidebar and the paddings are
            # twice as wide as at 96 dpi, the scrollbars too.
            assert sidebar.tree.column("when", "width") >= 2 * 60
            assert app.transcript.text.cget("padx") >= 2 * 12
            scrollbar = next(
                w for w in app.transcript.winfo_children() if w.winfo_class() == "TScrollbar"
            )
            assert scrollbar.winfo_width() >= 2 * 12
        # The sidebar's title is cut with "…" to its column, never cut silently by the list.
        font = tkfont.nametofont("TkDefaultFont", root=root)
        assert fits_its_column(sidebar.tree, font) == [], (lang, theme)
        columns = sidebar.tree.column("#0", "width") + sidebar.tree.column("when", "width")
        assert columns <= sidebar.tree.winfo_width() + 1  # the date is not cut off at the edge
        assert shows(first_row(), title)
        # The same with the teaching controls folded into one line.
        app.appearance.set_chat_only(True, save=False)
        laid_out(root)
        assert app.health.compact.winfo_ismapped() and app.teaching.warning.winfo_ismapped()
        assert layout_problems(root) == [], (lang, theme)


def shows(shown: str, title: str) -> bool:
    """A row shows ``title`` whole, or its start with "…" (cut to its column)."""
    return shown == title or (
        len(shown) > 1 and shown.endswith("…") and title.startswith(shown[:-1])
    )


def test_the_overlap_check_can_fail(root: tk.Tk) -> None:
    frame = tk.Frame(root, width=200, height=60)
    frame.pack()
    tk.Label(frame, text="one").grid(row=0, column=0)
    tk.Label(frame, text="two").grid(row=0, column=0)  # the same cell: on top of each other
    laid_out(root)
    assert any("overlap" in problem for problem in layout_problems(root))


def display_lines(text: tk.Text) -> list[str]:
    """What each display line of ``text`` shows, as laid out (break spaces left out)."""
    lines, index = [], "1.0"
    while text.compare(index, "<", "end-1c"):
        following = text.index(f"{index} +1 display lines")
        end = following if text.compare(following, ">", index) else "end-1c"
        lines.append(text_as_written(text, index, end).strip())
        if end == "end-1c":
            break
        index = following
    return lines


def test_chinese_lines_are_filled_and_figures_stay_whole(root: tk.Tk) -> None:
    """Laid out, not only marked: Tk 8.6 wraps only at plain spaces, so a line used to end at
    the last space before a Chinese run however much room was left ("点" alone on its line,
    seen in lesson 01 in Chinese)."""
    text = tk.Text(root, width=20, height=10, wrap="word", font=("TkDefaultFont", 12))
    text.pack()
    configure_breaks(text)
    source = "点 准备演示，把问题发出去，看窗口是否冻结了整整六秒钟。模型每秒 125 token/s。"
    insert_breakable(text, breakable(source), ())
    laid_out(root)
    lines = display_lines(text)
    assert len(lines[0]) > 3, lines  # "点" is not left alone: the line is filled
    assert "".join(lines).replace(" ", "").replace(NO_BREAK, "") == source.replace(" ", "")
    assert any("125 token/s" in line.replace(NO_BREAK, " ") for line in lines), lines
    assert text_as_written(text) == breakable(source).replace(BREAK_OPPORTUNITY, "")


@pytest.mark.parametrize("screen", ["192 dpi", "+4 steps"])
def test_list_rows_are_as_tall_as_their_text(root: tk.Tk, make_app, screen: str, scaled) -> None:
    """Seen by hand at 192 dpi: the sidebar's rows were 20 pixels high for 32-pixel text, so
    each title was cut in half by the next one (the row height set before the window's
    theme was put in use was lost with it), and the model picker's rows too."""
    scaling, geometry, steps = SCREENS[screen]
    if scaling is not None:
        scaled(scaling)
    app = make_app(ScriptedBackend(rate=0), history=True)
    root.geometry(geometry)
    pump_until(root, lambda: app.conversations.ready and not app.flow.showing_conversation)
    assert app.flow.send("a first chat")
    pump_until(root, lambda: app.flow.answering.answer is None, what="the answer")
    for _ in range(steps):
        app.text_size.change(+1)
    laid_out(root)
    line = tkfont.nametofont("TkDefaultFont", root=root).metrics("linespace")
    tree = app.conversations.sidebar.tree
    row = tree.get_children()[0]
    assert tree.bbox(row)[3] >= line + 4
    # A dialog's list (the model picker, the catalogue) uses the plain Treeview style.
    dialog = tk.Toplevel(root)
    other = ttk.Treeview(dialog, show="tree")
    other.insert("", "end", iid="one", text="SmolLM2-135M-Instruct.Q4_1.gguf")
    other.pack()
    laid_out(root)
    assert other.bbox("one")[3] >= line + 4
    # The search results hold two lines a row.
    results = ttk.Style(root).lookup("SidebarResults.Treeview", "rowheight")
    assert int(results) >= 2 * line + 4


def lesson_painted(root: tk.Tk, panel: LessonPanel) -> None:
    """Until the lesson panel's text is prepared (off the Tk thread) and painted (in slices),
    then laid out: on a busy machine one line of it was on screen when a test looked."""
    pump_until(root, lambda: not panel.rendering, what="the lesson painted")
    laid_out(root)


def visible_lines(text: tk.Text) -> int:
    """Lines of text wholly inside ``text``'s window (blank ones not counted)."""
    text.update_idletasks()
    height, count, index = text.winfo_height(), 0, text.index("@0,0")
    while (info := text.dlineinfo(index)) is not None and info[1] + info[3] <= height:
        count += bool(text.get(index, f"{index} display lineend").strip())
        following = text.index(f"{index} +1 display lines")
        if text.compare(following, "==", index):
            break
        index = following
    return count


# the client area of a 1280×720 screen, and the size the window opens at on one (92 %)
SIZES_720P = {"full": SCREEN_720P, "as opened": "1140x662+0+0"}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_teach_projector_at_720p_shows_the_lesson_the_health_bar_and_the_send_row(
    root: tk.Tk, teach_projector_window: Callable[[str], ChatApp], lang: str
) -> None:
    """As the class plan starts a class: the lesson panel open beside the chat, large text.
    Seen by hand at 1280×720: a line and a half of the lesson under the lag timeline, then
    one line; the health bar's lag cut at the right edge; later, with eight lines kept for
    the lesson, no lag timeline at all, which lessons 03, 04 and 18 ask the class to watch.
    Now: at least five lines of the lesson and of the plan, the timeline beside them, nothing
    cut. At the size the window opens at on such a screen, then made as large as the
    screen."""
    app = teach_projector_window(lang)
    pump_until(root, lambda: app.flow.model_ready, what="the scripted model")
    bar = app.health
    pump_until(
        root,
        lambda: all(label.cget("text") for label in (bar.heartbeat, bar.lag, bar.rates)),
        what="the health bar's figures (written every 250 ms)",
    )
    panel = app.teaching.lesson_panel
    assert panel is not None, "--teach --projector opens the lessons"
    for size in ("as opened", "full"):
        root.geometry(SIZES_720P[size])
        laid_out(root)
        assert panel.winfo_ismapped(), size
        assert app.text_size.projector and app.fonts.size >= PROJECTOR_SIZE
        timeline = panel.timeline
        assert timeline is not None
        # 04 and 19 ask the class a question (its choices under it), then show the answer
        shown = [
            ("01-streaming-is-half", False),
            ("04-blocking", False),
            ("04-blocking", True),
            ("18-who-held-the-loop", False),
            ("12-cancellation", False),
            ("11-backpressure", True),  # the longest expected line
            ("19-asyncio-meets-tk", False),
            ("19-asyncio-meets-tk", True),
        ]
        for lesson, answered in shown:
            panel.select(lesson)
            if answered:
                panel.prediction.show_button.invoke()
                assert not panel.prediction.waiting
            lesson_painted(root, panel)
            assert visible_lines(panel.text) >= 5, (size, lesson, visible_lines(panel.text))
            assert timeline.winfo_ismapped(), (size, lesson)
            assert layout_problems(root) == [], (size, lesson)
        panel.show_plan()
        lesson_painted(root, panel)
        assert visible_lines(panel.text) >= 5, size
        assert timeline.winfo_ismapped(), size
        assert timeline.winfo_height() <= 0.45 * panel.winfo_height(), size
        for label in (bar.heartbeat, bar.lag, bar.rates):
            assert label.cget("text")
            right = label.winfo_rootx() + label.winfo_width()
            assert label.winfo_reqwidth() <= label.winfo_width() + 1, (size, label.cget("text"))
            assert right <= bar.winfo_rootx() + bar.winfo_width() + 1, (size, label.cget("text"))
        window_right = root.winfo_rootx() + root.winfo_width()
        window_bottom = root.winfo_rooty() + root.winfo_height()
        for part in (app.input, app.send_button, app.stop_button):
            assert part.winfo_ismapped()
            assert part.winfo_rootx() + part.winfo_width() <= window_right + 1, (size, part)
            assert part.winfo_rooty() + part.winfo_height() <= window_bottom + 1, (size, part)
        assert layout_problems(root) == [], size


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lesson_list_opens_wide_enough_for_whole_titles(
    root: tk.Tk, teach_projector_window: Callable[[str], ChatApp], lang: str
) -> None:
    """At 1280×720 in projector mode the lesson picker's box is narrow, and Tk drew its list
    as narrow: every title cut to about eight characters. Opened (as a click does), the list
    is as wide as its longest title, and stays on the screen."""
    app = teach_projector_window(lang)
    root.geometry(SIZES_720P["as opened"])
    laid_out(root)
    panel = app.teaching.lesson_panel
    assert panel is not None
    picker = panel.picker
    popdown = str(picker.tk.eval(f"ttk::combobox::PopdownWindow {picker}"))
    font = picker.tk.call(f"{popdown}.f.l", "cget", "-font")
    titles = [str(title) for title in picker.cget("values")]
    widest = max(int(picker.tk.call("font", "measure", font, title)) for title in titles)
    assert widest > picker.winfo_width()  # the case: the box alone would cut them
    picker.tk.call("ttk::combobox::Post", picker)
    try:
        laid_out(root)
        assert int(picker.tk.call("winfo", "width", popdown)) >= widest
        right = int(picker.tk.call("winfo", "rootx", popdown)) + int(
            picker.tk.call("winfo", "width", popdown)
        )
        assert right <= picker.winfo_screenwidth()
    finally:
        picker.tk.call("ttk::combobox::Unpost", picker)


# Of a lesson's title, after its number, what the closed picker shows at least: a Chinese
# character says about as much as a short English word ("Streamin", "流式只决定文字").
MIN_TITLE_CHARS = {"en": 8, "zh": 6}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_closed_lesson_picker_shows_enough_of_each_title_to_tell_them_apart(
    root: tk.Tk, teach_projector_window: Callable[[str], ChatApp], lang: str
) -> None:
    """Walked at 1280×720 in projector mode: the closed picker read "01 · Stre" beside its
    label and the buttons. At both sizes its text area (the box less its arrow, as Tk lays it
    out) holds the number and at least MIN_TITLE_CHARS of every title in the box's font, and
    no two lessons look alike there."""
    app = teach_projector_window(lang)
    panel = app.teaching.lesson_panel
    assert panel is not None
    picker = panel.picker
    font = str(picker.cget("font") or "TkTextFont")
    for size in ("as opened", "full"):
        root.geometry(SIZES_720P[size])
        laid_out(root)
        middle = picker.winfo_height() // 2
        text_area = [
            x for x in range(picker.winfo_width()) if "textarea" in picker.identify(x, middle)
        ]
        assert text_area, size
        room = max(text_area) - min(text_area)

        def shown(choice: str, room: int = room) -> str:
            fits = [
                n
                for n in range(len(choice) + 1)
                if int(picker.tk.call("font", "measure", font, choice[:n])) <= room
            ]
            return choice[: max(fits)]

        choices = [str(choice) for choice in picker.cget("values")]
        seen = [shown(choice) for choice in choices]
        number = len("01 · ")
        assert all(len(text) - number >= MIN_TITLE_CHARS[lang] for text in seen), (size, seen)
        assert len(set(seen)) == len(choices), (size, seen)


def bar_rows(bar: tk.Misc) -> list[list[str]]:
    """The health bar's rows as laid out (grid rows, each left to right): the texts of the
    widgets on it, a button's none (and an empty label, Ping's answer before any, left out)."""
    rows: dict[int, list[tuple[int, str]]] = {}
    for widget in bar.grid_slaves():
        info = widget.grid_info()
        text = "" if widget.winfo_class() == "TButton" else str(widget.cget("text")).strip()
        rows.setdefault(int(info["row"]), []).append((int(info["column"]), text))
    return [[text for _column, text in sorted(rows[row]) if text] for row in sorted(rows)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_health_bar_row_begins_or_ends_with_a_separator(
    root: tk.Tk, teach_projector_window: Callable[[str], ChatApp], lang: str
) -> None:
    """At projector size the bar's figures wrap onto more rows as the window narrows: a
    "│" stays between two figures on the same row (seen by hand: one began the lag's row
    and the rates' row when they wrapped under the heartbeat)."""
    from tkchat.ui.health import SEPARATOR

    app = teach_projector_window(lang)
    app.teaching.toggle_lessons()  # the bar as wide as the window: two rows at the widest
    bar = app.health
    pump_until(
        root,
        lambda: all(label.cget("text") for label in (bar.heartbeat, bar.lag, bar.rates)),
        what="the health bar's figures (written every 250 ms)",
    )
    laid_out_as: set[int] = set()
    for width in range(1900, 399, -100):
        root.geometry(f"{width}x690+0+0")
        laid_out(root)
        rows = bar_rows(bar)
        laid_out_as.add(len(rows))
        for row in filter(None, rows):  # (Ping's row has no text before a ping)
            assert not row[0].startswith(SEPARATOR), (width, rows)
            assert not row[-1].endswith(SEPARATOR), (width, rows)
        shared = rows[0][:3]  # the heartbeat and the lag on one row: the separator between
        assert (SEPARATOR in shared) == (bar.lag.grid_info()["row"] == 0), (width, rows)
    assert laid_out_as == {2, 3, 4}, laid_out_as  # every layout the bar has was seen


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_demos_ready_line_shows_its_keys_whole_at_720p(
    root: tk.Tk, teach_projector_window: Callable[[str], ChatApp], lang: str
) -> None:
    """Walked by hand at 1280×720: the line a demo leaves once its backend has loaded read
    "Demo ready: mode blocking. Pr…" and "Demo ready (blocking): Enter se…", Enter and F9
    cut off (the mode came first). At both sizes the line is whole, and names its keys."""
    from tkchat.course.lessons import load_lessons
    from tkchat.i18n import STRINGS

    app = teach_projector_window(lang)
    pump_until(root, lambda: app.flow.model_ready, what="the scripted model")
    lessons = {lesson.id: lesson for lesson in load_lessons(lang)}
    for size in ("as opened", "full"):
        root.geometry(SIZES_720P[size])
        # 01 has no pipeline view; 11's opens one (behind the chat), and its line names F9
        for lesson, key in (
            ("01-streaming-is-half", "app.demo_ready"),
            ("11-backpressure", "app.demo_ready_stages"),
        ):
            app.demos.setup(lessons[lesson])
            line = STRINGS[lang][key]
            # the demo's backend loads ("Ready — scripted …"), then the demo's line is back
            pump_until(
                root, lambda line=line: app.flow.model_ready and app.status.get() == line, what=key
            )
            laid_out(root)
            assert not app.status.cut, (size, lesson, app.status.cget("text"))
            assert ("回车" if lang == "zh" else "Enter") in line
            assert ("F9" in line) == (key == "app.demo_ready_stages")
