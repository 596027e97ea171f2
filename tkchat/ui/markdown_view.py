"""Rich text for answers, painted block by block while they stream, in slices so no callback
freezes the window.

tkhtmlview costs about 33 ms per 1,000 characters, so one ``set_html`` of an 11,000-character
answer is a 360 ms freeze — "render once at the end" is itself a long task. Instead:

1. while an answer streams, :class:`~tkchat.render.stream.BlockStream` hands out each
   markdown block as soon as it is complete (when the block after it has started); only the
   open last block stays plain text, and the end of an answer renders that one block;
2. each block is cut into pieces of at most ``MAX_BLOCK_CHARS``, rendered within a time
   budget per callback: first by the tick that appended the text (``TICK_BUDGET_MS``),
   then by slices of their own (``SLICE_BUDGET_MS``). Prose, lists and headings go through
   an off-screen tkhtmlview widget and are copied out as (text, tags) runs; code, quotes and
   rules are made into runs here (tkhtmlview draws neither a quote nor a rule, and code gets
   Pygments' colours);
3. rendered runs are cached per piece, so a piece seen before costs one insert;
4. a block's pieces go in just before its plain text, hidden (an ``elide`` tag) if they
   take more than one callback; when the last one is in, one call deletes the block's
   plain lines and one shows its rendered text. Plain text stays until its rendered form
   replaces it, so nothing is ever missing and nothing is shown twice;
5. around every change, :class:`~tkchat.ui.view_keeper.ViewKeeper` keeps the reader's view:
   at the bottom, or on the very text they were reading.

Where a block's plain text is, is found by counting lines from a mark, never characters (Tk
8.6 counts a character above U+FFFF as two). The stream reads the answer as it arrived and
counts each line as the lines it is displayed as (long ones get display-only line ends).

tkhtmlview tags every run with a fresh tag and a fresh font; copying maps each style to one
shared transcript tag, so 200 answers still mean a few dozen tags, not thousands.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
import tkinter as tk
import tkinter.font as tkfont
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tkchat.render.safe_markdown import (
    BlockStream,
    Look,
    Piece,
    StreamBlock,
    block_pieces,
    block_to_html,
    highlight,
    lexer_ready,
    restyle,
    stays_plain,
)
from tkchat.render.soft_breaks import soft_break_runs
from tkchat.threads import own_thread
from tkchat.ui.look.html_fonts import share_fonts
from tkchat.ui.look.palette import LIGHT, Palette
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.view_keeper import ViewKeeper

log = logging.getLogger(__name__)

# tkhtmlview's cost follows formatting runs (a tag, and without _SharedFontFactory a new font,
# per run). With shared fonts the worst block measured (a dense bullet list) took 8 ms per
# 1,000 characters, 14 ms per 2,000. Blocks longer than this are split, which shows: a split
# paragraph becomes two paragraphs, a split list restarts its numbering.
MAX_BLOCK_CHARS = 1000
# A slice starts another piece only if the predicted cost still fits in this budget.
SLICE_BUDGET_MS = 4.0
# Initial guess of the cost per character (a dense list), refined from what is measured.
INITIAL_MS_PER_CHAR = 0.03
LEXER_WAIT_MS = 10  # how soon to look again when a code block waits for its lexer to load
# The painting a tick may do for the text it appended; more is left to slices, the next one
# a tick later (a flood completes a block or two a tick, a few tenths of a millisecond each).
TICK_BUDGET_MS = 3.0
STREAMING_SLICE_MS = 16
MAX_SLICES_KEPT = 20_000  # slice durations kept for the bench and the live figures
HIDDEN_TAG = "md-rendering"
COPY_CODE_TAG = "copy-code"  # the "Copy code" link in each fenced code block's header
# Tags of the looks drawn here rather than by tkhtmlview.
CODE_HEAD_TAG = "md-code-head"  # a code block's header line: its background
CODE_LANG_TAG = "md-code-lang"  # the language's name in it
QUOTE_TAG = "md-quote"
RULE_TAG = "md-rule"
# Sizes on tkhtmlview's scale (a 14-point body), so a new body size rescales them all.
CODE_HTML_SIZE = 13
LABEL_HTML_SIZE = 11

Run = tuple[str, tuple[str, ...]]  # (text, transcript tags)
StyleKey = tuple[tuple[tuple[str, object], ...], str, str, str, tuple[object, ...]]

_job_numbers = itertools.count(1)


@dataclass(eq=False)
class PaintJob:
    """One answer being painted: where it is, the blocks found so far, the one in progress.

    The answer's text runs from ``start_mark`` to ``end_mark`` (the transcript's marks). The
    painter's own two marks split it: rendered text shown, up to ``shown_mark``; pieces of
    the block in progress, hidden, up to ``plain_mark``; plain text from there to the end.
    """

    start_mark: str
    end_mark: str
    shown_mark: str
    plain_mark: str
    extra_tags: tuple[str, ...]
    on_done: Callable[[], None] | None
    stream: BlockStream = field(default_factory=BlockStream)
    block: StreamBlock | None = None  # the block being rendered
    pieces: list[Piece] = field(default_factory=list)  # its pieces
    next_piece: int = 0
    inserted_any: bool = False

    @property
    def ended(self) -> bool:
        return self.stream.ended


class MarkdownPainter:
    """Replaces plain answer text with rendered markdown. Main thread only."""

    def __init__(
        self,
        text: tk.Text,
        scheduler: AfterScheduler,
        *,
        copy_code_label: Callable[[], str] = lambda: "Copy code",
    ) -> None:
        """``copy_code_label()`` is the text of each code block's copy link (translated by
        the caller)."""
        from tkhtmlview import HTMLText, html_parser  # late: it pulls in PIL and requests

        share_fonts(html_parser)

        self.text = text
        self.scheduler = scheduler
        # Off-screen, never packed: tkhtmlview renders here, we copy the result out.
        self._scratch = HTMLText(text.winfo_toplevel(), background=text.cget("background"))
        self._styles: dict[StyleKey, str] = {}
        self._code_tags: dict[Look, str] = {}
        # Named fonts, kept alive while tags use them, with tkhtmlview's size for each (a
        # 14-point body), so a new body size can rescale them all.
        self._fonts: list[tuple[tkfont.Font, int]] = []
        self.copy_code_label = copy_code_label
        # Each "Copy code" link has a mark at its start, named "code_N", and this maps the
        # mark to the code the link copies. Marks, not a tag per link: every tag a Text
        # widget has makes each delete slower (a thousand tags: 0.3 ms a delete, here),
        # and a flood's answer has hundreds of code blocks.
        self.codes: dict[str, str] = {}
        self._links = 0  # links made so far: N of the next one (never reused)
        self._cache: OrderedDict[Piece, list[Run]] = OrderedDict()
        self._cache_size = 2048
        self._queue: list[PaintJob] = []
        self._job: PaintJob | None = None  # the job the running slice works on
        self._painted = False  # did the running slice change the text?
        self._painted_streaming = False  # did it paint an answer still streaming?
        self.text.tag_configure(HIDDEN_TAG, elide=True)
        self.palette = LIGHT  # colours; the transcript hands in the theme's (set_palette)
        self._configure_tags()
        self.slice_ms: list[float] = []  # every slice's duration, for tests and the bench
        self.streaming_slice_ms: list[float] = []  # those that painted an answer still streaming
        self._ms_per_char = INITIAL_MS_PER_CHAR
        # Python-Markdown's first conversion sets up its extensions (~20 ms): do that on a
        # worker now, not in the first slice. block_to_html is pure and thread-safe.
        own_thread(block_to_html, args=("warm **up** `x`",), name="tkchat-markdown-warmup").start()
        lexer_ready("python", self.palette.pygments_style)  # load on their thread now

    @property
    def busy(self) -> bool:
        """Does an answer that has ended still have blocks to paint? (An answer still
        streaming is not "busy": it waits for text.)"""
        return any(job.ended for job in self._queue)

    # -- what the transcript tells the painter ------------------------------------------------

    def begin(
        self,
        start_mark: str,
        end_mark: str,
        *,
        extra_tags: tuple[str, ...] = (),
        on_done: Callable[[], None] | None = None,
    ) -> PaintJob:
        """A new answer, empty so far, between two marks at the start of a line (text is
        appended at ``end_mark``). ``on_done`` runs when all of it is painted."""
        number = next(_job_numbers)
        # No "-" in these names: in "md_plain_3 + 2 lines" Tk would split the name there.
        job = PaintJob(
            start_mark, end_mark, f"md_shown_{number}", f"md_plain_{number}", extra_tags, on_done
        )
        for mark in (job.shown_mark, job.plain_mark):
            self.text.mark_set(mark, start_mark)
            self.text.mark_gravity(mark, "left")  # text appended after it leaves it in place
        self._queue.append(job)
        return job

    def feed(self, job: PaintJob, text: str, keeper: ViewKeeper | None) -> None:
        """Main thread, in the tick that appended ``text`` to the answer: paint the blocks
        it completed now, within ``TICK_BUDGET_MS`` (the rest in slices). Painting in the
        tick, not in a callback of its own, lays the bottom of the window out once a frame
        instead of twice (following the bottom costs a layout of it). ``keeper`` is the
        tick's: it restores the view once, after both the append and the painting. Without
        one (text put on screen in bulk), all of it is left to slices."""
        if job.ended or job not in self._queue or not job.stream.feed(text):
            return
        if keeper is not None:
            self._paint(keeper, TICK_BUDGET_MS, in_tick=True)
        elif not self.scheduler.pending("markdown"):
            self.scheduler.once("markdown", 0, self._slice)

    def end(self, job: PaintJob) -> None:
        """The answer is complete: paint the rest, then call its ``on_done``."""
        if job in self._queue:
            job.stream.end()
            self.scheduler.once("markdown", 0, self._slice)  # now, not at the streaming pace

    def drop(self, job: PaintJob) -> None:
        """Forget ``job`` (its answer was removed): whatever is on screen stays as it is."""
        if job in self._queue:
            self._queue.remove(job)
        self._unset_marks(job)

    def cancel(self) -> None:
        """Forget every job (the transcript is being cleared)."""
        for job in list(self._queue):
            self.drop(job)
        self.scheduler.cancel("markdown")

    # -- one slice per callback ----------------------------------------------------------------

    def _slice(self) -> None:
        self._paint(ViewKeeper(self.text), SLICE_BUDGET_MS, in_tick=False)

    def _paint(self, keeper: ViewKeeper, budget_ms: float, *, in_tick: bool) -> None:
        """Paint within ``budget_ms``, then arrange for the rest: another slice soon, or
        when a lexer has loaded, or (in a tick) by the next tick's pace. Its duration is
        kept in ``slice_ms`` (and ``streaming_slice_ms`` if it painted a streaming answer);
        a slice's includes putting the view back."""
        started = time.perf_counter()
        outcome = "idle"
        self._painted = self._painted_streaming = False
        try:
            with writable(self.text):
                outcome = self._paint_some(started, keeper, budget_ms, progress=not in_tick)
        except Exception as exc:  # a rendering bug must not lose the answer: keep the plain text
            job = self._job
            if not (isinstance(exc, tk.TclError) and job is not None and not self._alive(job)):
                log.exception("markdown rendering failed; that block stays plain text")
            # (else its answer's marks are gone: no bug, and _give_up drops it)
            with writable(self.text):
                self._give_up(job)
            outcome = "more"
        finally:
            self._job = None
        if not in_tick:
            keeper.restore()
        if self._painted:
            elapsed = (time.perf_counter() - started) * 1000
            self.slice_ms.append(elapsed)
            if self._painted_streaming:
                self.streaming_slice_ms.append(elapsed)
            for kept in (self.slice_ms, self.streaming_slice_ms):
                if len(kept) > MAX_SLICES_KEPT:  # a long session: the recent ones will do
                    del kept[: MAX_SLICES_KEPT // 2]
        if outcome == "more":
            self.scheduler.once("markdown", STREAMING_SLICE_MS if in_tick else 1, self._slice)
        elif outcome == "wait":
            self.scheduler.once("markdown", LEXER_WAIT_MS, self._slice)

    def _paint_some(
        self, started: float, keeper: ViewKeeper, budget_ms: float, *, progress: bool
    ) -> str:
        """Render pieces while the predicted cost of the next one still fits the budget
        (``progress``: at least one, so every slice moves on; a tick only does what fits).
        Returns "more" if work is left, "wait" if a code block waits for its lexer, "idle"
        if nothing can be done until more text arrives."""
        did = not progress
        for job in list(self._queue):
            # (A job whose answer's marks are gone fails at its first Tk call: _paint then
            # drops it. Not checked here, at two calls a slice: each Tk call gives up the GIL
            # and may wait up to 5 ms to get it back while the model's thread runs.)
            self._job = job
            while True:
                if job.block is None:
                    job.block = job.stream.next_block()
                    if job.block is None:
                        if job.stream.exhausted:
                            self._complete(job)
                        break  # this one waits for text (or is done): on to the next
                    if stays_plain(job.block.raw):
                        # Cutting a block of megabytes into pieces alone is a long task
                        # (1 MB: 71 ms), and so is Python-Markdown on some text: no one's
                        # markdown looks like that, and it stays plain.
                        self._leave_plain(job)
                        continue
                    job.pieces = block_pieces(job.block.raw, MAX_BLOCK_CHARS)
                    job.next_piece = 0
                piece = job.pieces[job.next_piece] if job.next_piece < len(job.pieces) else None
                if did:
                    # a cached piece costs only its insert, a swap its delete; a new piece
                    # is predicted from the cost per character seen so far
                    new = piece is not None and piece not in self._cache
                    predicted = self._ms_per_char * len(piece.markdown) if piece and new else 0.0
                    if (time.perf_counter() - started) * 1000 + predicted > budget_ms:
                        return "more"
                if piece is not None:
                    if piece.lang and not lexer_ready(piece.lang, self.palette.pygments_style):
                        return "more" if did else "wait"
                    keeper.changing()
                    self._insert_piece(job, piece, self._runs_for(piece))
                    job.next_piece += 1
                if job.next_piece == len(job.pieces):  # its last piece is in: swap it in now
                    keeper.changing()
                    self._swap(job, keeper)
                did = self._painted = True
                self._painted_streaming |= not job.ended
        return "idle"

    def _alive(self, job: PaintJob) -> bool:
        try:
            for mark in (job.start_mark, job.end_mark):
                self.text.index(mark)
        except tk.TclError:
            return False
        return True

    def _complete(self, job: PaintJob) -> None:
        self._queue.remove(job)
        self._unset_marks(job)
        if job.on_done is not None:
            job.on_done()

    def _unset_marks(self, job: PaintJob) -> None:
        with contextlib.suppress(tk.TclError):  # the widget is gone
            self.text.mark_unset(job.shown_mark, job.plain_mark)

    def _give_up(self, job: PaintJob | None) -> None:
        """After a rendering error: the block in progress stays plain text (its hidden
        pieces are removed) and painting goes on after it; if even that fails (the answer's
        marks are gone), the job is dropped. Never raises."""
        if job is None:
            return
        try:
            if job.block is None:
                raise tk.TclError("no block to skip")  # the failure was in finding blocks
            self._leave_plain(job)
        except tk.TclError:
            self.drop(job)

    def _leave_plain(self, job: PaintJob) -> None:
        """The block in progress stays plain text (its hidden pieces, if any, are removed);
        painting goes on after it."""
        assert job.block is not None
        self.text.delete(job.shown_mark, job.plain_mark)  # the hidden pieces
        self.text.mark_set(job.plain_mark, self._block_end(job, job.block))
        self.text.mark_set(job.shown_mark, job.plain_mark)
        job.block = None

    def _block_end(self, job: PaintJob, block: StreamBlock) -> str:
        """Where ``block``'s plain text ends (its lines start at ``job.plain_mark``)."""
        if block.lines is None:
            return job.end_mark
        end = f"{job.plain_mark} + {block.lines} lines"
        return job.end_mark if self.text.compare(end, ">", job.end_mark) else end

    def _insert_piece(self, job: PaintJob, piece: Piece, runs: list[Run]) -> None:
        """Insert one piece's runs just before the plain text (ending in a newline, so the
        plain text still starts a line): hidden if its block has more pieces to come, which
        may be inserted by later callbacks. A block of one piece is swapped in by the same
        callback (so never shown twice) and needs no hiding: eliding text and showing it
        again costs Tk two more layouts of those lines."""
        hidden = len(job.pieces) > 1
        tags = (HIDDEN_TAG, *job.extra_tags) if hidden else job.extra_tags
        args: list[object] = []
        newlines = 0
        if job.inserted_any:
            args += ["\n", tags]  # blocks are separated by one blank line
            newlines += 1
        link = False
        for chunk, run_tags in runs:
            link |= COPY_CODE_TAG in run_tags
            text = self.copy_code_label() if COPY_CODE_TAG in run_tags else chunk
            args += [text, (*run_tags, *tags)]
            newlines += text.count("\n")
        self.text.insert(job.plain_mark, *args)  # type: ignore[arg-type]
        found = self.text.tag_nextrange(COPY_CODE_TAG, job.plain_mark) if link else ()
        if found:  # the link is in this piece's first line, which starts at plain_mark
            mark = f"code_{self._links}"
            self._links += 1
            self.text.mark_set(mark, found[0])
            self.text.mark_gravity(mark, "left")
            self.codes[mark] = piece.code or ""
        self.text.mark_set(job.plain_mark, f"{job.plain_mark} + {newlines} lines")
        job.inserted_any = True

    def _swap(self, job: PaintJob, keeper: ViewKeeper) -> None:
        """The block's pieces are all in: delete its plain lines, show the rendered ones (two
        calls, so the screen never shows both or neither)."""
        assert job.block is not None
        end = self._block_end(job, job.block)
        keeper.replacing(job.plain_mark, end)
        self.text.delete(job.plain_mark, end)
        if len(job.pieces) > 1:
            self.text.tag_remove(HIDDEN_TAG, job.shown_mark, job.plain_mark)
        keeper.replaced(job.shown_mark, job.plain_mark)
        self.text.mark_set(job.shown_mark, job.plain_mark)
        job.block = None

    def code_at(self, index: str) -> str | None:
        """The code a "Copy code" link at ``index`` copies (None if there is no link)."""
        if COPY_CODE_TAG not in self.text.tag_names(index):
            return None
        found = self.text.tag_prevrange(COPY_CODE_TAG, f"{index} + 1c")
        if not found:
            return None
        for _kind, mark, _where in self.text.dump(found[0], mark=True):
            if mark in self.codes:
                return self.codes[mark]
        return None

    def forget_codes(self) -> None:
        """Drop the links no longer in the text (the transcript was cleared, or its end
        removed), with their marks and their code. (A deleted link's mark stays, moved to
        where the deletion was: it no longer starts a link.)"""
        for mark in list(self.codes):
            if COPY_CODE_TAG not in self.text.tag_names(mark):
                self.text.mark_unset(mark)
                del self.codes[mark]

    def set_body_size(self, size: int) -> None:
        """Rescale every rendered style to a new body font size (the font size setting)."""
        for font, html_size in self._fonts:
            font.configure(size=_scaled(html_size, size))

    # -- a piece -> runs -----------------------------------------------------------------------

    def _runs_for(self, piece: Piece) -> list[Run]:
        """One piece's runs: from the cache, or rendered now (code and rules here, the rest
        off-screen by tkhtmlview and copied out), long lines cut for display only."""
        cached = self._cache.get(piece)
        if cached is not None:
            self._cache.move_to_end(piece)
            return cached
        began = time.perf_counter()
        if piece.kind in ("fence", "code"):
            runs = self._code_runs(piece)
        elif piece.kind == "hr":
            runs = [("\n", (RULE_TAG,))]
        else:
            runs = self._html_runs(piece.markdown)
            if piece.kind == "quote":
                runs = [(chunk, (*tags, QUOTE_TAG)) for chunk, tags in runs]
        self._cache[piece] = runs = soft_break_runs(runs)
        if len(piece.markdown) >= 40:  # learn the cost per character; short ones are overhead
            observed = (time.perf_counter() - began) * 1000 / len(piece.markdown)
            self._ms_per_char = max(observed, 0.7 * self._ms_per_char + 0.3 * observed)
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return runs

    def _html_runs(self, markdown_text: str) -> list[Run]:
        """tkhtmlview renders the block off-screen; its text is copied out with one shared
        transcript tag per distinct style."""
        scratch = self._scratch
        scratch.set_html(block_to_html(markdown_text))
        runs: list[Run] = []
        active: list[str] = []
        style: tuple[str, ...]
        for key, value, _index in scratch.dump("1.0", "end-1c", text=True, tag=True):
            if key == "tagon":
                active.append(value)
            elif key == "tagoff":
                if value in active:
                    active.remove(value)
            elif key == "text" and value:
                style = (self._style_tag(active[-1] if active else None),)
                if runs and runs[-1][1] == style:
                    runs[-1] = (runs[-1][0] + value, style)
                else:
                    runs.append((value, style))
        while runs and runs[-1][0].endswith("\n"):  # tkhtmlview leaves trailing newlines
            chunk, style = runs[-1]
            runs[-1] = (chunk.rstrip("\n"), style)
            if not runs[-1][0]:
                runs.pop()
        while runs and runs[0][0].startswith("\n"):  # and starts a list on a new line
            chunk, style = runs[0]
            runs[0] = (chunk.lstrip("\n"), style)
            if not runs[0][0]:
                runs.pop(0)
        runs.append(("\n", runs[-1][1] if runs else (self._style_tag(None),)))
        return runs

    def _code_runs(self, piece: Piece) -> list[Run]:
        """A code block: on its first piece a header line (the language, then the copy link,
        whose text is filled in when inserted), then the code in Pygments' colours."""
        runs: list[Run] = []
        if piece.kind == "fence" and piece.first:
            if piece.lang:
                runs.append((piece.lang + "    ", (CODE_LANG_TAG, CODE_HEAD_TAG)))
            runs.append(("", (COPY_CODE_TAG, CODE_HEAD_TAG)))
            runs.append(("\n", (CODE_HEAD_TAG,)))
        for chunk, look in highlight(
            piece.code_text() + "\n", piece.lang, self.palette.pygments_style
        ):
            runs.append((chunk, (self._code_tag(look),)))
        return runs

    def _code_tag(self, look: Look) -> str:
        """One transcript tag per look of highlighted code."""
        tag = self._code_tags.get(look)
        if tag is None:
            tag = f"md-code-{len(self._code_tags)}"
            self._code_tags[look] = tag
            font = self._font(
                self._mono_family(),
                CODE_HTML_SIZE,
                weight="bold" if look.bold else "normal",
                slant="italic" if look.italic else "roman",
            )
            self.text.tag_configure(tag, font=font, lmargin1=24, lmargin2=24)
            self._colour_code_tag(tag, look)
        return tag

    def _colour_code_tag(self, tag: str, look: Look) -> None:
        self.text.tag_configure(
            tag,
            background=self.palette.code_background,
            foreground=look.colour or self.palette.code_text,
        )

    def set_palette(self, palette: Palette) -> None:
        """The theme changed: everything drawn here takes its colours, text already rendered
        included; highlighted code takes the look of the same kind of token in the theme's
        Pygments style (once that style has loaded, on the loader thread)."""
        self.palette = palette
        self._colour_tags()
        for key, tag in self._styles.items():
            self.text.tag_configure(tag, **self._colour_options(key))
        self._restyle_code()

    def _restyle_code(self) -> None:
        style = self.palette.pygments_style
        waiting = False
        for look, tag in self._code_tags.items():
            new = restyle(look, style)
            if new is None:
                waiting = True
                self._colour_code_tag(tag, Look())  # plain code colours until it loads
            else:
                self._colour_code_tag(tag, new)
        if waiting:
            lexer_ready("", style)  # asks for the style
            self.scheduler.once("markdown-restyle", LEXER_WAIT_MS, self._restyle_code)

    def _configure_tags(self) -> None:
        """The looks drawn here: code headers, quotes, rules. Created after the message
        tags, so their margins win over the answer's."""
        base = self._base_family()
        self.text.tag_configure(CODE_HEAD_TAG, lmargin1=24, spacing1=4)
        self.text.tag_configure(CODE_LANG_TAG, font=self._font(base, LABEL_HTML_SIZE))
        self.text.tag_configure(QUOTE_TAG, lmargin1=30, lmargin2=30)
        # A rule is an empty line of a 2-pixel font whose newline is painted: Tk paints a
        # newline's background to the right edge, so the rule is as wide as the text.
        self._rule_font = tkfont.Font(root=self.text, family=base, size=-2)
        self.text.tag_configure(RULE_TAG, font=self._rule_font)
        self._colour_tags()

    def _colour_tags(self) -> None:
        """The palette's colours on the looks drawn here."""
        palette = self.palette
        self.text.tag_configure(CODE_HEAD_TAG, background=palette.button_pressed)
        self.text.tag_configure(CODE_LANG_TAG, foreground=palette.muted)
        self.text.tag_configure(
            QUOTE_TAG,
            lmargincolor=palette.background,
            background=palette.background,
            foreground=palette.muted,
        )
        self.text.tag_configure(RULE_TAG, background=palette.border)

    def _font(
        self,
        family: str,
        html_size: int,
        *,
        weight: str = "normal",
        slant: str = "roman",
        underline: bool = False,
        overstrike: bool = False,
    ) -> tkfont.Font:
        """A named font at ``html_size`` on tkhtmlview's scale, rescaled with the body."""
        body = int(tkfont.nametofont(str(self.text.cget("font")), root=self.text).actual()["size"])
        font = tkfont.Font(
            root=self.text,
            family=family,
            size=_scaled(html_size, body),
            weight=weight,  # type: ignore[arg-type]
            slant=slant,  # type: ignore[arg-type]
            underline=underline,
            overstrike=overstrike,
        )
        self._fonts.append((font, html_size))
        return font

    def _style_tag(self, scratch_tag: str | None) -> str:
        """One transcript tag per distinct look (font, colour, justification, tabs).

        The look is read from tkhtmlview's parser records, not from the Tk tag: tkhtmlview
        does not keep its ``Font`` objects, so their named fonts may already be deleted."""
        record = self._scratch.html_parser._w_tags.get(scratch_tag) if scratch_tag else None
        if record is None:
            key: StyleKey = ((), "", "", "", ())
        else:
            config = record.get("config", {})
            key = (
                tuple(sorted(record.get("font", {}).items())),
                str(config.get("foreground") or ""),
                "",
                str(config.get("justify") or ""),
                tuple(config.get("tabs") or ()),
            )
        tag = self._styles.get(key)
        if tag is None:
            tag = f"md-style-{len(self._styles)}"
            self._styles[key] = tag
            self.text.tag_configure(tag, **self._tag_options(key))
            self.text.tag_lower(tag)  # message tags (colours, margins) stay on top
        return tag

    def _tag_options(self, key: StyleKey) -> dict[str, Any]:
        font_spec, foreground, _background, justify, tabs = key
        options: dict[str, Any] = {}
        if font_spec:
            spec: dict[str, Any] = dict(font_spec)
            monospace = spec.get("family") == self._scratch.html_parser.PREFORMATTED_FONT_FAMILY
            options["font"] = self._font(
                self._mono_family() if monospace else self._base_family(),
                int(spec.get("size") or 14),
                weight=spec.get("weight", "normal"),
                slant=spec.get("slant", "roman"),
                underline=bool(spec.get("underline")),
                overstrike=bool(spec.get("overstrike")),
            )
        options.update(self._colour_options(key))
        if justify:
            options["justify"] = justify
        if tabs:
            options["tabs"] = tabs
        return options

    def _colour_options(self, key: StyleKey) -> dict[str, Any]:
        """A style's colours in the current palette: code on the code background; any
        other colour tkhtmlview chose (never black, which would vanish in the dark)."""
        font_spec, foreground, *_rest = key
        family = dict(font_spec).get("family")
        if family is not None and family == self._scratch.html_parser.PREFORMATTED_FONT_FAMILY:
            return {
                "background": self.palette.code_background,
                "foreground": foreground
                if foreground not in ("", "black")
                else self.palette.code_text,
            }
        return {"foreground": foreground} if foreground and foreground != "black" else {}

    def _base_family(self) -> str:
        body = tkfont.nametofont(str(self.text.cget("font")), root=self.text)
        return str(body.actual()["family"])

    def _mono_family(self) -> str:
        families = {name.lower(): name for name in tkfont.families(self.text)}
        for wanted in ("dejavu sans mono", "liberation mono", "noto sans mono", "courier"):
            if wanted in families:
                return families[wanted]
        return "TkFixedFont"


def _scaled(html_size: int, body_size: int) -> int:
    """tkhtmlview's sizes assume a 14-point body; scale them to ours."""
    return max(6, round(html_size * body_size / 14))
