"""A reference solution to ``pipeline_template.py`` (try the exercise before reading it).

It is tkchat's own fixed pipeline (``FixedPipeline`` in ``tkchat/ui/pipeline.py``), written
with nothing but what the template offers:

- generation runs on a worker thread (``controller.start``), never in the Send handler;
- the worker's events travel through a queue, and the window's 16 ms tick drains them, so
  the main thread never waits for the model;
- ``show`` writes everything a tick brought with **one** insert, however many chunks it was;
- the markdown is rendered once, at the end, in slices (``transcript.finish``).

``tkchat selftest --mode lessons/exercises/pipeline_solution.py:Pipeline`` grades it PASS.
"""

from __future__ import annotations

from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "solution"
    broken = False
    coalesce = True  # when the window falls behind, the worker merges chunks still queued

    def __init__(self, host: PipelineHost) -> None:
        self.host = host

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        gen = self.host.controller.start(request)  # a worker thread runs the model
        self.host.consumer.follow(gen)  # the 16 ms tick reads this generation's events

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.host.transcript.append(view, "".join(chunks))  # all of this tick: one insert

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.host.transcript.finish(view, stopped=stopped, error=error)
