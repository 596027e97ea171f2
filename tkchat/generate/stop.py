"""Stop strings: the answer ends where one of them begins, and none of it is ever sent.

An OpenAI client may ask for up to four ``stop`` strings. They are checked here, on the
generation side, for every backend, so the window, ``tkchat serve`` and a server relayed by
``tkchat serve --server`` all end an answer at the same place (a remote server is also asked
to stop there, but the worker does not rely on it).

Text arrives in pieces, and a stop string can be cut across two of them (``"smo"`` then
``"oth"``). So :class:`StopScanner` holds back the end of the text that could still be the
beginning of a stop string — at most the longest stop string's length minus one characters —
until the next piece says whether it was one. Text that cannot begin one goes out at once: a
stop string ``"\\n\\n"`` holds back only a trailing newline, never a word.

Worker thread only (one scanner per generation).
"""

from __future__ import annotations

from collections.abc import Sequence


class StopScanner:
    """Finds the first of ``stops`` in text fed piece by piece."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = tuple(dict.fromkeys(s for s in stops if s))  # no empty, no repeats
        self.held = ""  # the end of the text so far that may begin a stop string

    def feed(self, text: str) -> tuple[str, bool]:
        """The text that may be sent now, and whether a stop string was found: then that is
        all of the answer (the stop string and whatever followed it are dropped)."""
        if not self.stops:
            return text, False
        pending = self.held + text
        found = [at for at in (pending.find(stop) for stop in self.stops) if at >= 0]
        if found:
            self.held = ""
            return pending[: min(found)], True
        keep = self._open_tail(pending)
        self.held = pending[len(pending) - keep :] if keep else ""
        return pending[: len(pending) - keep], False

    def flush(self) -> str:
        """The answer ended without a stop string: what was held back is answer text."""
        held, self.held = self.held, ""
        return held

    def _open_tail(self, text: str) -> int:
        """The length of the longest end of ``text`` that begins some stop string (shorter
        than that string: a whole one would have been found)."""
        longest = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:size]):
                    longest = size
                    break
        return longest
