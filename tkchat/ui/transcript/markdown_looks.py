"""How rendered markdown looks in the transcript: a piece of an answer turned into (text, tags)
runs, and the tags and fonts those runs use.

Prose, lists and headings are laid out by tkhtmlview's parser, without a widget and on a
thread of its own (:mod:`.html_layout`): the painter asks :meth:`MarkdownLooks.ready` and
paints the piece once it is laid out; code, quotes and rules are made into runs here
(tkhtmlview draws neither a quote nor a rule, and code gets Pygments' colours). Each look
tkhtmlview gives a run maps to one shared transcript tag, so 200 answers still mean a few
dozen tags, not thousands.

A page rather than a chat (``page=True``: the lesson panel) gets a little more: pipe tables
drawn as aligned columns (a table that fits one piece), list items whose wrapped lines hang
under their text (both laid out in :mod:`.markdown_layout`), Chinese that breaks between its
characters as in print (:func:`~tkchat.ui.look.fit.breakable`), and runs that also say what
they are, for the view to style as it likes (the panel gives headings its fonts and colour,
and code no wrapping): a heading's level (:data:`HEADING_TAGS`), the code of a code block
(:data:`CODE_BLOCK_TAG`), inline code (:data:`INLINE_CODE_TAG`), the blank line under a
heading (:data:`HEADING_GAP_TAG`, which the painter asks for: :meth:`MarkdownLooks.gap_tags`).
The transcript's answers get none of it (every tag a Text widget has slows its deletes down)
but Chinese's breaks, which its painter adds after the soft breaks (ui/look/chinese_wrap.py).

A style's tag is configured once, when the style is first seen, and only again when the
user changes the theme or the font size. Configuring a tag no text has yet costs Tk nothing
afterwards; configuring the font of a tag that covers text makes Tk measure every line it
covers again, spread over small events (tests/tools/tk_costs.py, docs/runs/tk-costs.json).

Main thread only.
"""

from __future__ import annotations

import contextlib
import tkinter as tk
import tkinter.font as tkfont
from dataclasses import dataclass, field
from typing import Any

from tkchat.render.safe_markdown import Look, Piece, block_to_html, highlight, lexer_ready, restyle
from tkchat.render.syntax import ATX_RE
from tkchat.render.tables import pipe_table
from tkchat.ui.look.fit import breakable_runs
from tkchat.ui.look.html_fonts import share_fonts
from tkchat.ui.look.lasting_font import lasting_font
from tkchat.ui.look.palette import LIGHT, Palette
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript.html_layout import HtmlLayout, StyleKey, StyleRun, parser_families
from tkchat.ui.transcript.markdown_layout import (
    TABLE_HEAD_TAG,
    TABLE_TAG,
    ListHanging,
    TableLayout,
)
from tkchat.ui.transcript.preparer import Preparer

LEXER_WAIT_MS = 10  # how soon to look again when a code block waits for its lexer to load
COPY_CODE_TAG = "copy-code"  # the "Copy code" link in each fenced code block's header
# Tags of the looks drawn here rather than by tkhtmlview.
CODE_HEAD_TAG = "md-code-head"  # a code block's header line: its background
CODE_LANG_TAG = "md-code-lang"  # the language's name in it
QUOTE_TAG = "md-quote"
RULE_TAG = "md-rule"
# What a run is, for a view to style (the looks configure none of them):
HEADING_TAGS = tuple(f"md-h{level}" for level in range(1, 7))  # a heading, by its level
CODE_BLOCK_TAG = "md-codeblock"  # the code of a code block (not its header line)
HEADING_GAP_TAG = "md-heading-gap"  # the blank line between a heading and the next block
INLINE_CODE_TAG = "md-inline-code"
_UNBREAKABLE = frozenset(
    {CODE_BLOCK_TAG, CODE_HEAD_TAG, INLINE_CODE_TAG, TABLE_TAG, TABLE_HEAD_TAG}
)
# Sizes on tkhtmlview's scale (a 14-point body), so a new body size rescales them all.
CODE_HTML_SIZE = 13
LABEL_HTML_SIZE = 11

