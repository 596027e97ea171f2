"""The last line of defence between model output and tkhtmlview: an HTML allow-list.

Model text is untrusted, and tkhtmlview acts on markup: it fetches ``<img src="http...">``
with a blocking ``requests.get`` on the Tk main thread, opens any local file an ``img src``
names, and opens a web browser when an ``<a href>`` is clicked. :mod:`tkchat.render.to_html`
already keeps raw HTML out of Python-Markdown's output; this module does not rely on that
and rebuilds whatever HTML it is given from a few formatting tags with no attributes at
all, so no output of the render path can load, link or restyle anything.

:func:`sanitize_html` builds a fresh parser per call: any thread may call it.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

ALLOWED_TAGS: frozenset[str] = frozenset(
    {
        "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "em", "i",
        "code", "pre", "blockquote", "ul", "ol", "li", "a", "span",
    }
)  # fmt: skip
"""The only tags :func:`sanitize_html` lets through, without attributes but for one: an
ordered list's first number (``<ol start="8">``, digits only), which can load, link and
restyle nothing."""
MAX_START_DIGITS = 9

_VOID_TAGS = frozenset({"br", "hr"})
_DROP_CONTENT_TAGS = frozenset({"script", "style"})


class _AllowListSanitizer(HTMLParser):
    """Rebuild HTML from allow-listed, attribute-free tags; everything else becomes text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._out: list[str] = []
        self._open: list[str] = []
        self._dropping: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._dropping is not None:
            return
        if tag in _DROP_CONTENT_TAGS:
            self._dropping = tag
        elif tag in ALLOWED_TAGS:
            start = dict(attrs).get("start") if tag == "ol" else None
            if start and start.isascii() and start.isdigit() and len(start) <= MAX_START_DIGITS:
                self._out.append(f'<ol start="{int(start)}">')  # a list split by a paragraph
            else:
                self._out.append(f"<{tag}>")
            if tag not in _VOID_TAGS:
                self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._dropping is not None:
            if tag == self._dropping:
                self._dropping = None
            return
        if tag in self._open:  # close it and anything left open inside it: always balanced
            while self._open:
                top = self._open.pop()
                self._out.append(f"</{top}>")
                if top == tag:
                    break

    def handle_data(self, data: str) -> None:
        if self._dropping is None:
            self._out.append(html.escape(data, quote=False))

    # Comments, doctypes, processing instructions and CDATA sections are dropped: the
    # default handlers of HTMLParser already ignore them.

    def result(self) -> str:
        self.close()
        self._out.extend(f"</{tag}>" for tag in reversed(self._open))
        self._open.clear()
        return "".join(self._out)


def sanitize_html(html_text: str) -> str:
    """Keep only :data:`ALLOWED_TAGS`, with no attributes but an ``ol``'s numeric ``start``;
    escape all text.

    Dropped tags keep their text content (escaped), except ``script`` and ``style`` whose
    content is dropped too. Without attributes nothing can load (no ``src``), link (no
    ``href``) or restyle (no ``style``), so whatever tkhtmlview does with the result, it
    never touches the network or the disk. The output is always balanced.
    """
    parser = _AllowListSanitizer()
    parser.feed(html_text)
    return parser.result()
