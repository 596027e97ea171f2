"""The browser page's words (``tkchat/serve/static/i18n.js``), checked without a browser
(issue 35): read from Python, both languages have the same keys and the same ``{names}``;
every key ``index.html`` and ``app.js`` use is one of them; and the English that ``index.html``
keeps for a browser without script is ``i18n.js``'s English. tests/test_browser_i18n.py shows
the page in both languages in Chromium.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

STATIC = Path(__file__).resolve().parent.parent / "tkchat" / "serve" / "static"
ENTRY = re.compile(r"\s*'([\w.]+)': '((?:[^'\\]|\\.)*)',")
NAME = re.compile(r"\{(\w+)\}")
# A name one language fills that the other says differently: English "3rd in line" takes the
# ordinal, Chinese "排在第 3 位" the number.
SAME_NAME = {"ordinal": "n"}


def read_strings() -> dict[str, dict[str, str]]:
    """``i18n.js``'s STRINGS: one ``'key': 'text',`` a line (anything else in the block fails)."""
    source = (STATIC / "i18n.js").read_text(encoding="utf-8")
    block = source[source.index("  const STRINGS = {\n") : source.index("\n  };\n")]
    strings: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in block.splitlines()[1:]:
        if (start := re.fullmatch(r"    (\w+): \{", line)) is not None:
            current = strings.setdefault(start[1], {})
        elif line != "    },":
            entry = ENTRY.fullmatch(line)
            assert entry is not None, f"not one 'key': 'text', entry: {line!r}"
            current[entry[1]] = re.sub(r"\\(.)", r"\1", entry[2])
    return strings


class Keys(HTMLParser):
    """index.html's data-i18n* keys, with the English each element holds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: dict[str, str] = {}  # key -> the element's text
        self.attributes: list[tuple[str, str]] = []  # (key, the attribute's English)
        self._open: list[tuple[str, str]] = []  # (tag, key) of data-i18n elements open
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = {name: value or "" for name, value in attrs}
        for suffix, attribute in (("title", "title"), ("placeholder", "placeholder")):
            if f"data-i18n-{suffix}" in given:
                self.attributes.append((given[f"data-i18n-{suffix}"], given[attribute]))
        if "data-i18n-aria-label" in given:
            self.attributes.append((given["data-i18n-aria-label"], given["aria-label"]))
        if "data-i18n" in given:
            self._open.append((tag, given["data-i18n"]))
            self._text = ""

    def handle_data(self, data: str) -> None:
        if self._open:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            self.texts[self._open.pop()[1]] = " ".join(self._text.split())


def index_keys() -> Keys:
    keys = Keys()
    keys.feed((STATIC / "index.html").read_text(encoding="utf-8"))
    return keys


def test_both_languages_have_every_key_with_the_same_names() -> None:
    strings = read_strings()
    assert set(strings) == {"en", "zh"}
    assert set(strings["en"]) == set(strings["zh"]), set(strings["en"]) ^ set(strings["zh"])
    for key, english in strings["en"].items():
        names = {SAME_NAME.get(name, name) for name in NAME.findall(english)}
        chinese = {SAME_NAME.get(name, name) for name in NAME.findall(strings["zh"][key])}
        # The Chinese says a refusal in its own words; the English shows the server's own.
        assert chinese == names or (key.startswith("refused.") and chinese < names), key
        assert strings["zh"][key].strip(), key


def test_every_word_of_the_page_is_a_key_and_the_html_keeps_the_english() -> None:
    english = read_strings()["en"]
    keys = index_keys()
    assert len(keys.texts) >= 20 and len(keys.attributes) >= 10  # the parser found them
    for key, text in keys.texts.items():
        assert english.get(key) == text, key
    for key, text in keys.attributes:
        assert english.get(key) == text, key
    app = (STATIC / "app.js").read_text(encoding="utf-8")
    used = set(re.findall(r"\bt\('([\w.]+)'[,)]", app))
    assert len(used) > 20 and used <= set(english), used - set(english)
    # The keys app.js builds from a prefix have at least one entry each.
    for prefix in re.findall(r"has\('([\w.]+\.)' \+", app):
        assert any(key.startswith(prefix) for key in english), prefix
