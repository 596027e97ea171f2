"""The chat window of ``tkchat record FILE`` and of ``tkchat replay FILE``.

Both are the ordinary window (same pipelines, same lesson panel) around a different backend:
recording wraps the model in :class:`~tkchat.lab.recording.backends.RecordingBackend` and lets a
:class:`~tkchat.lab.recording.recorder.RunRecorder` keep what the window measured; replaying puts a
:class:`~tkchat.lab.recording.backends.ReplayBackend` where the model was, sends the recorded
question, and gives the lesson panel's lag timeline the recorded lag to draw. A banner says
which, so nobody mistakes a replay for a live model.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tkchat.events import FinishReason
from tkchat.generate.backend import Backend
from tkchat.generate.controller import GenerationController
from tkchat.lab.recording.backends import RecordingBackend, ReplayBackend
from tkchat.lab.recording.file import Recording, worst_per_slice
from tkchat.lab.recording.recorder import RunRecorder
from tkchat.lab.window import AppOptions, TkLabWindow, open_lab_window
from tkchat.stats import LagSample
from tkchat.transport.channel import EventChannel

FINISH_REASONS: tuple[FinishReason, ...] = ("stop", "length", "cancelled")


def open_record_window(
    root: tk.Tk, backend: Backend, options: AppOptions, recording: Recording, path: Path
) -> tuple[TkLabWindow, RunRecorder]:
    """The window, recording its next answer into ``path`` (``options.autosend`` is the
    question, as ``--prompt``). The caller saves once more after the main loop ends
    (:meth:`RunRecorder.save` does nothing the second time): a window closed mid-answer
    keeps what it had."""
    wrapped = RecordingBackend(backend)
    controller = GenerationController(wrapped, EventChannel())
    window = open_lab_window(root, controller, options)
    recorder = RunRecorder(window, wrapped, recording, path)
    say = window.instruments.say
    window.instruments.notice(say("recording.recording", path=path))

    def saved() -> None:
        if recorder.error is not None:
            text = say("recording.not_saved", path=path, reason=recorder.error)
        else:
            text = say(
                "recording.saved",
                tokens=len(recording.tokens),
                seconds=f"{recording.duration_s:.2f}",
                path=path,
            )
        if not window.closed:
            window.instruments.notice(text, status=True)

    recorder.on_saved = saved
    controller.load_async()
    return window, recorder


def replay_backend(recording: Recording, speed: float = 1.0) -> ReplayBackend:
    """The recorded answer as a backend: its tokens at their pace, ending as it ended."""
    end = recording.end
    error = end.reason if end is not None and end.kind == "error" else None
    reason: FinishReason = "stop"
    for known in FINISH_REASONS:
        if end is not None and end.reason == known:
            reason = known
    return ReplayBackend(
        [(token.t, token.text) for token in recording.tokens],
        reason=reason,
        error=error,
        speed=speed,
        name=f"replay of {recording.backend}",
    )


MAX_DRAWN_LAGS = 20_000  # lag samples a replay hands the timeline (far more than its columns)


def recorded_lag_source(
    recording: Recording, backend: ReplayBackend, speed: float
) -> Callable[[], list[LagSample]]:
    """What the lesson panel's timeline calls for the recorded lag: the recording's, placed
    where the latest replayed answer began. Thinned once, here, before the window runs
    (:func:`~tkchat.lab.recording.file.worst_per_slice`), so an answer's start costs the main
    thread at most :data:`MAX_DRAWN_LAGS` samples, whatever the file holds."""
    lags = worst_per_slice(recording.lags, MAX_DRAWN_LAGS)
    drawn: dict[float, list[LagSample]] = {}

    def recorded_lag() -> list[LagSample]:
        origin = backend.started
        if origin is None:
            return []
        if origin not in drawn:
            drawn.clear()
            drawn[origin] = recording.lag_samples(origin, speed, lags)
        return drawn[origin]

    return recorded_lag


def open_replay_window(
    root: tk.Tk, recording: Recording, options: AppOptions, speed: float = 1.0
) -> tuple[TkLabWindow, ReplayBackend]:
    """The window on the recorded answer: it sends the recorded question at once (unless
    ``options.autosend`` says another), through ``options.mode``'s pipeline."""
    backend = replay_backend(recording, speed)
    options = replace(
        options,
        autosend=options.autosend or recording.prompt,
        recorded_lag=recorded_lag_source(recording, backend, speed),
    )
    controller = GenerationController(backend, EventChannel())
    window = open_lab_window(root, controller, options)
    tools = window.instruments
    machine = recording.machine
    cpus = machine.get("cpus")
    where = ", ".join(
        str(value)
        for value in (machine.get("platform"), f"{cpus} CPUs" if cpus else None, recording.backend)
        if value
    )
    tools.notice(
        tools.say(
            "recording.replaying",
            started_at=recording.started_at,
            machine=where,
            mode=recording.mode,
            now=tools.pipeline.name,
        )
    )
    controller.load_async()
    return window, backend
