"""``tkchat record FILE``: what the window saw of one answer, kept for a replay elsewhere.

The tokens come from :class:`~tkchat.lab.recording.backends.RecordingBackend` (noted on the worker
thread as the model made them); the rest is the window's, read here on the main thread: the
lag probe's samples, the moments text reached the screen, the clicks, keys and scrolls and how
long each waited for its handler, and how the answer ended. The file is written once, when
the answer ends or the window closes, whichever comes first (:mod:`tkchat.lab.recording.file`
is the format).

Main thread only.
"""

from __future__ import annotations

import time
import tkinter as tk
from collections.abc import Callable
from pathlib import Path

from tkchat.events import Error
from tkchat.lab.recording.backends import RecordingBackend
from tkchat.lab.recording.file import MAX_HEADER_TEXT, End, Input, Lag, Recording, Screen, Token
from tkchat.lab.window import LabWindow, instruments_of

WATCH_MS = 100  # how often the recorder looks whether the answer has ended
# After the answer's end, the recording goes on this long before it is written: a frozen
# loop's one late probe firing comes only once the freeze is over (the ``blocking`` mode's
# end is handled inside its freeze), and it is the sample that matters most.
SETTLE_MS = 300
# The X events counted as input, by what they are (a wheel on X11 is buttons 4 and 5).
INPUT_EVENTS = {
    "<ButtonPress-1>": "click",
    "<ButtonPress-2>": "click",
    "<ButtonPress-3>": "click",
    "<KeyPress>": "key",
    "<ButtonPress-4>": "scroll",
    "<ButtonPress-5>": "scroll",
    "<MouseWheel>": "scroll",
}


class RunRecorder:
    """Records ``window``'s next answer (its tokens from ``backend``) into ``recording``,
    then writes it to ``path`` (once). ``on_saved()``, if set, is called after the write;
    :attr:`error` then says whether it failed."""

    def __init__(
        self, window: LabWindow, backend: RecordingBackend, recording: Recording, path: Path
    ) -> None:
        self.window = window
        self.backend = backend
        self.recording = recording
        self.path = path
        self.opened = time.perf_counter()
        self.done = False
        self.error: OSError | None = None  # why the file could not be written, if it could not
        # (perf_counter when handled, X server time in ms, what it was)
        self.inputs: list[tuple[float, int, str]] = []
        self.on_saved: Callable[[], None] | None = None
        root = instruments_of(window).root  # every X event of the window's toplevel
        for sequence, what in INPUT_EVENTS.items():
            root.bind_all(sequence, self._input_handler(what), add="+")
        window.start_lag_recording()
        window.later("recorder", WATCH_MS, self._watch)

    def _input_handler(self, what: str) -> Callable[[tk.Event], None]:
        def note(event: tk.Event) -> None:
            stamp = event.time
            if not self.done and isinstance(stamp, int) and stamp > 0:
                self.inputs.append((time.perf_counter(), stamp, what))

        return note

    def _watch(self) -> None:
        if self.window.finished:
            self.window.later("recorder", SETTLE_MS, self.save)
        elif not self.done:
            self.window.later("recorder", WATCH_MS, self._watch)

    def save(self) -> None:
        """Write the recording (once). Called when the answer ended, or as the window
        closes with the answer unfinished (it is then recorded as stopped)."""
        if self.done:
            return
        self.done = True
        now = time.perf_counter()
        origin = self.backend.started or self.opened
        finished = self.window.finished
        final = finished[0] if finished else None
        ended = now
        rec = self.recording
        asked = self.backend.request
        if asked is not None and asked.messages:
            rec.prompt = asked.messages[-1].content[:MAX_HEADER_TEXT]
        rec.tokens = [Token(round(t, 6), text) for t, text in self.backend.tokens]
        samples = self.window.stop_lag_recording()
        rec.lags = [
            Lag(round(s.at - origin, 6), round(s.lag_ms, 3))
            for s in samples
            if origin <= s.at <= ended
        ]
        window = self.window
        arrivals = instruments_of(window).answer_times().arrivals if window.answers else []
        rec.screen = [
            Screen(round(at - origin, 6), chars) for at, chars in arrivals if at >= origin
        ]
        rec.inputs = [
            Input(round(at - origin, 6), what, round(handled, 3))
            for at, what, handled in self._handled()
            if at >= origin
        ]
        if isinstance(final, Error):
            end = End(round(ended - origin, 6), "error", final.message)
        else:
            end = End(round(ended - origin, 6), "done", final.reason if final else "cancelled")
        rec.end = end
        try:
            rec.save(self.path)
        except OSError as exc:
            self.error = exc
        if self.on_saved is not None:
            self.on_saved()

    def _handled(self) -> list[tuple[float, str, float]]:
        """Each input's wait, from the X server's stamp to its handler: the two clocks share
        no origin, so the quickest input of the run is taken as handled at once."""
        if not self.inputs:
            return []
        offsets = [at * 1000 - stamp for at, stamp, _what in self.inputs]
        floor = min(offsets)
        return [
            (at, what, offset - floor)
            for (at, _stamp, what), offset in zip(self.inputs, offsets, strict=True)
        ]
