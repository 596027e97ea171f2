"""Rich text for finished answers, painted in slices so no callback freezes the window.

tkhtmlview costs about 33 ms per 1,000 characters, so one ``set_html`` of an 11,000-character
answer is a 360 ms freeze — "render once at the end" is itself a long task. Instead:

1. the answer is split into blocks of at most ``MAX_BLOCK_CHARS``, lazily, as slices take
   them (``iter_blocks_with_code``: splitting 650,000 characters at once took 18 ms);
2. each callback renders blocks into an off-screen tkhtmlview widget until its time budget is
   spent, and copies the result into the transcript as (text, style) runs;
3. rendered runs are cached per block, so a block seen before costs one insert;
4. rendered runs are inserted hidden (an ``elide`` tag); when the last block is in, one call
   deletes the plain text and one call shows the rendered text, so nothing jumps.

tkhtmlview tags every run with a fresh tag and a fresh font; copying maps each style to one
shared transcript tag, so 200 answers still mean a few dozen tags, not thousands.
"""

from __future__ import annotations

import logging
import threading
import time
import tkinter as tk
import tkinter.font as tkfont
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tkchat.render.safe_markdown import block_to_html, iter_blocks_with_code
from tkchat.ui.palette import LIGHT, Palette
from tkchat.ui.readonly import writable
from tkchat.ui.scheduler import AfterScheduler

log = logging.getLogger(__name__)

# tkhtmlview's cost follows formatting runs (a tag, and without _SharedFontFactory a new font,
# per run). With shared fonts the worst block measured (a dense bullet list) took 8 ms per
# 1,000 characters, 14 ms per 2,000. Blocks longer than this are split, which shows: a split
# paragraph becomes two paragraphs, a split list restarts its numbering.
MAX_BLOCK_CHARS = 1000
# A slice starts another block only if the predicted cost still fits in this budget.
SLICE_BUDGET_MS = 4.0
# Initial guess of the cost per character (a dense list), refined from what is measured.
INITIAL_MS_PER_CHAR = 0.03
HIDDEN_TAG = "md-rendering"
COPY_CODE_TAG = "copy-code"  # the "Copy code" link under each fenced code block

Run = tuple[str, str]  # (text, transcript tag)
StyleKey = tuple[tuple[tuple[str, object], ...], str, str, str, tuple[object, ...]]


@dataclass
class _Job:
    start_mark: str
    end_mark: str
    source: Iterator[tuple[str, str | None]] | None  # blocks not split off yet (None: done)
    extra_tags: tuple[str, ...]
    on_done: Callable[[], None] | None
    blocks: list[str] = field(default_factory=list)  # split off so far
    codes: dict[int, str] = field(default_factory=dict)  # block index -> code to copy after it
    next_block: int = 0
    inserted_any: bool = False
    slices: int = 0
    slice_ms: list[float] = field(default_factory=list)


