"""The pipeline view: the article's stages drawn live as lanes (worker, queue, the 16 ms
tick, the main thread outside a tick, Tk), with slow motion, pause, step and step back.

A room of its own beside ``ui/teaching``: that folder is near its budget of modules, and the
view is an instrument the lessons open rather than part of the lesson panel (the View menu
opens it too). It reads the pipeline's counters (:mod:`~tkchat.ui.stages.feed`), draws them
(:mod:`~tkchat.ui.stages.canvas`), drives the tick and a scripted answer's gate
(:mod:`~tkchat.ui.stages.player`) and holds them in a window (:mod:`~tkchat.ui.stages.window`).
Main thread only.
"""
