"""The lesson panel's text: a lesson (or the class plan), rendered by the app's one markdown
renderer — :mod:`tkchat.render` (markdown to safe HTML, block by block) with the transcript's
painter and looks (:mod:`tkchat.ui.transcript.markdown_view`, :mod:`.markdown_looks`) — the
way the transcript paints a saved answer: in slices, so no callback is long.

Two threads share the work:

- a worker prepares the markdown (:meth:`LessonText.show`): a lesson's live code quotes are cut
  out of the source files with ``ast`` and its figures filled in
  (:func:`~tkchat.course.lessons.render_body`: tens of milliseconds, more on a busy machine),
  and the lines its paragraphs are wrapped at are joined
  (:func:`~tkchat.render.reflow.join_wrapped_lines`: the chat's renderer keeps a line break);
- the main thread looks for it every ``POLL_MS``, writes it plain — elided: it shows nothing
  and costs no layout — and hands it to the :class:`~tkchat.ui.transcript.markdown_view.
  MarkdownPainter`, which puts each block's rendered form in its place within a few
  milliseconds a callback (tkhtmlview off-screen for prose, Pygments for code), from the top.

The looks are the transcript's, as a page (``MarkdownLooks(page=True)``: tables as aligned
columns, list items hung under their text, Chinese that breaks between characters as in print
but never inside "125 token/s"), with the panel's own headings (bold, in the theme's heading
colour, a small gap under them) and unwrapped code. A code block's "Copy code" link copies
the code as the lesson quotes it. Main thread only, but for the worker's ``make``.
"""

from __future__ import annotations

import logging
import threading
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from tkinter import ttk

from tkchat.render.reflow import join_wrapped_lines
from tkchat.render.soft_breaks import soft_break
from tkchat.threads import own_thread
from tkchat.ui.look.fit import configure_breaks
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.palette import Palette
from tkchat.ui.look.scaling import dp
from tkchat.ui.look.theme import follow_theme, set_role
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.markdown_looks import (
    CODE_BLOCK_TAG,
    HEADING_GAP_TAG,
    HEADING_TAGS,
    MarkdownLooks,
)
from tkchat.ui.transcript.markdown_view import COPY_CODE_TAG, MarkdownPainter

log = logging.getLogger(__name__)

POLL_MS = 10  # how often the main thread looks whether the worker has the markdown ready
# each font's size against the body's (headings larger), and which are bold
FONT_STEPS = {"body": 0, "h1": 4, "h2": 2}
LINK_STEP = -2  # the "Copy code" links: smaller, as in the transcript
HEADING_GAP_PX = 4  # the blank line under a heading: a heading belongs to what follows it
# A lesson's longest paragraph, Chinese break spaces and all, is some 1,000 characters: the
# chat's bound on a displayed line (limits.DISPLAY_LINE_CHARS, against answers of megabytes in
# one line) would end a line mid-paragraph. A lesson is trusted text: its bound is higher.
DISPLAY_LIMIT = 8_000
PLAIN_TAG = "lesson-plain"  # the markdown written plain, until its blocks are painted
START_MARK, END_MARK = "lesson_start", "lesson_end"  # (no "-": used in index arithmetic)


