"""Exercise: move a streaming answer from the model to the screen without freezing the window.

Copy this file (``cp lessons/exercises/pipeline_template.py mine.py``), fill in the three
methods, and run it:

    tkchat --mode mine.py:Pipeline --backend scripted --rate 2000
    tkchat selftest --mode mine.py:Pipeline

The instructions are in ``lessons/exercises/README.en.md`` (中文: ``README.zh.md``).

Everything the window lets a pipeline use is in ``self.host`` (``tkchat/ui/pipeline.py``,
``PipelineHost``):

- ``host.controller.start(request)`` starts the model on a *worker thread* and returns the
  number of this generation (``gen``); the worker puts its events on a thread-safe queue.
- ``host.consumer.follow(gen)`` tells the window's 16 ms tick which generation to read: from
  then on, every tick hands the text that arrived to ``show``, and the final event ends the
  answer (which calls ``finish``).
- ``host.transcript.append(view, text)`` writes text at the end of the answer ``view``.
- ``host.transcript.finish(view, stopped=..., error=...)`` marks the answer stopped or failed
  and then paints its markdown, a slice at a time.

All three methods are called on the Tk main thread. Each must return quickly: while one of
them runs, the window can do nothing else — no click, no key, no redraw.
"""

from __future__ import annotations

from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "mine"  # shown nowhere important: the window names it by its file and class
    broken = False  # True would label it as a deliberately broken demo
    coalesce = True  # may the worker merge chunks when the window falls behind?

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        """Send was pressed: begin generating the answer that ``view`` shows.

        TODO: start the model somewhere that is not this thread, and make sure the window's
        tick will bring you its text. Then return at once."""
        raise NotImplementedError("start(): see the TODO in its docstring")

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        """The 16 ms tick brings the text that arrived since the last one (maybe one chunk,
        maybe hundreds).

        TODO: put it on screen. How many widget updates do you need for all of it?"""
        raise NotImplementedError("show(): see the TODO in its docstring")

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        """The answer ended: by itself, by Stop (``stopped``), or with an ``error`` message.

        TODO: let the transcript mark the answer and render its markdown."""
        raise NotImplementedError("finish(): see the TODO in its docstring")
