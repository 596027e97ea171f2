"""tkhtmlview's layout of a piece of prose, made without a widget, on a thread of its own.

The transcript's rich text comes from tkhtmlview: its HTML parser decides the text (bullets,
list numbers, tabs, blank lines) and the look of every run (font, colour, justification,
tabs). It writes both into a Tk Text widget, which the painter then read back: for a list of
600 characters, about 5 ms of the main thread's time per piece (2026-12-04, the bundled
model's answer), most of it in Python (Python-Markdown, the HTML parser, tkhtmlview's
bookkeeping) and the rest in Tk calls. That was the costliest callback of a streaming answer:
its last block, painted when the answer ends.

Here the same parser writes into :class:`_Page`, a few lines of Python that answer the five
calls it makes of a Text widget (insert at the end, the end's index, the last characters,
deleting the last one, the background) as Tk would. Its records are turned into runs the way
Tk's tag ranges would have made them: a tag covers its record's index up to the next
record's, and where two cover a character (the parser took a space back after recording an
index), the one that begins later is on top. :class:`HtmlLayout` returns the same runs as
the widget did, with the look as a :data:`StyleKey` instead of the widget's tag
(tests/test_html_layout.py compares the two on every lesson and a long generated chat).

:mod:`.preparer` runs it on a thread of its own (``tkchat-markdown``): the painter asks for
a piece as soon as its block is complete and paints it once it is laid out, so the main
thread only maps looks to the transcript's tags and inserts. Nothing here touches Tk; an
:class:`HtmlLayout` is used by one thread (the preparer's, or the main thread's own).
"""

from __future__ import annotations

from typing import Any

# A run's look, as tkhtmlview's records say it: the font's options, the foreground, (the
# background, never used), the justification, the tabs.
StyleKey = tuple[tuple[tuple[str, object], ...], str, str, str, tuple[object, ...]]
StyleRun = tuple[str, StyleKey]
PLAIN_STYLE: StyleKey = ((), "", "", "", ())


def style_key(record: dict[str, Any] | None) -> StyleKey:
    """The look a tkhtmlview record describes (None: text no record covers)."""
    if record is None:
        return PLAIN_STYLE
    config = record.get("config", {})
    return (
        tuple(sorted(record.get("font", {}).items())),
        str(config.get("foreground") or ""),
        "",
        str(config.get("justify") or ""),
        tuple(config.get("tabs") or ()),
    )


