"""The pipeline a mode names, made for this window; a file of one's own that fails falls back.

A pipeline of one's own (``--mode mine.py:Pipeline``) that cannot be used (it does not parse,
raises, hangs, lacks the class ...) is said in a banner that stays, and the fixed pipeline
answers instead: the window never goes down with the file.

Main thread only.
"""

from __future__ import annotations

import sys
import tkinter as tk

from tkchat.modes import FIXED
from tkchat.ui.pipeline import Pipeline, PipelineHost, make_pipeline
from tkchat.ui.teaching.outside import OutsidePipelineError
from tkchat.ui.window.notice import ERROR, NoticeBanner
from tkchat.ui.window.translator import Translator


class PipelineChoice:
    """``choice(mode)``: a new pipeline for ``mode`` around ``host``. ``problem``: why a
    pipeline file of one's own is unused (None while none failed); ``banner``: where that is
    said, after ``anchor`` in ``master`` (made the first time it is needed)."""

    def __init__(
        self, host: PipelineHost, translate: Translator, master: tk.Misc, anchor: tk.Misc
    ) -> None:
        self.host = host
        self.t = translate
        self.master = master
        self.anchor = anchor
        self.problem: str | None = None
        self.banner: NoticeBanner | None = None

    def __call__(self, mode: str) -> Pipeline:
        try:
            return make_pipeline(mode, self.host, self.t)
        except OutsidePipelineError as exc:
            self.problem = exc.sentence(self.t)
            print(f"tkchat: {self.problem}", file=sys.stderr)
            if self.banner is None:
                self.banner = NoticeBanner(self.master, self.anchor, self.t, kind=ERROR)
            self.banner.show(self.t("outside.fallback", problem=self.problem))
            return make_pipeline(FIXED, self.host)
