"""The lesson panel: one lesson at a time, beside the chat, with a button that sets up its demo.

Main thread only, like every widget. It knows nothing about the chat window: the app hands it
three callables (set up a demo, read a live figure, translate a UI string), so the panel can be
built, tested and changed without ``tkchat.ui.window.chat_window``.

The lesson text is markdown rendered by a few lines of our own into a read-only ``tk.Text``:
headings in bold, code blocks and tables in a monospace font on a light background, ``code``
spans and ``**bold**`` inline. (Not tkhtmlview: lessons are short, trusted and static, and a
plain renderer keeps the panel cheap to redraw when the language changes.)
"""

from __future__ import annotations

import re
import tkinter as tk
import tkinter.font as tkfont
import unicodedata
from collections.abc import Callable, Iterator
from tkinter import ttk

from tkchat.course.claims import format_figure
from tkchat.course.lessons import Lesson, expect_text, load_lessons, plan_path, render_body
from tkchat.ui.look.fit import breakable, configure_breaks, insert_breakable
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.palette import Palette
from tkchat.ui.look.scaling import dp, dp_pad
from tkchat.ui.look.theme import follow_theme, set_role
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.teaching.lag_timeline import LagTimeline

REFRESH_MS = 500  # the live figure is read twice a second
BODY_SIZE = 11  # points, as the transcript's body; the window passes its text size
# The lag timeline's height, in lines of the lesson's text: its labels (larger than the text)
# and three decades of lag, without one label on another (7 left the plot a few pixels tall).
TIMELINE_LINES = 11
# ... but never more than this share of the panel's height: in projector mode at 1280×720,
# 11 lines of large text left the lesson itself a line and a half (seen by hand) ...
TIMELINE_SHARE = 0.4
# ... and never so tall that fewer lines of the lesson (or the plan) than this show; a strip
# shorter than TIMELINE_MIN_LINES is not drawn (its labels would overlap).
MIN_LESSON_LINES = 8
TIMELINE_MIN_LINES = 8
# The lines above the lesson (the demo, what to watch, the figures) and the timeline's labels
# grow with the text size up to this; the lesson itself grows on (a projector's large text).
NOTE_MAX_SIZE = 13
NOTE_FONTS = ("note", "note_bold")
# each font's size against the body's (headings larger, code as large as the text), and style
FONT_STEPS = {"body": 0, "bold": 0, "italic": 0, "h1": 4, "h2": 2, "mono": 0}
BOLD_FONTS = ("bold", "h1", "h2", "note_bold")
TABLE_TAG_PREFIX = "table-"
TABLE_GAP_PX = 14


_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*)$")
_LIST_RE = re.compile(r"^(\s*)([-*+]|\d{1,3}[.)])\s+(.*)$")
# *italic* may touch Chinese characters (as in CommonMark), but not ASCII words: a*b*c is text.
_INLINE_RE = re.compile(
    r"`([^`]+)`|\*\*(.+?)\*\*|(?<![A-Za-z0-9_*])\*([^*\s][^*]*?)\*(?![A-Za-z0-9_*])"
)
_TABLE_RULE_RE = re.compile(r"^:?-{2,}:?$")


