"""The pipeline a mode names, made for this window; a file of one's own that fails falls back.

A pipeline of one's own (``--mode mine.py:Pipeline``) that cannot be used (it does not parse,
raises, hangs, lacks the class ...) is said in a banner that stays, and the fixed pipeline
answers instead: the window never goes down with the file.

Main thread only.
"""

from __future__ import annotations

import importlib
import sys
import tkinter as tk
from collections.abc import Callable

from tkchat.modes import FIXED, PIPELINES, check_mode, is_outside_mode
from tkchat.ui.base.notice import ERROR, NoticeBanner
from tkchat.ui.base.translator import Translator
from tkchat.ui.pipeline import Pipeline, PipelineHost
from tkchat.ui.teaching.outside import OutsidePipelineError, make_outside_pipeline


def make_pipeline(
    mode: str, host: PipelineHost, translate: Callable[..., str] | None = None
) -> Pipeline:
    """A new pipeline object for one window (some keep per-window state). ``mode`` may name
    a pipeline of one's own, ``path.py:ClassName`` (:mod:`tkchat.ui.teaching.outside`: it raises
    :class:`~tkchat.ui.teaching.outside.OutsidePipelineError` with a sentence in ``translate``'s
    language when the file cannot be used)."""
    check_mode(mode)
    if is_outside_mode(mode):
        return make_outside_pipeline(mode, host, translate)
    module, _, name = PIPELINES[mode].partition(":")
    pipeline: Pipeline = getattr(importlib.import_module(module), name)(host)
    return pipeline


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
