"""A typical wrong solution: a helper thread that only keeps the answer in view.

Generation, transport and ``show`` are tkchat's own, and right. But to keep the newest text
in view the student added a small helper thread that scrolls the transcript to its end every
16 ms — one harmless-looking widget call — and gave it a name in tkchat's style,
``tkchat-feeder``. A thread's name changes nothing: only the main thread may call Tk, and
the self-test knows tkchat's own threads by the thread objects tkchat started, not by what
they are called.

Predict what the self-test says, then run:
``tkchat selftest --mode lessons/exercises/wrong/scroll_from_thread.py:Pipeline``
(answer at the end of ``lessons/exercises/README.en.md``).
"""

from __future__ import annotations

import threading

from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import PipelineHost
from tkchat.ui.transcript.transcript import AnswerView


class Pipeline:
    name = "scroll-from-thread"
    broken = False
    coalesce = True

    def __init__(self, host: PipelineHost) -> None:
        self.host = host
        self.streaming = threading.Event()

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        self.host.consumer.follow(self.host.controller.start(request))
        self.streaming.set()
        # THE MISTAKE: a thread that calls a widget (named like tkchat's own: no matter).
        threading.Thread(target=self._follow_end, name="tkchat-feeder", daemon=True).start()

    def _follow_end(self) -> None:
        """The helper thread: every 16 ms, scroll the transcript to its end."""
        while self.streaming.is_set():
            self.host.transcript.text.see("end")
            self.streaming.wait(0.016)

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.host.transcript.append(view, "".join(chunks))

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.streaming.clear()
        self.host.transcript.finish(view, stopped=stopped, error=error)