class LessonPanel(ttk.Frame):
    """A lesson picker, the lesson text, its demo button and a live "expected · now" line.

    Main thread only. ``on_setup_demo(lesson)`` is called when the demo button is pressed;
    ``read_figure(metric)`` returns the live value of a ``tkchat bench`` key (or None) and is
    called every 500 ms; ``translate(key)`` gives the panel's fixed strings (see
    ``tkchat/i18n/lesson_panel.py``)."""

    def __init__(
        self,
        master: tk.Misc,
        *,
        language: str,
        on_setup_demo: Callable[[Lesson], None],
        read_figure: Callable[[str], float | None],
        translate: Callable[[str], str],
        body_size: int = BODY_SIZE,
        timeline: Callable[[tk.Misc], LagTimeline] | None = None,
    ) -> None:
        super().__init__(master, padding=dp_pad(master, 8, 6))
        self.language = language
        self.on_setup_demo = on_setup_demo
        self.read_figure = read_figure
        self.translate = translate
        self.lessons: list[Lesson] = []
        self.current: Lesson | None = None
        self.timers = AfterScheduler(self)
        self._load_error: str | None = None
        self.timeline: LagTimeline | None = None
        # Named fonts vanish when their Python object is collected: keep them on the panel.
        # Their sizes follow the window's text size (set_font_size), read from the class.
        base = tkfont.nametofont("TkDefaultFont", root=self).actual()
        mono = tkfont.nametofont("TkFixedFont", root=self).actual()
        self._fonts = {
            name: lasting_font(
                root=self, family=mono["family"] if name == "mono" else base["family"]
            )
            for name in (*FONT_STEPS, *NOTE_FONTS)
        }
        for name in BOLD_FONTS:
            self._fonts[name].configure(weight="bold")
        self._fonts["italic"].configure(slant="italic")
        self._build_header()
        self._body = self._build_body()
        # The last seconds of lag, as a picture: a freeze that the frozen window could not
        # draw while it lasted shows here as soon as it is over (at the bottom of the panel).
        self.trace_button: ttk.Button | None = None
        if timeline is not None:
            self._add_timeline(timeline)
        self.set_font_size(body_size)
        self._configure_tags()
        set_role(self.text, "surface")
        follow_theme(self, self._apply_palette)
        self.bind("<Configure>", self._on_resize, add="+")
        # the lesson's share is known once the text is laid out: the timeline takes the rest
        self.text.bind("<Configure>", lambda _e: self._size_timeline(), add="+")
        self._load(language, keep=None)
        self.timers.once("refresh", REFRESH_MS, self._refresh)

    def _build_header(self) -> None:
        """The lines above the lesson: the picker and the plan, the demo and its button, what
        to watch, the expected and live figure. They are the teacher's, so they keep a
        reading size when a projector makes the lesson large (the ``note`` fonts)."""
        top = self.top = ttk.Frame(self)
        self.pick_label = ttk.Label(top)
        self.picker = ttk.Combobox(top, state="readonly", width=40)
        self.picker.bind("<<ComboboxSelected>>", self._on_pick)
        # The class plan replaces the lesson text; picking a lesson brings the lesson back.
        self.plan_button = ttk.Button(top, command=self.show_plan)
        self.pick_label.pack(side="left", padx=(0, dp(self, 6)))
        self.plan_button.pack(side="right", padx=(dp(self, 6), 0))
        self.picker.pack(side="left", fill="x", expand=True)
        top.pack(side="top", fill="x")
        demo = ttk.Frame(self)
        self.demo_label = ttk.Label(demo, justify="left", font=self._fonts["note"])
        self.setup_button = ttk.Button(demo, command=self._on_setup)
        self.setup_button.pack(side="right")
        self.demo_label.pack(side="left", fill="x", expand=True)
        demo.pack(side="top", fill="x", pady=(dp(self, 6), 0))
        self.watch_label = ttk.Label(self, justify="left", wraplength=420, font=self._fonts["note"])
        self.watch_label.pack(side="top", fill="x", pady=(dp(self, 4), 0))
        self.figure_label = ttk.Label(
            self, justify="left", wraplength=420, font=self._fonts["note_bold"]
        )
        self.figure_label.pack(side="top", fill="x", pady=dp_pad(self, 2, 6))

    def _build_body(self) -> ttk.Frame:
        """The lesson (or the plan) itself, in a read-only text with its scroll bars."""
        body = ttk.Frame(self)
        self.text = tk.Text(
            body,
            wrap="word",
            state="disabled",
            width=58,
            height=30,
            borderwidth=0,
            padx=dp(self, 10),
            pady=dp(self, 8),
            highlightthickness=0,
            font=self._fonts["body"],
            spacing1=1,
            spacing3=3,
            cursor="arrow",
            undo=False,
        )
        yscroll = ttk.Scrollbar(body, orient="vertical", command=self.text.yview)
        xscroll = ttk.Scrollbar(body, orient="horizontal", command=self.text.xview)
        self.text.configure(yscrollcommand=yscroll.set, xscrollcommand=xscroll.set)
        yscroll.pack(side="right", fill="y")
        xscroll.pack(side="bottom", fill="x")
        self.text.pack(side="left", fill="both", expand=True)
        body.pack(side="top", fill="both", expand=True)
        return body

    # -- public --------------------------------------------------------------------------------

    def set_font_size(self, size: int) -> None:
        """The window's text size (View menu, Ctrl+plus/minus, projector mode): the lesson
        follows at once, without being laid out again; the lines above it and the timeline
        stop at :data:`NOTE_MAX_SIZE`."""
        for name, step in FONT_STEPS.items():
            self._fonts[name].configure(size=size + step)
        for name in NOTE_FONTS:
            self._fonts[name].configure(size=min(size, NOTE_MAX_SIZE))
        if self.timeline is not None:
            self.timeline.set_font_size(min(size, NOTE_MAX_SIZE))
            self._size_timeline()

    def _add_timeline(self, timeline: Callable[[tk.Misc], LagTimeline]) -> None:
        """The timeline at the bottom; above it, with the window's sampler running, *Save
        trace…* (the last 30 seconds as a Chrome trace, for Perfetto or chrome://tracing)."""
        self.timeline = timeline(self)
        self.timeline.pack(side="bottom", fill="x", pady=(dp(self, 6), 0), before=self._body)
        save = self.timeline.save_trace
        if save is not None:  # in the top row, beside Class plan: it takes no height of its own
            self.trace_button = ttk.Button(self.top, command=lambda: self._save_trace(save))
            self.trace_button.pack(side="right", before=self.plan_button)
            # where the file went: under the demo's line, only once there is something to say
            self.trace_said = ttk.Label(self, font=self._fonts["body"], anchor="w")
        self._size_timeline()
        self.timeline.start()

    def _save_trace(self, save: Callable[[], str]) -> None:
        said = save()
        if said:
            self.trace_said.configure(text=breakable(said))
            if not self.trace_said.winfo_manager():
                self.trace_said.pack(side="top", fill="x", after=self.figure_label)

    def _size_timeline(self) -> None:
        """The timeline's height: a strip under the lesson (TIMELINE_LINES, at most
        TIMELINE_SHARE of the panel), and never so tall that fewer than MIN_LESSON_LINES of
        the lesson show; too little room left for a readable strip, and it steps aside until
        there is (a projector's large text on a 1280×720 screen)."""
        timeline = self.timeline
        if timeline is None:
            return
        line = int(self._fonts["note"].metrics("linespace"))
        height = TIMELINE_LINES * line
        if self.winfo_height() > 1 and self.text.winfo_height() > 1:
            height = min(height, int(self.winfo_height() * TIMELINE_SHARE))
            shown = timeline.winfo_height() + dp(self, 6) if timeline.winfo_ismapped() else 0
            height = min(height, shown + self.text.winfo_height() - self._lesson_px() - dp(self, 6))
        if height < TIMELINE_MIN_LINES * line:
            if timeline.winfo_manager():
                timeline.pack_forget()
            return
        if int(timeline.cget("height")) != height:
            timeline.configure(width=1, height=height)  # width=1: it takes the panel's width
        if not timeline.winfo_manager():
            timeline.pack(side="bottom", fill="x", pady=(dp(self, 6), 0), before=self._body)

    def _lesson_px(self) -> int:
        """The text's height that shows MIN_LESSON_LINES lines of the lesson (its heading
        among them, with its larger font and space above)."""
        line = int(self._fonts["body"].metrics("linespace"))
        heading = int(self._fonts["h2"].metrics("linespace")) + dp(self, 16)
        return (MIN_LESSON_LINES - 1) * (line + 4) + heading + 2 * dp(self, 8) + 2

    def select(self, lesson_id: str) -> None:
        """Show the lesson with this id (e.g. ``"04-blocking"``)."""
        for index, lesson in enumerate(self.lessons):
            if lesson.id == lesson_id:
                self._show(index)
                return
        raise KeyError(f"no lesson {lesson_id!r} in {self.language!r}")

    def show_plan(self) -> None:
        """Show the class plan in the panel's language (lessons/plan.<lang>.md)."""
        try:
            text = plan_path(self.language).read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:
            text = self.translate("lesson.unavailable").format(error=exc)
        self._write_body(text)

    def set_language(self, lang: str) -> None:
        """Reload the lessons in ``lang``, keeping the same lesson on screen. The app changes
        what ``translate`` returns first; the panel's fixed strings are relabelled here."""
        self.language = lang
        self._load(lang, keep=self.current.id if self.current else None)

    def refresh_figure(self) -> None:
        """Read the live figure now and update the "expected · now" line."""
        lesson = self.current
        if lesson is None:
            self.figure_label.configure(text="")
            return
        value = self.read_figure(lesson.expect_metric)
        now = (
            self.translate("lesson.no_value")
            if value is None
            else format_figure(lesson.expect_metric, value, lesson.language)
        )
        now_label = self.translate("lesson.now").format(metric=lesson.expect_metric)
        self.figure_label.configure(
            text=breakable(
                f"{self._line('lesson.expected', expect_text(lesson))}  ·  "
                f"{self._line(now_label, now, translated=True)}"
            )
        )

    def destroy(self) -> None:
        self.timers.close()
        super().destroy()

    # -- loading and showing -------------------------------------------------------------------

    def _load(self, lang: str, keep: str | None) -> None:
        # Word wrap everywhere: Chinese gets zero-width break marks between its characters
        # (tkchat/ui/look/fit.py), so it breaks as in print, and never inside "125 token/s".
        self.text.configure(wrap="word")
        try:
            self.lessons = load_lessons(lang)
            self._load_error = None
        except (OSError, ValueError) as exc:
            self.lessons = []
            self._load_error = str(exc)
        self._relabel()
        self.picker.configure(values=[_choice(lesson) for lesson in self.lessons])
        if not self.lessons:
            self.current = None
            self.picker.set("")
            self.setup_button.state(["disabled"])
            self._write_body(self.translate("lesson.unavailable").format(error=self._load_error))
            self.demo_label.configure(text="")
            self.watch_label.configure(text="")
            self.figure_label.configure(text="")
            return
        self.setup_button.state(["!disabled"])
        ids = [lesson.id for lesson in self.lessons]
        self._show(ids.index(keep) if keep in ids else 0)

    def _relabel(self) -> None:
        self.pick_label.configure(text=self.translate("lesson.pick"))
        self.setup_button.configure(text=self.translate("lesson.setup"))
        self.plan_button.configure(text=self.translate("lesson.plan"))
        if self.trace_button is not None:
            self.trace_button.configure(text=self.translate("trace.save"))

    def _show(self, index: int) -> None:
        lesson = self.lessons[index]
        self.current = lesson
        self.picker.current(index)
        if lesson.rate is not None:
            demo = self.translate("lesson.demo_rate").format(
                mode=lesson.mode, backend=lesson.backend, rate=f"{lesson.rate:g}"
            )
        else:
            demo = self.translate("lesson.demo").format(mode=lesson.mode, backend=lesson.backend)
        self.demo_label.configure(text=breakable(demo))
        self.watch_label.configure(
            text=breakable(
                self._line("lesson.watch", self.translate("lesson.watch." + lesson.watch))
            )
        )
        self._write_body(render_body(lesson, strict=False))
        self.refresh_figure()

    def _line(self, label: str, text: str, *, translated: bool = False) -> str:
        """ "Label: text", with the language's own colon."""
        name = label if translated else self.translate(label)
        return self.translate("lesson.line").format(label=name, text=text)

    def _on_pick(self, _event: tk.Event | None = None) -> None:
        index = self.picker.current()
        if 0 <= index < len(self.lessons):
            self._show(index)

    def _on_setup(self) -> None:
        if self.current is not None:
            self.on_setup_demo(self.current)

    def _refresh(self) -> None:
        # Re-armed first: a failing read_figure is reported by Tk, and the line keeps living.
        self.timers.once("refresh", REFRESH_MS, self._refresh)
        self.refresh_figure()

    def _on_resize(self, event: tk.Event) -> None:
        # the panel's width less its padding (8 design pixels each side) and a little more
        wrap = max(200, int(event.width) - dp(self, 20))
        self.watch_label.configure(wraplength=wrap)
        self.figure_label.configure(wraplength=wrap)
        button = self.setup_button.winfo_reqwidth()
        self.demo_label.configure(wraplength=max(120, wrap - button - dp(self, 12)))
        if self.trace_button is not None:
            self.trace_said.configure(wraplength=max(120, wrap - button - dp(self, 12)))
        if self.timeline is not None:
            self._size_timeline()  # its share of the panel's new height

    def _set_table_tabs(self) -> None:
        """Tab stops for each table: every column as wide as its widest cell, in pixels."""
        measure = self._fonts["bold"].measure
        for tag in self.text.tag_names():
            if not str(tag).startswith(TABLE_TAG_PREFIX):
                continue
            ranges = self.text.tag_ranges(tag)
            if not ranges:
                self.text.tag_delete(tag)
                continue
            rows = [line.split("\t") for line in self.text.get(ranges[0], ranges[-1]).splitlines()]
            widths = [
                max((measure(row[c]) for row in rows if c < len(row)), default=0)
                for c in range(max(len(row) for row in rows))
            ]
            stops, x = [], 0
            for width in widths[:-1]:
                x += width + dp(self, TABLE_GAP_PX)
                stops.append(x)
            self.text.tag_configure(tag, tabs=tuple(stops) or "")
            self.text.tag_raise(tag)

    # -- markdown into the Text widget -----------------------------------------------------------

    def _configure_tags(self) -> None:
        f = self._fonts
        text = self.text

        def d(pixels: int) -> int:  # spacing and margins follow the screen's density
            return dp(self, pixels)

        text.tag_configure("h1", font=f["h1"], spacing1=d(10), spacing3=d(6))
        text.tag_configure("h2", font=f["h2"], spacing1=d(12), spacing3=d(4))
        text.tag_configure("bold", font=f["bold"])
        text.tag_configure("italic", font=f["italic"])
        text.tag_configure(
            "code",
            font=f["mono"],
            wrap="none",
            lmargin1=d(6),
            lmargin2=d(6),
            spacing1=0,
            spacing3=0,
        )
        text.tag_configure("code_inline", font=f["mono"])
        text.tag_configure(
            "table", font=f["body"], wrap="none", spacing1=d(1), spacing3=d(1), lmargin1=d(6)
        )
        text.tag_configure(
            "table_head",
            font=f["bold"],
            wrap="none",
            spacing1=d(1),
            spacing3=d(3),
            lmargin1=d(6),
        )
        text.tag_configure("item", lmargin1=d(6), lmargin2=d(22))
        text.tag_configure("quote", lmargin1=d(12), lmargin2=d(12))
        configure_breaks(text)

    def _apply_palette(self, palette: Palette) -> None:
        """The theme's colours: the page, headings, code and quotes."""
        self.text.configure(background=palette.surface, foreground=palette.foreground)
        self.text.tag_configure("h2", foreground=palette.heading)
        for tag in ("code", "code_inline", "table_head"):
            self.text.tag_configure(tag, background=palette.code_background)
        self.text.tag_configure("quote", foreground=palette.note)

    def _write_body(self, markdown_text: str) -> None:
        with writable(self.text):
            self.text.delete("1.0", "end")
            for chunk, tags in markdown_runs(markdown_text):
                code = "code" in tags or "code_inline" in tags
                if code:
                    self.text.insert("end", chunk, tags)
                else:
                    insert_breakable(self.text, breakable(chunk), tags)
        self._set_table_tabs()
        configure_breaks(self.text)  # above the table tags just raised
        self.text.yview_moveto(0.0)
        self.text.xview_moveto(0.0)


