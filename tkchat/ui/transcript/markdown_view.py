"""Rich text for answers, painted block by block while they stream, in slices so no callback
freezes the window.

tkhtmlview costs about 33 ms per 1,000 characters, so one ``set_html`` of an 11,000-character
answer is a 360 ms freeze — "render once at the end" is itself a long task. Instead:

1. while an answer streams, :class:`~tkchat.render.stream.BlockStream` hands out each
   markdown block as soon as it is complete (when the block after it has started); only the
   open last block stays plain text, and the end of an answer renders that one block;
2. each block is cut into pieces of at most ``MAX_BLOCK_CHARS``, rendered within a time
   budget per callback: first by the tick that appended the text (``TICK_BUDGET_MS``),
   then by slices of their own (``SLICE_BUDGET_MS``); a piece becomes (text, tags) runs in
   :mod:`tkchat.ui.transcript.markdown_looks` (tkhtmlview's parser for prose, Pygments for
   code, both on a thread of their own: all of a block's pieces are asked for as soon as the
   block is complete, and a piece is painted once it is ready);
3. rendered runs are cached per piece, so a piece seen before costs one insert;
4. a block's pieces go in just before its plain text, hidden (an ``elide`` tag) if they
   take more than one callback; when the last one is in, one call deletes the block's
   plain lines and one shows its rendered text. Plain text stays until its rendered form
   replaces it, so nothing is ever missing and nothing is shown twice;
5. around every change, :class:`~tkchat.ui.transcript.view_keeper.ViewKeeper` keeps the
   reader's view: at the bottom, or on the very text they were reading.

Where a block's plain text is, is found by counting lines from a mark, never characters (Tk
8.6 counts a character above U+FFFF as two). The stream reads the answer as it arrived and
counts each line as the lines it is displayed as (long ones get display-only line ends).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
import tkinter as tk
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from tkchat.limits import DISPLAY_LINE_CHARS
from tkchat.render.safe_markdown import (
    BlockStream,
    Piece,
    StreamBlock,
    block_pieces,
    block_to_html,
    lexer_ready,
    stays_plain,
)
from tkchat.render.soft_breaks import soft_break_runs
from tkchat.threads import own_thread
from tkchat.ui.look.chinese_wrap import runs_with_breaks
from tkchat.ui.look.palette import Palette
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.markdown_looks import (
    COPY_CODE_TAG,
    LEXER_WAIT_MS,
    MarkdownLooks,
    Run,
)
from tkchat.ui.transcript.view_keeper import ViewKeeper

log = logging.getLogger(__name__)

# tkhtmlview's cost follows formatting runs (a tag, and without _SharedFontFactory a new font,
# per run). With shared fonts the worst block measured (a dense bullet list) took 8 ms per
# 1,000 characters, 14 ms per 2,000. Blocks longer than this are split, which shows: a split
# paragraph becomes two paragraphs (a split list numbers on: ``<ol start>``).
MAX_BLOCK_CHARS = 1000
# A slice starts another piece only if the predicted cost still fits in this budget. At 4 ms
# the fixed window's lag max without the sampler was 6.4-10.1 ms against the simplest Tk
# peer's 3.9-5.7; at 2 ms, 4.0-6.8 against 2.8-6.8 (tests/tools/peer_lag.py, quiet, 4 runs
# each, 2026-12-04).
SLICE_BUDGET_MS = 2.0
# Initial guess of the cost per character (a dense list), refined from what is measured.
INITIAL_MS_PER_CHAR = 0.03
# The painting a tick may do for the text it appended; more is left to slices, the next one
# a tick later (a flood completes a block or two a tick, a few tenths of a millisecond each).
TICK_BUDGET_MS = 3.0
STREAMING_SLICE_MS = 16
MAX_SLICES_KEPT = 20_000  # slice durations kept for the bench and the live figures
HIDDEN_TAG = "md-rendering"

__all__ = ["COPY_CODE_TAG", "HIDDEN_TAG", "MarkdownPainter", "PaintJob"]

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
    last_kind: str = ""  # the kind of block the last piece inserted was of

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
        looks: MarkdownLooks | None = None,
        follow_end: bool = True,
        display_limit: int = DISPLAY_LINE_CHARS,
    ) -> None:
        """``copy_code_label()`` is the text of each code block's copy link (translated by
        the caller); ``looks``: how the text looks (by default the transcript's);
        ``follow_end=False``: a reader at the end is not kept there (:class:`ViewKeeper`);
        ``display_limit``: the longest line shown without a line end added, as the text
        was written (:func:`~tkchat.render.soft_breaks.soft_break` with that limit)."""
        self.text = text
        self.scheduler = scheduler
        self.follow_end = follow_end
        self.display_limit = display_limit
        self.looks = MarkdownLooks(text, scheduler) if looks is None else looks
        # A chat's Chinese may break between its characters, as its plain text does (the
        # transcript elides BREAK_TAG: ui/look/chinese_wrap.py); a page's looks make their own.
        self.chinese_breaks = not self.looks.page
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
        # Told each swap's new text (its start and end): the transcript marks a search's
        # matches in it again (tkchat/ui/transcript/found.py).
        self.swapped: Callable[[str, str], None] = lambda start, end: None
        # Painting still to come that the painter has no job for yet (the transcript's
        # answers near the view, not yet handed over): it counts as busy too.
        self.also_busy: Callable[[], bool] = lambda: False
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
        streaming is not "busy": it waits for text.) Or is painting still to come
        (``also_busy``)?"""
        return any(job.ended for job in self._queue) or self.also_busy()

    def untouched(self, job: PaintJob) -> bool:
        """Has nothing of ``job``'s answer been painted yet? (Dropping it then leaves the
        answer exactly as it was written: plain.)"""
        return not job.inserted_any and job.block is None and job in self._queue

    def prioritise(self, rank: Callable[[PaintJob], float]) -> None:
        """Paint the jobs in the order of ``rank`` (lowest first): the answers nearest the
        reader's view before those further away."""
        self._queue.sort(key=rank)

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
            start_mark,
            end_mark,
            f"md_shown_{number}",
            f"md_plain_{number}",
            extra_tags,
            on_done,
            BlockStream(self.display_limit),
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

    def close(self) -> None:
        """The text widget is going away before the window does (the lesson panel closed):
        forget every job, and let the looks' preparer thread end."""
        self.cancel()
        self.looks.close()

    # -- one slice per callback ----------------------------------------------------------------

    def _slice_when_free(self) -> None:
        """The next slice, once every timer that came due meanwhile has run: a slice's own
        timer, set a millisecond after the last one ended, came due before the lag probe's
        timer that fell due during that slice, and two slices ran back to back while the
        probe waited (its worst lags were two slices long)."""
        self.scheduler.when_idle("markdown", self._slice)

    def _slice(self) -> None:
        keeper = ViewKeeper(self.text, follow_end=self.follow_end)
        self._paint(keeper, SLICE_BUDGET_MS, in_tick=False)

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
        if outcome == "more" and in_tick:
            self.scheduler.once("markdown", STREAMING_SLICE_MS, self._slice)
        elif outcome == "more":
            self.scheduler.once("markdown", 1, self._slice_when_free)
        elif outcome == "wait":
            self.scheduler.once("markdown", LEXER_WAIT_MS, self._slice)

    def _paint_some(
        self, started: float, keeper: ViewKeeper, budget_ms: float, *, progress: bool
    ) -> str:
        """Render pieces while the predicted cost of the next one still fits the budget
        (``progress``: at least one, so every slice moves on; a tick only does what fits).
        Returns "more" if work is left, "wait" if a code block waits for its lexer or a
        piece for the preparer (:meth:`MarkdownLooks.ready`), "idle"
        if nothing can be done until more text arrives."""
        did = not progress
        for job in list(self._queue):
            # (A job whose answer's marks are gone fails at its first Tk call: _paint then
            # drops it. Not checked here, at two calls a slice: each Tk call gives up the GIL
            # and may wait up to 5 ms to get it back while the model's thread runs.)
            self._job = job
            while True:
                if job.block is None:
                    taken = self._take_block(job)
                    if taken is None:
                        break  # this one waits for text (or is done): on to the next
                    if not taken:
                        continue  # left plain: the block after it
                piece = job.pieces[job.next_piece] if job.next_piece < len(job.pieces) else None
                if did:
                    # a cached piece costs only its insert, a swap its delete; a new piece
                    # is predicted from the cost per character seen so far
                    new = piece is not None and piece not in self._cache
                    predicted = self._ms_per_char * len(piece.markdown) if piece and new else 0.0
                    if (time.perf_counter() - started) * 1000 + predicted > budget_ms:
                        return "more"
                if piece is not None:
                    if self._waiting(piece):
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

    def _take_block(self, job: PaintJob) -> bool | None:
        """``job``'s next complete block, cut into pieces, each asked for now (True); or it
        stays plain (False); or there is none yet, or the job is complete (None)."""
        job.block = job.stream.next_block()
        if job.block is None:
            if job.stream.exhausted:
                self._complete(job)
            return None
        if stays_plain(job.block.raw) or job.block.open_heading:
            # Cutting a block of megabytes into pieces alone is a long task (1 MB: 71 ms),
            # and so is Python-Markdown on some text: no one's markdown looks like that, and
            # it stays plain. So does a heading the answer was cut in: it is no heading yet.
            self._leave_plain(job)
            return False
        job.pieces = block_pieces(job.block.raw, MAX_BLOCK_CHARS)
        job.next_piece = 0
        for piece in job.pieces:  # laid out off this thread: all of them asked for now
            self._waiting(piece)
        return True

    def _waiting(self, piece: Piece) -> bool:
        """Does ``piece`` wait for its lexer to load, or for the preparer's thread (its
        prose laid out, its code highlighted)? Either is asked for here, once."""
        if piece.lang and not lexer_ready(piece.lang, self.palette.pygments_style):
            return True
        return piece not in self._cache and not self.looks.ready(piece)

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
        if job.inserted_any and piece.first:  # (a block's pieces follow each other)
            # blocks are separated by one blank line (on a page, one after a heading says so)
            args += ["\n", (*tags, *self.looks.gap_tags(job.last_kind))]
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
        job.last_kind = piece.kind

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
        self.swapped(job.shown_mark, job.plain_mark)
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

    def forget_codes_in(self, start: str, end: str) -> None:
        """Drop the links between ``start`` and ``end`` (text about to be deleted or
        replaced), with their marks and their code."""
        gone = [mark for _kind, mark, _where in self.text.dump(start, end, mark=True)]
        gone = [mark for mark in gone if mark in self.codes]
        for mark in gone:
            del self.codes[mark]
        if gone:
            self.text.mark_unset(*gone)

    def forget_all_codes(self) -> None:
        """Drop every link (the transcript is being cleared)."""
        if self.codes:
            self.text.mark_unset(*self.codes)
            self.codes.clear()

    def set_body_size(self, size: int) -> None:
        """Rescale every rendered style to a new body font size (the font size setting)."""
        self.looks.set_body_size(size)

    def set_palette(self, palette: Palette) -> None:
        """The theme changed: rendered text takes its colours (:class:`MarkdownLooks`)."""
        self.looks.set_palette(palette)

    @property
    def palette(self) -> Palette:
        return self.looks.palette

    # -- a piece -> runs -----------------------------------------------------------------------

    def _runs_for(self, piece: Piece) -> list[Run]:
        """One piece's runs: from the cache, or rendered now (:class:`MarkdownLooks`), long
        lines cut for display only."""
        cached = self._cache.get(piece)
        if cached is not None:
            self._cache.move_to_end(piece)
            return cached
        began = time.perf_counter()
        runs = soft_break_runs(self.looks.runs(piece), self.display_limit)
        if self.chinese_breaks:  # (after the soft breaks: their spaces are not the text's)
            runs = runs_with_breaks(runs)
        self._cache[piece] = runs
        if len(piece.markdown) >= 40:  # learn the cost per character; short ones are overhead
            observed = (time.perf_counter() - began) * 1000 / len(piece.markdown)
            self._ms_per_char = max(observed, 0.7 * self._ms_per_char + 0.3 * observed)
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return runs