class LessonText(ttk.Frame):
    """A read-only text with its scroll bars, showing one lesson's markdown at a time.

    Main thread only. ``copy_code_label()`` is the text of each code block's copy link (in
    the panel's language)."""

    def __init__(
        self, master: tk.Misc, scheduler: AfterScheduler, copy_code_label: Callable[[], str]
    ) -> None:
        super().__init__(master)
        self.scheduler = scheduler
        # Named fonts vanish when their Python object is collected: keep them here.
        family = tkfont.nametofont("TkDefaultFont", root=self).actual()["family"]
        self.fonts = {name: lasting_font(root=self, family=family) for name in FONT_STEPS}
        self.fonts["link"] = lasting_font(root=self, family=family)
        self.fonts["gap"] = lasting_font(root=self, family=family, size=-dp(self, HEADING_GAP_PX))
        for name in ("h1", "h2"):
            self.fonts[name].configure(weight="bold")
        self.text = self._build_text()
        self.painter = MarkdownPainter(
            self.text,
            scheduler,
            copy_code_label=copy_code_label,
            looks=MarkdownLooks(self.text, scheduler, page=True),
            follow_end=False,  # a lesson is read from its top, even while not on screen
            display_limit=DISPLAY_LIMIT,
        )
        self._preparing: tuple[threading.Thread, list[str | Exception]] | None = None
        self._failed: Callable[[Exception], str] = str
        self._configure_tags()
        set_role(self.text, "surface")
        follow_theme(self, self._apply_palette)
        self.text.bind("<Button-1>", self._on_click)
        self.text.tag_bind(COPY_CODE_TAG, "<Enter>", lambda _e: self._pointer("hand2"))
        self.text.tag_bind(COPY_CODE_TAG, "<Leave>", lambda _e: self._pointer("arrow"))

    def _build_text(self) -> tk.Text:
        text = tk.Text(
            self,
            wrap="word",
            state="disabled",
            width=58,
            height=30,
            borderwidth=0,
            padx=dp(self, 10),
            pady=dp(self, 8),
            highlightthickness=0,
            font=self.fonts["body"],
            spacing1=1,
            spacing3=3,
            cursor="arrow",
            undo=False,
        )
        yscroll = ttk.Scrollbar(self, orient="vertical", command=text.yview)
        xscroll = ttk.Scrollbar(self, orient="horizontal", command=text.xview)
        text.configure(yscrollcommand=yscroll.set, xscrollcommand=xscroll.set)
        yscroll.pack(side="right", fill="y")
        xscroll.pack(side="bottom", fill="x")
        text.pack(side="left", fill="both", expand=True)
        return text

    # -- public --------------------------------------------------------------------------------

    def show(self, make: Callable[[], str], *, failed: Callable[[Exception], str]) -> None:
        """Show the markdown ``make()`` returns. ``make`` runs on a worker thread (it may read
        files; it must not touch Tk); if it raises, ``failed(exception)`` says so instead (on
        the main thread). The text shown until then stays; a later call wins."""
        box: list[str | Exception] = []

        def prepare() -> None:  # the worker thread
            try:
                box.append(join_wrapped_lines(make()))
            except Exception as exc:  # the panel must show something, never die
                log.exception("a lesson could not be prepared")
                box.append(exc)

        thread = own_thread(prepare, name="tkchat-lesson-text")
        self._preparing, self._failed = (thread, box), failed
        thread.start()
        self.scheduler.once("lesson-text", POLL_MS, self._poll)

    @property
    def rendering(self) -> bool:
        """Is the text still being prepared, or painted?"""
        return self._preparing is not None or self.painter.busy

    def set_font_size(self, size: int) -> None:
        """The window's text size: the lesson follows at once, without being laid out again."""
        for name, step in FONT_STEPS.items():
            self.fonts[name].configure(size=size + step)
        self.fonts["link"].configure(size=max(6, size + LINK_STEP))
        self.painter.set_body_size(size)

    def lines_px(self, lines: int) -> int:
        """The text's height that shows ``lines`` lines of a lesson (its heading among them,
        with its larger font, the space above it and the small gap under it)."""
        line = int(self.fonts["body"].metrics("linespace"))
        heading = int(self.fonts["h2"].metrics("linespace")) + dp(self, 16)
        gap = int(self.fonts["gap"].metrics("linespace"))
        return (lines - 1) * (line + 4) + heading + gap + 2 * dp(self, 8) + 2

    def destroy(self) -> None:
        self.painter.close()
        super().destroy()

    # -- the markdown, written plain then painted ---------------------------------------------

    def _poll(self) -> None:
        """Main thread: once the worker is done, write what it prepared."""
        if self._preparing is None:
            return
        thread, box = self._preparing
        if thread.is_alive():
            self.scheduler.once("lesson-text", POLL_MS, self._poll)
            return
        self._preparing = None
        result = box[0] if box else RuntimeError("the lesson's worker ended without a text")
        self._write(result if isinstance(result, str) else self._failed(result))

    def _write(self, markdown: str) -> None:
        """Replace the text with ``markdown``, plain and not shown, and have its blocks
        painted in slices (the transcript's :meth:`paint` of a saved answer, in a page of
        its own)."""
        self.painter.cancel()
        self.painter.forget_all_codes()
        with writable(self.text):
            self.text.delete("1.0", "end")
            self.text.mark_set(START_MARK, "1.0")
            self.text.mark_gravity(START_MARK, "left")
            self.text.mark_set(END_MARK, "1.0")
            self.text.mark_gravity(END_MARK, "right")  # text written at it pushes it along
            shown, _column = soft_break(markdown, 0, DISPLAY_LIMIT)  # as the painter reads it
            self.text.insert(END_MARK, shown, (PLAIN_TAG,))
        self.text.yview_moveto(0.0)
        self.text.xview_moveto(0.0)
        if markdown.strip():
            job = self.painter.begin(START_MARK, END_MARK)
            self.painter.feed(job, markdown, None)  # the markdown as written (see append)
            self.painter.end(job)

    # -- looks and links ------------------------------------------------------------------------

    def _configure_tags(self) -> None:
        """The lesson's own looks on the renderer's tags: headings, unwrapped code, links."""
        text = self.text
        text.tag_configure(HEADING_TAGS[0], font=self.fonts["h1"], spacing1=dp(self, 10))
        for tag in HEADING_TAGS[1:]:
            text.tag_configure(tag, font=self.fonts["h2"], spacing1=dp(self, 12))
        text.tag_configure(PLAIN_TAG, elide=True)
        text.tag_configure(HEADING_GAP_TAG, font=self.fonts["gap"], spacing1=0, spacing3=0)
        text.tag_configure(CODE_BLOCK_TAG, wrap="none")
        text.tag_configure(COPY_CODE_TAG, font=self.fonts["link"])
        configure_breaks(text)  # above every font tag

    def _apply_palette(self, palette: Palette) -> None:
        """The theme's colours: the page, the headings, code, the links, the rendered text."""
        self.text.configure(background=palette.surface, foreground=palette.foreground)
        for tag in HEADING_TAGS[1:]:
            self.text.tag_configure(tag, foreground=palette.heading)
        self.text.tag_configure(CODE_BLOCK_TAG, background=palette.code_background)
        self.text.tag_configure(COPY_CODE_TAG, foreground=palette.link)
        self.painter.set_palette(palette)

    def _pointer(self, cursor: str) -> None:
        self.text.configure(cursor=cursor)

    def _on_click(self, event: tk.Event) -> str | None:
        """A click on a "Copy code" link copies its code; anywhere else, what Text does."""
        index = self.text.index(f"@{event.x},{event.y}")
        if COPY_CODE_TAG not in self.text.tag_names(index):
            return None
        code = self.painter.code_at(index)
        if code is not None:
            self.text.clipboard_clear()
            self.text.clipboard_append(code)
        return "break"