# -- a small markdown renderer: (text, tags) runs ------------------------------------------------

Run = tuple[str, tuple[str, ...]]


def markdown_runs(markdown_text: str) -> Iterator[Run]:  # noqa: C901 - a debt (tests/test_architecture.py)
    """The lesson markdown as (text, tags) runs for a ``tk.Text``. Pure function, any thread.

    Understands what lessons use: ``#`` headings, fenced code, pipe tables, ``-``/``1.`` lists,
    ``>`` quotes and paragraphs with ``code``, ``**bold**`` and ``*italic*`` spans. Soft line
    breaks inside a paragraph are joined (without a space between Chinese characters)."""
    lines = markdown_text.splitlines()
    i = 0
    tables = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        opening = _FENCE_RE.match(line)
        if opening:
            fence = opening.group(1)
            i += 1
            code: list[str] = []
            while i < len(lines) and not lines[i].strip().startswith(fence):
                code.append(lines[i])
                i += 1
            i += 1  # the closing fence
            yield "\n".join(code) + "\n", ("code",)
            yield "\n", ()
            continue
        heading = _HEADING_RE.match(line)
        if heading:
            tag = "h1" if len(heading.group(1)) == 1 else "h2"
            yield from _inline(heading.group(2).strip(), (tag,))
            yield "\n", (tag,)
            i += 1
            continue
        if line.lstrip().startswith("|"):
            rows: list[str] = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(lines[i])
                i += 1
            tables += 1
            yield from _table(rows, f"{TABLE_TAG_PREFIX}{tables}")
            yield "\n", ()
            continue
        listed = _LIST_RE.match(line)
        if listed:
            marker = "•" if listed.group(2) in "-*+" else listed.group(2)
            parts = [listed.group(3)]
            i += 1
            while (
                i < len(lines)
                and lines[i].startswith((" ", "\t"))
                and lines[i].strip()
                and not _LIST_RE.match(lines[i])
            ):
                parts.append(lines[i].strip())
                i += 1
            yield f"{marker} ", ("item",)
            yield from _inline(join_soft_lines(parts), ("item",))
            yield "\n", ("item",)
            if i >= len(lines) or not _LIST_RE.match(lines[i]):
                yield "\n", ()
            continue
        if line.lstrip().startswith(">"):
            parts = []
            while i < len(lines) and lines[i].lstrip().startswith(">"):
                parts.append(lines[i].lstrip()[1:].strip())
                i += 1
            yield from _inline(join_soft_lines(parts), ("quote",))
            yield "\n\n", ("quote",)
            continue
        parts = []
        while i < len(lines) and lines[i].strip() and not _starts_block(lines[i]):
            parts.append(lines[i].strip())
            i += 1
        yield from _inline(join_soft_lines(parts), ())
        yield "\n\n", ()


