"""Syntax highlighting for code blocks, with Pygments, at a cost the main thread can afford.

Lexing is cheap and linear (a 1,000-character piece of Python: about 0.2 ms), and the window
lexes one piece of a code block per callback, like every other block. *Loading* is not: on
this machine importing Pygments took 44 ms, a lexer's first use (its module, its regular
expressions compiled) up to 49 ms, and asking Pygments for a language it does not know 700
ms, because it then searches every installed package for plugins. So lexers are loaded on
one loader thread, found only among Pygments' own (never by the plugin search), and the
window asks :func:`lexer_ready` before it lexes, and tries again a few milliseconds later
if the lexer is still loading. A language Pygments does not know is shown unhighlighted.

Thread: :func:`lexer_ready` is called from the Tk main thread, :func:`highlight` from any
(the window's painter has it done on a thread of its own: tkchat/ui/transcript/preparer.py);
the loader thread only fills the lexer table (under a lock). The table of looks is filled by
whichever thread meets a kind of token first: one dict entry, the same for every thread, so a
look made twice is made the same. Nothing here touches Tk.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any

from tkchat.threads import own_thread

log = logging.getLogger(__name__)

STYLE = "default"  # Pygments' own colour scheme, made for a light background (the default)
_SAMPLE = "x = 1  # warm up\n"  # lexed once when a lexer loads: compiles its expressions
# Names models put after a fence that Pygments spells differently.
_ALIASES = {"plaintext": "text", "plain": "text", "txt": "text", "py3": "python", "golang": "go"}


@dataclass(frozen=True)
class Look:
    """How one kind of token is drawn: a colour ("#rrggbb", or "" for the text colour).

    ``token`` names the kind (Pygments' token type, "" for plain text), so a window that
    changes theme can draw the same kind in another style's look: :func:`restyle`."""

    colour: str = ""
    bold: bool = False
    italic: bool = False
    token: str = ""


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
        self._looks: dict[tuple[str, Any], Look] = {}  # (style, token type) -> look
        self._styles: dict[str, Any] = {}  # style name -> Pygments style (loader thread fills)
        self._tokens: dict[str, Any] = {}  # str(token type) -> token type

    def ready(self, lang: str, style: str = STYLE) -> bool:
        """Main thread. True if ``lang`` can be highlighted now in ``style`` (or never will
        be: it is then shown plain); otherwise its loading is asked for, and False."""
        style_ready = self._ask("style:" + style)
        return (not lang or self._ask(lang.lower())) and style_ready

    def has_style(self, style: str) -> bool:
        with self._lock:
            return style in self._styles

    def _ask(self, key: str) -> bool:
        """Main thread. True if ``key`` is loaded; else its loading is asked for (once)."""
        with self._lock:
            if key in self._ready:
                return True
            if key in self._asked:
                return False
            self._asked.add(key)
            if self._thread is None:
                self._thread = own_thread(self._load_forever, name="tkchat-lexers")
                self._thread.start()
        self._requests.put(key)
        return False

    def lexer(self, lang: str) -> Any:
        with self._lock:
            return self._ready.get(lang.lower())

    def _load_forever(self) -> None:
        """Loader thread: load each language and style asked for, once. (Importing
        Pygments' styles takes some 20 ms: never on the main thread.)"""
        while True:
            key = self._requests.get()
            if key.startswith("style:"):
                self._load_style(key.removeprefix("style:"))
                continue
            try:
                lexer = self._load(key)
            except Exception:  # a broken lexer must not stop the others: show it plain
                log.warning("no highlighting for %r", key, exc_info=True)
                lexer = None
            with self._lock:
                self._ready[key] = lexer

    def _load_style(self, name: str) -> None:
        """Loader thread. A style Pygments does not have falls back to the default."""
        from pygments.styles import get_style_by_name
        from pygments.util import ClassNotFound

        try:
            style = get_style_by_name(name)
        except ClassNotFound:
            log.warning("no Pygments style %r; using %r", name, STYLE)
            style = get_style_by_name(STYLE)
        with self._lock:
            self._styles[name] = style
            self._ready["style:" + name] = style

    def _load(self, key: str) -> Any:
        """Loader thread. The lexer for ``key`` (None if Pygments has none), warmed up."""
        from pygments.lexers import find_lexer_class, get_all_lexers

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

    def look(self, token_type: Any, style_name: str) -> Look:
        """Any thread, once ``style_name`` is loaded (:meth:`ready`)."""
        look = self._looks.get((style_name, token_type))
        if look is None:
            with self._lock:
                style = self._styles[style_name]
            spec = style.style_for_token(token_type)
            colour = spec["color"] or ""
            name = str(token_type)
            self._tokens[name] = token_type
            look = Look(
                f"#{colour}" if colour else "", bool(spec["bold"]), bool(spec["italic"]), name
            )
            self._looks[(style_name, token_type)] = look
        return look

    def restyle(self, look: Look, style_name: str) -> Look | None:
        """Main thread. ``look``'s kind of token in another style (None: not loaded yet)."""
        if not look.token:
            return look
        with self._lock:
            loaded = style_name in self._styles
        token_type = self._tokens.get(look.token)
        if not loaded or token_type is None:
            return None
        return self.look(token_type, style_name)


_LEXERS = _Lexers()


def lexer_ready(lang: str, style: str = STYLE) -> bool:
    """Main thread. Whether :func:`highlight` can run for ``lang`` in ``style`` without
    loading anything; if not, loading starts on the loader thread (ask again later)."""
    return _LEXERS.ready(lang, style)


def restyle(look: Look, style: str) -> Look | None:
    """Main thread. The same kind of token drawn in ``style``; None if that style has not
    been loaded yet (:func:`lexer_ready` with ``lang=""`` asks for it)."""
    return _LEXERS.restyle(look, style)


def highlight(code: str, lang: str, style: str = STYLE) -> list[tuple[str, Look]]:
    """Any thread. ``code`` cut into runs of one look each, in order; joined, the runs are
    ``code`` exactly. Unknown or not yet loaded languages give one plain run. Linear in the
    length of ``code`` (one pass of the lexer, adjacent runs of one look merged)."""
    lexer = _LEXERS.lexer(lang) if lang else None
    if lexer is None or not code or not _LEXERS.has_style(style):
        return [(code, PLAIN)] if code else []
    runs: list[tuple[str, Look]] = []
    parts: list[str] = []  # the text of the run being gathered (joined once: linear)
    current = PLAIN
    try:
        for token_type, value in lexer.get_tokens(code):
            # Whitespace joins the run it is in: its colour cannot be seen, and fewer runs
            # mean fewer tagged ranges in the transcript.
            look = _LEXERS.look(token_type, style) if value.strip() else current
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
