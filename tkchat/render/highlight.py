"""Syntax highlighting for code blocks, with Pygments, at a cost the main thread can afford.

Lexing is cheap and linear (a 1,000-character piece of Python: about 0.2 ms), and the window
lexes one piece of a code block per callback, like every other block. *Loading* is not: on
this machine importing Pygments took 44 ms, a lexer's first use (its module, its regular
expressions compiled) up to 49 ms, and asking Pygments for a language it does not know 700
ms, because it then searches every installed package for plugins. So lexers are loaded on
one loader thread, found only among Pygments' own (never by the plugin search), and the
window asks :func:`lexer_ready` before it lexes, and tries again a few milliseconds later
if the lexer is still loading. A language Pygments does not know is shown unhighlighted.

Thread: :func:`lexer_ready` and :func:`highlight` are called from the Tk main thread; the
loader thread only fills the lexer table (under a lock). Nothing here touches Tk.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

STYLE = "default"  # Pygments' own colour scheme, made for a light background
_SAMPLE = "x = 1  # warm up\n"  # lexed once when a lexer loads: compiles its expressions
# Names models put after a fence that Pygments spells differently.
_ALIASES = {"plaintext": "text", "plain": "text", "txt": "text", "py3": "python", "golang": "go"}


@dataclass(frozen=True)
class Look:
    """How one kind of token is drawn: a colour ("#rrggbb", or "" for the text colour)."""

    colour: str = ""
    bold: bool = False
    italic: bool = False


PLAIN = Look()


class _Lexers:
    """The lexer table and its loader thread (started at the first request)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready: dict[str, Any] = {}  # language -> lexer, or None: shown plain
        self._asked: set[str] = set()
        self._requests: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._aliases: dict[str, str] = {}  # alias -> Pygments' lexer name (loader thread)
        self._looks: dict[Any, Look] = {}  # token type -> look (main thread)
        self._style: Any = None

    def ready(self, lang: str) -> bool:
        """Main thread. True if ``lang`` can be highlighted now (or never will be: it is
        then shown plain); otherwise its loading is asked for, and False."""
        key = lang.lower()
        with self._lock:
            if key in self._ready:
                return True
            if key in self._asked:
                return False
            self._asked.add(key)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._load_forever, name="tkchat-lexers", daemon=True
                )
                self._thread.start()
        self._requests.put(key)
        return False

    def lexer(self, lang: str) -> Any:
        with self._lock:
            return self._ready.get(lang.lower())

    def _load_forever(self) -> None:
        """Loader thread: load each language asked for, once."""
        while True:
            key = self._requests.get()
            try:
                lexer = self._load(key)
            except Exception:  # a broken lexer must not stop the others: show it plain
                log.warning("no highlighting for %r", key, exc_info=True)
                lexer = None
            with self._lock:
                self._ready[key] = lexer

    def _load(self, key: str) -> Any:
        """Loader thread. The lexer for ``key`` (None if Pygments has none), warmed up."""
        from pygments.lexers import find_lexer_class, get_all_lexers
        from pygments.styles import get_style_by_name

        if self._style is None:
            self._style = get_style_by_name(STYLE)
        if not self._aliases:
            for lexer_name, aliases, _files, _mimes in get_all_lexers(plugins=False):
                for alias in aliases:
                    self._aliases.setdefault(alias.lower(), lexer_name)
        name = self._aliases.get(_ALIASES.get(key, key))
        cls = find_lexer_class(name) if name else None
        if cls is None:
            return None
        lexer = cls(stripnl=False, ensurenl=False)
        for _ in lexer.get_tokens(_SAMPLE):
            pass
        return lexer

    def look(self, token_type: Any) -> Look:
        """Main thread (the style was loaded with the first lexer)."""
        look = self._looks.get(token_type)
        if look is None:
            style = self._style.style_for_token(token_type)
            colour = style["color"] or ""
            look = Look(f"#{colour}" if colour else "", bool(style["bold"]), bool(style["italic"]))
            self._looks[token_type] = look
        return look


_LEXERS = _Lexers()


def lexer_ready(lang: str) -> bool:
    """Main thread. Whether :func:`highlight` can run for ``lang`` without loading anything;
    if not, loading starts on the loader thread (ask again later)."""
    return not lang or _LEXERS.ready(lang)


def highlight(code: str, lang: str) -> list[tuple[str, Look]]:
    """Main thread. ``code`` cut into runs of one look each, in order; joined, the runs are
    ``code`` exactly. Unknown or not yet loaded languages give one plain run. Linear in the
    length of ``code`` (one pass of the lexer, adjacent runs of one look merged)."""
    lexer = _LEXERS.lexer(lang) if lang else None
    if lexer is None or not code:
        return [(code, PLAIN)] if code else []
    runs: list[tuple[str, Look]] = []
    parts: list[str] = []  # the text of the run being gathered (joined once: linear)
    current = PLAIN
    try:
        for token_type, value in lexer.get_tokens(code):
            # Whitespace joins the run it is in: its colour cannot be seen, and fewer runs
            # mean fewer tagged ranges in the transcript.
            look = _LEXERS.look(token_type) if value.strip() else current
            if look != current and parts:
                runs.append(("".join(parts), current))
                parts = []
            current = look
            parts.append(value)
    except Exception:  # a lexer bug must not lose the code: show it plain
        log.warning("highlighting %r failed; shown plain", lang, exc_info=True)
        return [(code, PLAIN)]
    if parts:
        runs.append(("".join(parts), current))
    if "".join(text for text, _ in runs) != code:  # never show other text than the code
        return [(code, PLAIN)]
    return runs