Run = tuple[str, tuple[str, ...]]  # (text, transcript tags)


@dataclass(frozen=True)
class Prepared:
    """A piece made ready off the main thread: its prose as tkhtmlview lays it out, or its
    code cut into Pygments' looks in the Pygments style ``style``."""

    prose: list[StyleRun] = field(default_factory=list)
    code: list[tuple[str, Look]] = field(default_factory=list)
    style: str = ""


class MarkdownLooks:
    """The runs of a piece, and every tag and font they use. Main thread only."""

    def __init__(
        self,
        text: tk.Text,
        scheduler: AfterScheduler,
        *,
        page: bool = False,
    ) -> None:
        """``page``: the looks of a page rather than a chat (see the module docstring)."""
        from tkhtmlview import html_parser  # late: it pulls in PIL and requests

        share_fonts(html_parser)
        self.text = text
        self.scheduler = scheduler
        self.page = page
        self._lists = ListHanging(text)
        families = parser_families()
        self._mono_html_family = families[1]  # tkhtmlview's family for code
        self._layout = HtmlLayout(families)  # this thread's: a piece not prepared in time
        worker_layout = HtmlLayout(families)  # the preparer's thread's
        self.preparer: Preparer[Piece, Prepared] = Preparer(
            lambda piece: self._prepare(piece, worker_layout)
        )
        self.prepared_here = 0  # pieces prepared on this thread all the same
        self._styles: dict[StyleKey, str] = {}
        self._mono_styles: set[str] = set()  # the styles of code
        self._code_roles = (CODE_BLOCK_TAG,) if page else ()  # a code block's code says so
        self._code_tags: dict[Look, str] = {}
        # Named fonts, kept alive while tags use them, with tkhtmlview's size for each (a
        # 14-point body), so a new body size can rescale them all.
        self._fonts: list[tuple[tkfont.Font, int]] = []
        # The same font for every tag that asks for it: Pygments' looks are a dozen tags or
        # more, but code takes four fonts (bold or not, italic or not). A new font costs Tk
        # 0.7 ms and the first list of families 5.6 ms: made for each new look, the first
        # code block of a session was painted in one 12-16 ms slice (2026-12-03).
        self._font_cache: dict[tuple[str, int, str, str, bool, bool], tkfont.Font] = {}
        self._mono: str | None = None
        self.palette = LIGHT  # colours; the transcript hands in the theme's (set_palette)
        self._configure_tags()
        # ... and those four are made while the window has nothing else to do
        scheduler.when_idle(f"markdown-fonts-{id(self)}", self._code_fonts)

    def ready(self, piece: Piece) -> bool:
        """Can :meth:`runs` make ``piece``'s runs now without laying out its prose or
        highlighting its code on this thread? Both are done on the preparer's thread
        (:mod:`.preparer`): the first time this asks for it. (Code asks once its lexer has
        loaded: :func:`~tkchat.render.highlight.lexer_ready`.)"""
        if piece.kind == "hr" or (self.page and piece.kind == "para"):
            return True  # (made here; a page's paragraph may be a table, measured here)
        return self.preparer.ready(piece)

    def runs(self, piece: Piece) -> list[Run]:
        """One piece's runs: rules and tables made here, prose and code as the preparer made
        them ready (:meth:`ready`), or now if it has not."""
        if piece.kind in ("fence", "code"):
            runs = self._code_runs(piece)
        elif piece.kind == "hr":
            return [("\n", (RULE_TAG,))]
        elif self.page and piece.kind == "para" and (rows := pipe_table(piece.markdown)):
            return self._tables.runs(rows)
        else:
            runs = self._html_runs(piece)
            if self.page and piece.kind == "list":
                runs = self._lists.hang(runs)
            extra = (
                QUOTE_TAG if piece.kind == "quote" else _heading_tag(piece) if self.page else None
            )
            if extra:
                runs = [(chunk, (*tags, extra)) for chunk, tags in runs]
        if self.page:
            runs = breakable_runs(runs, lambda tags: not _UNBREAKABLE.isdisjoint(tags))
        return runs

    def gap_tags(self, after: str) -> tuple[str, ...]:
        """The tags of the blank line between a block of kind ``after`` and the next."""
        return (HEADING_GAP_TAG,) if self.page and after == "heading" else ()

    def set_body_size(self, size: int) -> None:
        """Rescale every rendered style to a new body font size (the font size setting)."""
        for font, html_size in self._fonts:
            font.configure(size=_scaled(html_size, size))
        if self.page:
            self._tables.measure_again()

    def close(self) -> None:
        """The view is going away: so does the preparer's thread."""
        self.preparer.close()

    # -- a piece -> runs -----------------------------------------------------------------------

    def _prepare(self, piece: Piece, layout: HtmlLayout) -> Prepared:
        """What ``piece`` needs before it is painted, with no Tk: its code cut into looks in
        the palette's Pygments style, or its prose laid out by ``layout`` (the calling
        thread's). The preparer's thread, or this one's for a piece not prepared in time."""
        if piece.kind in ("fence", "code"):
            style = self.palette.pygments_style
            return Prepared(
                code=highlight(piece.code_text() + "\n", piece.lang, style), style=style
            )
        return Prepared(prose=layout.runs(block_to_html(piece.markdown)))

    def _prepared(self, piece: Piece) -> Prepared:
        """``piece`` as the preparer made it ready, or made ready now (the palette changed
        since, or it was not asked for)."""
        done = self.preparer.take(piece)
        if done is None or (done.style and done.style != self.palette.pygments_style):
            self.prepared_here += 1
            done = self._prepare(piece, self._layout)
        return done

    def _html_runs(self, piece: Piece) -> list[Run]:
        """The piece as tkhtmlview lays it out, each look one shared transcript tag."""
        return [(chunk, self._style_tags(key)) for chunk, key in self._prepared(piece).prose]

    def _style_tags(self, key: StyleKey) -> tuple[str, ...]:
        """The run's style tag, and :data:`INLINE_CODE_TAG` if it is code."""
        tag = self._style_tag(key)
        return (tag, INLINE_CODE_TAG) if self.page and tag in self._mono_styles else (tag,)

    def _code_runs(self, piece: Piece) -> list[Run]:
        """A code block: on its first piece a header line (the language, then the copy link,
        whose text is filled in when inserted), then the code in Pygments' colours."""
        runs: list[Run] = []
        if piece.kind == "fence" and piece.first:
            if piece.lang:
                runs.append((piece.lang + "    ", (CODE_LANG_TAG, CODE_HEAD_TAG)))
            runs.append(("", (COPY_CODE_TAG, CODE_HEAD_TAG)))
            runs.append(("\n", (CODE_HEAD_TAG,)))
        for chunk, look in self._prepared(piece).code:
            runs.append((chunk, (self._code_tag(look), *self._code_roles)))
        return runs

    def _code_tag(self, look: Look) -> str:
        """One transcript tag per look of highlighted code."""
        tag = self._code_tags.get(look)
        if tag is None:
            tag = f"md-code-{len(self._code_tags)}"
            self._code_tags[look] = tag
            font = self._code_font(bold=look.bold, italic=look.italic)
            # one configure (each costs Tk a relayout of the text that has the tag)
            colours = self._code_colours(look)
            self.text.tag_configure(tag, colours, font=font, lmargin1=24, lmargin2=24)
        return tag

    def _code_font(self, *, bold: bool, italic: bool) -> tkfont.Font:
        weight, slant = "bold" if bold else "normal", "italic" if italic else "roman"
        return self._font(self._mono_family(), CODE_HTML_SIZE, weight=weight, slant=slant)

    def _code_fonts(self) -> None:
        """The four fonts of code, made before a code block needs them (an idle callback)."""
        with contextlib.suppress(tk.TclError):  # the widget went first
            for bold in (False, True):
                for italic in (False, True):
                    self._code_font(bold=bold, italic=italic)

    def _code_colours(self, look: Look) -> dict[str, Any]:
        return {
            "background": self.palette.code_background,
            "foreground": look.colour or self.palette.code_text,
        }

    def _colour_code_tag(self, tag: str, look: Look) -> None:
        self.text.tag_configure(tag, self._code_colours(look))

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
        self._rule_font = lasting_font(root=self.text, family=base, size=-2)
        self.text.tag_configure(RULE_TAG, font=self._rule_font)
        if self.page:
            head = self._font(base, 14, weight="bold")
            self._tables = TableLayout(self.text, self._font(base, 14), head)
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
        if self.page:
            self._tables.set_palette(palette)

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
        """A named font at ``html_size`` on tkhtmlview's scale, rescaled with the body; one
        per family, size and style."""
        key = (family, html_size, weight, slant, underline, overstrike)
        kept = self._font_cache.get(key)
        if kept is not None:
            return kept
        body = int(tkfont.nametofont(str(self.text.cget("font")), root=self.text).actual()["size"])
        font = lasting_font(
            root=self.text,
            family=family,
            size=_scaled(html_size, body),
            weight=weight,
            slant=slant,
            underline=underline,
            overstrike=overstrike,
        )
        self._fonts.append((font, html_size))
        self._font_cache[key] = font
        return font

    def _style_tag(self, key: StyleKey) -> str:
        """One transcript tag per distinct look (font, colour, justification, tabs), as
        tkhtmlview's parser records it (:func:`~.html_layout.style_key`)."""
        tag = self._styles.get(key)
        if tag is None:
            tag = f"md-style-{len(self._styles)}"
            self._styles[key] = tag
            if dict(key[0]).get("family") == self._mono_html_family:
                self._mono_styles.add(tag)
            self.text.tag_configure(tag, **self._tag_options(key))
            self.text.tag_lower(tag)  # message tags (colours, margins) stay on top
        return tag

    def _tag_options(self, key: StyleKey) -> dict[str, Any]:
        font_spec, foreground, _background, justify, tabs = key
        options: dict[str, Any] = {}
        if font_spec:
            spec: dict[str, Any] = dict(font_spec)
            monospace = spec.get("family") == self._mono_html_family
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
        if family is not None and family == self._mono_html_family:
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
        if self._mono is None:
            families = {name.lower(): name for name in tkfont.families(self.text)}
            wanted = ("dejavu sans mono", "liberation mono", "noto sans mono", "courier")
            found = [families[name] for name in wanted if name in families]
            self._mono = found[0] if found else "TkFixedFont"
        return self._mono


def _heading_tag(piece: Piece) -> str | None:
    """The tag of a heading's level (an ``#`` heading; None for any other piece)."""
    found = ATX_RE.match(piece.markdown) if piece.kind == "heading" else None
    return HEADING_TAGS[len(found.group("marks")) - 1] if found else None


def body_family(widget: tk.Misc) -> str:
    """A font with good Unicode coverage if the system has one; Tk falls back per glyph
    (fontconfig) for Chinese and emoji either way."""
    families = {name.lower(): name for name in tkfont.families(widget)}
    for wanted in ("noto sans", "dejavu sans", "liberation sans", "helvetica"):
        if wanted in families:
            return families[wanted]
    return "TkDefaultFont"


def _scaled(html_size: int, body_size: int) -> int:
    """tkhtmlview's sizes assume a 14-point body; scale them to ours."""
    return max(6, round(html_size * body_size / 14))
