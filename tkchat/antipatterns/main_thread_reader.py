"""BROKEN ON PURPOSE — ``main-thread-reader``: the worker is right, the reader is not.

Generation runs on a worker thread, exactly as in the fixed pipeline. But the Send handler then
sits in a loop on the main thread, reading the stream event by event and appending each chunk
("await the next chunk in a loop on the UI thread"). Waiting for the next token *is* the main
thread's work now, so the window is as frozen as if the model ran there.
"""

from __future__ import annotations

from tkchat.events import Chunk, Done, Error
from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import EndsInTranscript
from tkchat.ui.transcript.transcript import AnswerView


class ReadStreamOnMainThread(EndsInTranscript):
    name = "main-thread-reader"
    broken = True
    coalesce = False

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Main thread — stuck in the read loop until the final event arrives."""
        gen = self.host.controller.start(request)  # this part is right: a worker generates
        self.host.consumer.follow(-1)  # the pump gets nothing: this loop takes every event itself
        channel = self.host.controller.channel
        while True:
            event = channel.get()  # THE MISTAKE: blocks the main thread for every token
            if not isinstance(event, (Chunk, Done, Error)) or event.gen != gen:
                continue
            if isinstance(event, Chunk):
                self.host.transcript.append(view, event.text)
                self.host.redraw()
            else:
                self.host.end_answer(event)
                return

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """Never called: the read loop consumed the events itself."""