class MarkdownPainter:
    """Replaces plain answer text with rendered markdown. Main thread only."""

    def __init__(
        self,
        text: tk.Text,
        scheduler: AfterScheduler,
        *,
        copy_code_label: Callable[[], str] = lambda: "Copy code",
    ) -> None:
        """``copy_code_label()`` is the text of the link under each code block (translated
        by the caller)."""
        from tkhtmlview import HTMLText, html_parser  # late: it pulls in PIL and requests

        _share_fonts(html_parser)

        self.text = text
        self.scheduler = scheduler
        # Off-screen, never packed: tkhtmlview renders here, we copy the result out.
        self._scratch = HTMLText(text.winfo_toplevel(), background=text.cget("background"))
        self._styles: dict[StyleKey, str] = {}
        # Named fonts, kept alive while tags use them, with tkhtmlview's size for each (a
        # 14-point body), so a new body size can rescale them all.
        self._fonts: list[tuple[tkfont.Font, int]] = []
        self.copy_code_label = copy_code_label
        self.palette = LIGHT  # code colours; the transcript hands in the theme's (set_palette)
        self.codes: dict[str, str] = {}  # "copy-code-N" tag -> the code that link copies
        self._links = 0  # links made so far: N of the next one (never reused)
        self._cache: OrderedDict[str, list[Run]] = OrderedDict()
        self._cache_size = 2048
        self._queue: list[_Job] = []
        self.text.tag_configure(HIDDEN_TAG, elide=True)
        self.slice_ms: list[float] = []  # every slice's duration, for tests and the bench
        self._ms_per_char = INITIAL_MS_PER_CHAR
        # Python-Markdown's first conversion sets up its extensions (~20 ms): do that on a
        # worker now, not in the first slice. block_to_html is pure and thread-safe.
        threading.Thread(
            target=block_to_html,
            args=("warm **up** `x`",),
            daemon=True,
            name="tkchat-markdown-warmup",
        ).start()

    @property
    def busy(self) -> bool:
        return bool(self._queue)

    def paint(
        self,
        start_mark: str,
        end_mark: str,
        markdown_text: str,
        *,
        extra_tags: tuple[str, ...] = (),
        on_done: Callable[[], None] | None = None,
    ) -> None:
        """Schedule rendering of the text between two marks (which must stay in place)."""
        job = _Job(
            start_mark,
            end_mark,
            iter_blocks_with_code(markdown_text, MAX_BLOCK_CHARS),
            extra_tags,
            on_done,
        )
        self._queue.append(job)
        if len(self._queue) == 1:
            self.scheduler.once("markdown", 0, self._slice)

    def cancel(self) -> None:
        self._queue.clear()
        self.scheduler.cancel("markdown")

    # -- one slice per callback ----------------------------------------------------------------

    def _slice(self) -> None:
        started = time.perf_counter()
        job = self._queue[0]
        try:
            with writable(self.text):
                self._paint_some(job, started)
        except Exception:  # a rendering bug must not lose the answer: keep the plain text
            log.exception("markdown rendering failed; the answer stays as plain text")
            with writable(self.text):
                self._abandon(job)
        self.slice_ms.append((time.perf_counter() - started) * 1000)
        if self._queue:
            self.scheduler.once("markdown", 1, self._slice)

    def _paint_some(self, job: _Job, started: float) -> None:
        """Render blocks while the predicted cost of the next one still fits the budget
        (always at least one block, so every slice makes progress)."""
        first = job.next_block
        while (block := _next_block(job)) is not None:
            if job.next_block > first:
                # a cached block costs only its insert; a new one is predicted from history
                predicted = 0.0 if block in self._cache else self._ms_per_char * len(block)
                if (time.perf_counter() - started) * 1000 + predicted > SLICE_BUDGET_MS:
                    break
            self._insert_hidden(job, self._runs_for(block), job.codes.get(job.next_block))
            job.next_block += 1
        if block is None:
            self._reveal(job)
            self._queue.pop(0)
            if job.on_done is not None:
                job.on_done()

    def _abandon(self, job: _Job) -> None:
        """Remove whatever was inserted hidden for this job; the plain text stays."""
        if self._queue and self._queue[0] is job:
            self._queue.pop(0)
        while hidden := self.text.tag_nextrange(HIDDEN_TAG, job.start_mark, job.end_mark):
            self.text.delete(*hidden)

    def _insert_hidden(self, job: _Job, runs: list[Run], code: str | None = None) -> None:
        if not runs:
            return
        tags = (HIDDEN_TAG, *job.extra_tags)
        if job.inserted_any:
            args: list[object] = ["\n"]  # blocks are separated by one blank line
            args.append(tags)
        else:
            args = []
        for chunk, style in runs:
            args.extend((chunk, (style, *tags)))
        if code is not None:
            # One tag per link names the code it copies; the shared tag gives the look.
            link = f"{COPY_CODE_TAG}-{self._links}"
            self._links += 1
            self.codes[link] = code
            args.extend((self.copy_code_label(), (COPY_CODE_TAG, link, *tags), "\n", tags))
        self.text.insert(job.end_mark, *args)  # type: ignore[arg-type]
        job.inserted_any = True

    def code_at(self, index: str) -> str | None:
        """The code a "Copy code" link at ``index`` copies (None if there is no link)."""
        for tag in self.text.tag_names(index):
            if tag in self.codes:
                return self.codes[tag]
        return None

    def forget_codes(self) -> None:
        """Drop the links no longer in the text (the transcript was cleared, or its end
        removed), with their tags and their code."""
        for tag in [tag for tag in self.codes if not self.text.tag_ranges(tag)]:
            self.text.tag_delete(tag)
            del self.codes[tag]

    def set_body_size(self, size: int) -> None:
        """Rescale every rendered style to a new body font size (the font size setting)."""
        for font, html_size in self._fonts:
            font.configure(size=_scaled(html_size, size))

    def set_palette(self, palette: Palette) -> None:
        """The theme changed: code blocks (and spans) take its code colours, already
        rendered ones included."""
        self.palette = palette
        for key, tag in self._styles.items():
            self.text.tag_configure(tag, **self._colour_options(key))

    def _reveal(self, job: _Job) -> None:
        """Swap plain for rendered in two calls: delete the plain range, show the rest."""
        hidden = self.text.tag_nextrange(HIDDEN_TAG, job.start_mark, job.end_mark)
        if hidden:
            self.text.delete(job.start_mark, hidden[0])
            self.text.tag_remove(HIDDEN_TAG, job.start_mark, job.end_mark)

    # -- tkhtmlview -> runs --------------------------------------------------------------------

    def _runs_for(self, block: str) -> list[Run]:
        cached = self._cache.get(block)
        if cached is not None:
            self._cache.move_to_end(block)
            return cached
        scratch = self._scratch
        began = time.perf_counter()
        scratch.set_html(block_to_html(block))
        runs: list[Run] = []
        active: list[str] = []
        for key, value, _index in scratch.dump("1.0", "end-1c", text=True, tag=True):
            if key == "tagon":
                active.append(value)
            elif key == "tagoff":
                if value in active:
                    active.remove(value)
            elif key == "text" and value:
                style = self._style_tag(active[-1] if active else None)
                if runs and runs[-1][1] == style:
                    runs[-1] = (runs[-1][0] + value, style)
                else:
                    runs.append((value, style))
        while runs and runs[-1][0].endswith("\n"):  # tkhtmlview leaves trailing newlines
            text, style = runs[-1]
            runs[-1] = (text.rstrip("\n"), style)
            if not runs[-1][0]:
                runs.pop()
        runs.append(("\n", runs[-1][1] if runs else self._style_tag(None)))
        self._cache[block] = runs
        if len(block) >= 40:  # learn the cost per character; short blocks are all overhead
            observed = (time.perf_counter() - began) * 1000 / len(block)
            self._ms_per_char = max(observed, 0.7 * self._ms_per_char + 0.3 * observed)
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return runs

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
        font_spec, _foreground, _background, justify, tabs = key
        options: dict[str, Any] = {}
        if font_spec:
            spec: dict[str, Any] = dict(font_spec)
            monospace = spec.get("family") == self._scratch.html_parser.PREFORMATTED_FONT_FAMILY
            base = tkfont.nametofont(str(self.text.cget("font")), root=self.text).actual()
            size = int(spec.get("size") or 14)
            font = tkfont.Font(
                root=self.text,
                family=self._mono_family() if monospace else base["family"],
                size=_scaled(size, int(base["size"])),
                weight=spec.get("weight", "normal"),
                slant=spec.get("slant", "roman"),
                underline=bool(spec.get("underline")),
                overstrike=bool(spec.get("overstrike")),
            )
            self._fonts.append((font, size))
            options["font"] = font
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

    def _mono_family(self) -> str:
        families = {name.lower(): name for name in tkfont.families(self.text)}
        for wanted in ("dejavu sans mono", "liberation mono", "noto sans mono", "courier"):
            if wanted in families:
                return families[wanted]
        return "TkFixedFont"


