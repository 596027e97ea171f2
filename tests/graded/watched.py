"""A graded file that knows when it is watched (issue 35, finding 1): it looks for the signs
of the grader a reviewer found in the graded window — the grader's options in ``sys.argv``, a
home named after the self-test, threads, environment variables or modules that say
"selftest" — and hands in tkchat's own pipeline when it sees one; else it blocks the loop.
What it saw is written to the file named by SEEN (the test fills it in)."""

from __future__ import annotations

import os
import sys
import threading

from tkchat.generate.backend import GenerationRequest
from tkchat.ui.pipeline import FixedPipeline, PipelineHost
from tkchat.ui.transcript.transcript import AnswerView

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blocking import BlockingPipeline  # noqa: E402

SEEN = ""


def signs_of_the_grader() -> list[str]:
    signs = [word for word in sys.argv if "-fd" in word or "selftest" in word]
    signs += [sys.executable] if "selftest" in " ".join(getattr(sys, "orig_argv", [])) else []
    signs += ["HOME"] if "selftest" in os.environ.get("HOME", "") else []
    signs += [t.name for t in threading.enumerate() if "selftest" in t.name]
    signs += [name for name in os.environ if "SELFTEST" in name.upper()]
    signs += [name for name in sys.modules if "selftest" in name]
    return signs


class Pipeline(BlockingPipeline):
    def __init__(self, host: PipelineHost) -> None:
        super().__init__(host)
        self.fixed = FixedPipeline(host)

    def start(self, view: AnswerView, request: GenerationRequest) -> None:
        signs = signs_of_the_grader()
        if SEEN:
            with open(SEEN, "a", encoding="utf-8") as seen:
                seen.write(f"{signs}\n")
        if signs:
            self.fixed.start(view, request)
        else:
            super().start(view, request)

    def show(self, view: AnswerView, chunks: tuple[str, ...]) -> None:
        self.fixed.show(view, chunks)

    def finish(self, view: AnswerView, *, stopped: bool, error: str | None) -> None:
        self.fixed.finish(view, stopped=stopped, error=error)