def _starts_block(line: str) -> bool:
    stripped = line.lstrip()
    return bool(
        _FENCE_RE.match(line)
        or _HEADING_RE.match(line)
        or _LIST_RE.match(line)
        or stripped.startswith(("|", ">"))
    )


def _inline(text: str, tags: tuple[str, ...]) -> Iterator[Run]:
    position = 0
    for match in _INLINE_RE.finditer(text):
        if match.start() > position:
            yield text[position : match.start()], tags
        code, bold, italic = match.groups()
        if code is not None:
            yield code, (*tags, "code_inline")
        elif bold is not None:
            yield bold, (*tags, "bold")
        else:
            yield italic, (*tags, "italic")
        position = match.end()
    if position < len(text):
        yield text[position:], tags


def _plain(cell: str) -> str:
    return re.sub(r"`([^`]*)`|\*\*(.+?)\*\*", lambda m: m.group(1) or m.group(2) or "", cell)


def _table(rows: list[str], name: str) -> Iterator[Run]:
    """One row per line, cells separated by tabs. ``name`` tags the whole table, so that the
    widget can set its tab stops from the measured cell widths (CJK text is not monospace)."""
    cells = [[_plain(c.strip()) for c in row.strip().strip("|").split("|")] for row in rows]
    cells = [row for row in cells if not all(_TABLE_RULE_RE.match(c) for c in row if c)]
    for number, row in enumerate(cells):
        yield "\t".join(row) + "\n", ("table_head" if number == 0 else "table", name)


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def join_soft_lines(parts: list[str]) -> str:
    """Join a paragraph's lines: with a space, except next to Chinese characters or
    full-width punctuation, where a space would show as a gap."""
    out = ""
    for part in parts:
        if not out:
            out = part
        elif _is_wide(out[-1]) or _is_wide(part[0]):
            out += part
        else:
            out += " " + part
    return out


def _choice(lesson: Lesson) -> str:
    return f"{lesson.number:02d} · {lesson.title}"
