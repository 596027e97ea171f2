"""BROKEN ON PURPOSE — ``blocking``: generate in the click handler, on the Tk main thread.

The classic first version of every chat window: the Send handler calls the model and loops
over its tokens. Each token is inserted and the widget redrawn (``update_idletasks``), so the
text *does* stream — but the main thread never returns to the event loop until the answer is
complete, so no click, key, scroll or Stop is handled, and the heartbeat clock stands still.
"""

from __future__ import annotations

import threading
import time

from tkchat.events import Done, Error, GenerationStats
from tkchat.generate.backend import BackendError, GenerationRequest, PromptProgress
from tkchat.generate.worker import Utf8Assembler
from tkchat.ui.pipeline import EndsInTranscript
from tkchat.ui.transcript.transcript import AnswerView


class GenerateInClickHandler(EndsInTranscript):
    name = "blocking"
    broken = True
    coalesce = False

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Main thread — and it stays here until the whole answer is generated."""
        controller = self.host.controller
        gen = controller.new_gen()
        started = time.perf_counter()
        tokens, seq = 0, 0
        final: Done | Error
        with controller.model_lock:
            try:
                assembler = Utf8Assembler()
                # THE MISTAKE: iterating the model's tokens right here, in the event handler.
                for piece in controller.backend.stream(request, threading.Event()):
                    if isinstance(piece, PromptProgress):
                        continue  # prompt progress: not a token, and this demo has no bar
                    tokens += 1
                    text = assembler.feed(piece)
                    if text:
                        seq += 1
                        self.host.transcript.append(view, text)
                        self.host.redraw()  # redraws the text; handles no input
                stats = GenerationStats(tokens=tokens, elapsed_s=time.perf_counter() - started)
                final = Done(gen, seq + 1, "stop", stats)
            except BackendError as exc:
                final = Error(gen, seq + 1, exc.kind, str(exc))
            except Exception as exc:
                final = Error(gen, seq + 1, type(exc).__name__, f"{type(exc).__name__}: {exc}")
        self.host.end_answer(final)

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Never called: no events travel, the handler wrote the text itself."""