def _next_block(job: _Job) -> str | None:
    """The job's next block to render, split off its text now if need be; None at the end."""
    if job.next_block < len(job.blocks):
        return job.blocks[job.next_block]
    if job.source is not None:
        for block, code in job.source:
            if code is not None:
                job.codes[len(job.blocks)] = code
            job.blocks.append(block)
            return block
        job.source = None
    return None


def _scaled(html_size: int, body_size: int) -> int:
    """tkhtmlview's sizes assume a 14-point body; scale them to ours."""
    return max(6, round(html_size * body_size / 14))


class _SharedFontFactory:
    """Stands in for ``tkinter.font`` inside tkhtmlview's parser: equal font options give
    the same ``Font``. tkhtmlview creates a new Tk font for every formatting run, and font
    creation was most of its cost: sharing them cut the slowest block from 5.1 to 1.6 ms."""

    families = staticmethod(tkfont.families)

    def __init__(self) -> None:
        self._fonts: dict[tuple[tuple[str, object], ...], tkfont.Font] = {}

    def Font(self, **options: object) -> tkfont.Font:  # noqa: N802 - mirrors tkinter.font.Font
        key = tuple(sorted(options.items()))
        font = self._fonts.get(key)
        if font is None:
            font = self._fonts[key] = tkfont.Font(**options)  # type: ignore[arg-type]
        return font


@contextmanager
def stock_tkhtmlview() -> Iterator[None]:
    """Temporarily give tkhtmlview its own fonts back: the benchmark's baseline measures
    what an app that just calls ``set_html`` would get."""
    from tkhtmlview import html_parser

    shared = html_parser.font
    html_parser.font = tkfont
    try:
        yield
    finally:
        html_parser.font = shared


def _share_fonts(html_parser: Any) -> None:
    """Main thread. Install the shared font factory in tkhtmlview's parser module (once)."""
    if not isinstance(html_parser.font, _SharedFontFactory):
        html_parser.font = _SharedFontFactory()