class _Page:
    """What tkhtmlview's parser asks of a Text widget, answered as Tk would: it only ever
    writes at the end, so the text is a list of pieces and the end's line and column are
    counted as they grow."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.line = 1
        self.column = 0

    @property
    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def _last(self, count: int) -> str:
        """The last ``count`` characters (fewer if there are not as many)."""
        tail = ""
        for part in reversed(self.parts):
            tail = part[-(count - len(tail)) :] + tail
            if len(tail) >= count:
                break
        return tail

    def insert(self, _index: str, chars: str, *_tags: object) -> None:
        if not chars:
            return
        self.parts.append(chars)
        lines = chars.count("\n")
        if lines:
            self.line += lines
            self.column = len(chars) - chars.rfind("\n") - 1
        else:
            self.column += len(chars)

    def index(self, index: str) -> str:
        assert index == "end-1c", index  # the only index the parser asks for
        return f"{self.line}.{self.column}"

    def get(self, start: str, end: str) -> str:
        assert end == "end-1c" and start in ("end-2c", "end-3c"), (start, end)
        return self._last(2 if start == "end-3c" else 1)

    def delete(self, start: str, end: str) -> None:
        assert (start, end) == ("end-2c", "end-1c"), (start, end)
        text = self.text
        if text:
            self.parts[:] = [text[:-1]]
            self.line = text.count("\n", 0, len(text) - 1) + 1
            self.column = len(text) - 1 - (text.rfind("\n", 0, len(text) - 1) + 1)

    def cget(self, _option: str) -> str:
        return ""  # the background: no look the transcript takes from tkhtmlview

    def image_create(self, *_args: object, **_options: object) -> None:
        """(Never asked: the sanitizer leaves no image.)"""


def numbered_from(parser: Any, tag: str, attrs: list[tuple[str, str | None]]) -> None:
    """After tkhtmlview's parser opened ``tag``: an ordered list numbers from its ``start``
    (tkhtmlview counts every list from 1: a model's list whose items 8 to 10 came after a
    paragraph showed "1. 2. 3.")."""
    start = dict(attrs).get("start") if tag == "ol" else None
    if start and start.isdigit() and parser.list_tags:
        parser.list_tags[-1].index = int(start) - 1


class HtmlLayout:
    """tkhtmlview's parser, without a widget. ``families``: the two font families its parser
    picks on this machine (read from Tk once, on the main thread: :func:`parser_families`).
    One thread uses one layout."""

    def __init__(self, families: tuple[str, str]) -> None:
        from html.parser import HTMLParser

        from tkhtmlview.html_parser import HTMLTextParser

        class _Parser(HTMLTextParser):  # type: ignore[misc]
            def __init__(self) -> None:  # (its own asks Tk for the families)
                HTMLParser.__init__(self)
                self.cached_images: dict[str, object] = {}
                self.DEFAULT_TEXT_FONT_FAMILY, self.PREFORMATTED_FONT_FAMILY = families

            def _w_tags_apply_all(self) -> None:
                if self.strip:  # what tkhtmlview does first; its Tk tags are not made
                    self._text_rstrip()

            def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
                super().handle_starttag(tag, attrs)
                numbered_from(self, tag, attrs)

        self._parser = _Parser()

    def runs(self, html: str) -> list[StyleRun]:
        """The text tkhtmlview shows for ``html``, in runs of one look each, trimmed as the
        transcript shows it: no blank line before or after, and one newline at the end."""
        page = _Page()
        parser = self._parser
        parser.reset()  # (nothing of an earlier piece's HTML is left waiting)
        parser.w_set_html(page, html, strip=True)
        text = page.text
        starts = _line_starts(text)
        records = list(parser._w_tags.items())
        ranges: list[tuple[int, int, int]] = []  # (start, end, record number)
        for number, (index, _record) in enumerate(records):
            start = _offset(index, starts, len(text))
            after = records[number + 1][0] if number + 1 < len(records) else None
            end = len(text) if after is None else _offset(after, starts, len(text))
            if start < end:
                ranges.append((start, end, number))
        runs: list[StyleRun] = []
        for start, end, number in _on_top(ranges, len(text)):
            key = style_key(records[number][1] if number >= 0 else None)
            chunk = text[start:end]
            if runs and runs[-1][1] == key:
                runs[-1] = (runs[-1][0] + chunk, key)
            elif chunk:
                runs.append((chunk, key))
        return _trimmed(runs)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    found = text.find("\n")
    while found >= 0:
        starts.append(found + 1)
        found = text.find("\n", found + 1)
    return starts


def _offset(index: str, starts: list[int], length: int) -> int:
    """Where Tk's ``line.column`` falls in the text: past a line's end, at its end; past the
    last line, at the end."""
    line_text, column_text = index.split(".")
    line, column = int(line_text), int(column_text)
    if line > len(starts):
        return length
    line_end = starts[line] - 1 if line < len(starts) else length
    return min(starts[line - 1] + column, line_end)


def _on_top(ranges: list[tuple[int, int, int]], length: int) -> list[tuple[int, int, int]]:
    """The text cut where the record on top changes: (start, end, record number, -1 for
    none). On top is the covering range that begins last (Tk's dump turns it on last)."""
    cuts = sorted({0, length, *(r[0] for r in ranges), *(r[1] for r in ranges)})
    out: list[tuple[int, int, int]] = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        covering = [r for r in ranges if r[0] <= start < r[1]]
        out.append((start, end, max(covering)[2] if covering else -1))
    return out


def _trimmed(runs: list[StyleRun]) -> list[StyleRun]:
    """No newline at the start or the end (tkhtmlview leaves some), then one at the end in
    the last run's look."""
    while runs and runs[-1][0].endswith("\n"):
        chunk, key = runs[-1]
        runs[-1] = (chunk.rstrip("\n"), key)
        if not runs[-1][0]:
            runs.pop()
    while runs and runs[0][0].startswith("\n"):
        chunk, key = runs[0]
        runs[0] = (chunk.lstrip("\n"), key)
        if not runs[0][0]:
            runs.pop(0)
    runs.append(("\n", runs[-1][1] if runs else PLAIN_STYLE))
    return runs


def parser_families() -> tuple[str, str]:
    """Main thread, a Tk root made: the font families tkhtmlview's parser picks here (its
    text's, its code's)."""
    from tkhtmlview.html_parser import Defs, get_existing_font

    return (
        get_existing_font(Defs.DEFAULT_TEXT_FONT_FAMILY),
        get_existing_font(Defs.PREFORMATTED_FONT_FAMILY),
    )
