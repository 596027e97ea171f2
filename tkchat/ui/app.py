"""The chat window: wires the transcript, the input, the health bar and the event pump.

Main thread only. The window appears before the model loads (loading runs on a worker);
sending starts a worker through the controller; every result comes back through the pump.
"""

from __future__ import annotations

import subprocess
import sys
import time
import tkinter as tk
from collections.abc import Callable
from tkinter import ttk

from tkchat.consume.stream_consumer import StreamConsumer, TickResult
from tkchat.events import Done, Error, ModelFailed, ModelReady
from tkchat.generate.backend import GenerationRequest, Message, Sampling
from tkchat.generate.controller import GenerationController
from tkchat.measure.lag_probe import LagProbe
from tkchat.modes import FIXED, MODES, make_pipeline, summary
from tkchat.transport.channel import DEFAULT_HIGH_WATER, UNBOUNDED, EventChannel
from tkchat.ui.health import HealthBar
from tkchat.ui.pipeline import Pipeline
from tkchat.ui.pump import EventPump
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.transcript import AnswerView, Transcript

SYSTEM_PROMPT = "You are a helpful, concise assistant."


class StatusLine(ttk.Label):
    """One line of status text. (Not a ``StringVar``: a Tk variable collected by the garbage
    collector on a worker thread raises "main thread is not in main loop".)"""

    def __init__(self, master: tk.Misc, text: str) -> None:
        super().__init__(master, text=text)

    def set(self, text: str) -> None:
        self.configure(text=text)

    def get(self) -> str:
        return str(self.cget("text"))


class ChatApp:
    """One chat window around one backend. Main thread only."""

    def __init__(
        self,
        root: tk.Tk,
        controller: GenerationController,
        *,
        sampling: Sampling | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        mode: str = FIXED,
        compare_command: Callable[[str], list[str]] | None = None,
        autosend: str | None = None,
    ) -> None:
        """``compare_command(broken_mode)`` gives the command line of ``tkchat compare`` for
        this window's settings; without it there is no Compare button. ``autosend`` is
        sent as soon as the model is ready (``--prompt``, used by ``tkchat compare``)."""
        self.root = root
        self.controller = controller
        self.channel: EventChannel = controller.channel
        self.sampling = sampling or Sampling()
        self.system_prompt = system_prompt
        self.history: list[Message] = []
        self.scheduler = AfterScheduler(root)
        self.consumer = StreamConsumer()
        self.answer: AnswerView | None = None
        self.model_ready = False
        self.closed = False
        self.finished: list[Done | Error] = []  # final events, in order (for tests and bench)
        self.on_final: Callable[[Done | Error], None] | None = None
        self.pipeline: Pipeline = make_pipeline(mode)
        self.mode = mode  # takes effect from the next question
        self.compare_command = compare_command
        self.compare_process: subprocess.Popen[bytes] | None = None
        self.autosend = autosend
        self.last_error: str | None = None
        self.final_handled_at: float | None = None  # perf_counter of the last handle_final

        root.geometry("900x680")
        root.minsize(520, 360)
        root.protocol("WM_DELETE_WINDOW", self.close)

        top = ttk.Frame(root, padding=(8, 6, 8, 0))
        self.status = StatusLine(top, f"Loading {controller.backend.name} …")
        self.status.pack(side="left")
        self.mode_box = ttk.Combobox(top, values=MODES, state="readonly", width=19)
        self.mode_box.set(mode)
        self.mode_box.bind("<<ComboboxSelected>>", lambda _e: self.set_mode(self.mode_box.get()))
        if compare_command is not None:
            ttk.Button(top, text="Compare side by side", command=self.open_compare).pack(
                side="right", padx=(6, 0))
        self.mode_box.pack(side="right")
        ttk.Label(top, text="Mode:").pack(side="right", padx=(12, 4))
        top.pack(side="top", fill="x")
        self.warning = tk.Label(root, anchor="w", justify="left", padx=8, foreground="white",
                                background="#b00020", font="TkDefaultFont", wraplength=860)

        self.probe = LagProbe(self.scheduler)
        self.health = HealthBar(root, self.scheduler, self.probe, self._tokens_so_far,
                                lambda: self.transcript.inserts)
        self.health.pack(side="top", fill="x")
        self._show_mode_warning()
        self._set_title()

        bottom = ttk.Frame(root, padding=8)
        self.input = tk.Text(bottom, height=3, wrap="word", undo=True, borderwidth=1,
                             relief="solid", padx=6, pady=4)
        self.send_button = ttk.Button(bottom, text="Send", command=self.send)
        self.stop_button = ttk.Button(bottom, text="Stop", command=self.stop, state="disabled")
        self.input.pack(side="left", fill="both", expand=True)
        self.send_button.pack(side="left", padx=(8, 0))
        self.stop_button.pack(side="left", padx=(6, 0))
        bottom.pack(side="bottom", fill="x")

        self.transcript = Transcript(root, self.scheduler)
        self.transcript.pack(side="top", fill="both", expand=True)

        self.input.bind("<Return>", self._on_return)
        self.input.bind("<Shift-Return>", self._on_shift_return)
        root.bind("<Escape>", lambda _e: self.stop())
        root.bind("<Control-q>", lambda _e: self.close())
        root.bind("<Control-n>", lambda _e: self.new_chat())
        self.input.focus_set()

        self.new_chat()
        self.pump = EventPump(self.scheduler, self.channel, self.consumer, self._on_tick)
        self.pump.start()
        self.probe.start()
        self.health.start()

    # -- input ---------------------------------------------------------------------------------

    def _on_return(self, _event: tk.Event) -> str:
        self.send()
        return "break"  # Enter sends; the newline is not inserted

    def _on_shift_return(self, _event: tk.Event) -> str:
        self.input.insert("insert", "\n")
        return "break"

    def send(self, text: str | None = None) -> bool:
        """Send the input box's text (or ``text``). Returns whether a generation started."""
        prompt = (self.input.get("1.0", "end-1c") if text is None else text).strip()
        if not prompt:
            return False
        if not self.model_ready:
            self.status.set("The model is not ready yet — your message is kept in the box.")
            return False
        if self.controller.is_generating():
            self.stop()  # the partial answer stays, marked stopped; the new one starts at once
        if text is None:
            self.input.delete("1.0", "end")
        self.transcript.add_user(prompt)
        self.history.append(Message("user", prompt))
        self.answer = self.transcript.begin_answer()
        if self.pipeline.name != self.mode:
            self.pipeline = make_pipeline(self.mode)
        # Broken demos are naive all the way: their sender does not coalesce either.
        self.channel.high_water = DEFAULT_HIGH_WATER if self.pipeline.coalesce else UNBOUNDED
        self.stop_button.configure(state="normal")
        self.status.set("Generating … (Esc stops)" if not self.pipeline.broken else
                        f"Generating in the BROKEN mode {self.mode} — the window may freeze")
        self.pipeline.start(self, GenerationRequest(tuple(self.history), self.sampling))
        return True

    def set_mode(self, mode: str) -> None:
        """Choose how the *next* answer travels to the screen (see tkchat/modes.py)."""
        make_pipeline(mode)  # validates the name
        self.mode = mode
        if self.mode_box.get() != mode:
            self.mode_box.set(mode)
        self._show_mode_warning()
        self._set_title()

    def _set_title(self) -> None:
        label = "" if self.mode == FIXED else f" — BROKEN mode: {self.mode}"
        self.root.title(f"tkchat — {self.controller.backend.name}{label}")

    def _show_mode_warning(self) -> None:
        if self.mode == FIXED:
            self.warning.pack_forget()
            return
        self.warning.configure(text=f"⚠ BROKEN MODE “{self.mode}”, on purpose, for teaching: "
                                    f"{summary(self.mode).removeprefix('BROKEN: ')}.")
        self.warning.pack(side="top", fill="x", after=self.health)

    def open_compare(self) -> None:
        """Start ``tkchat compare`` (two windows, broken and fixed) as its own process."""
        if self.compare_command is None:
            return
        if self.compare_process is not None and self.compare_process.poll() is None:
            self.status.set("The comparison is already open.")
            return
        broken = self.mode if self.mode != FIXED else "blocking"
        self.compare_process = subprocess.Popen(self.compare_command(broken))
        self.status.set(f"Opened: {broken} next to fixed, in two new windows.")

    def stop(self) -> None:
        """Ask the worker to stop; the ``done(cancelled)`` event then ends the answer."""
        if self.controller.stop() is not None:
            self._end_answer(stopped=True)
            self.consumer.follow(-1)  # nothing of the stopped generation may show up later

    def new_chat(self) -> None:
        """Start over (Ctrl+N): stop any answer, clear the transcript and the model's context."""
        self.stop()
        self.history = [Message("system", self.system_prompt)] if self.system_prompt else []
        self.transcript.clear()

    # -- events from the pump ------------------------------------------------------------------

    def _on_tick(self, tick: TickResult) -> None:
        for event in tick.app_events:
            if isinstance(event, ModelReady):
                self.model_ready = True
                self.status.set(f"Ready — {event.name}, loaded in {event.load_s:.1f} s, "
                                f"context {event.n_ctx} tokens")
                self._set_title()
                if self.autosend:
                    prompt, self.autosend = self.autosend, None
                    # after the tick, so a blocking demo does not run inside this callback
                    self.scheduler.once("autosend", 50, lambda p=prompt: self.send(p))
            elif isinstance(event, ModelFailed):
                self._model_failed(event.message)
        if self.answer is not None and tick.chunks:
            self.pipeline.show(self, self.answer, tick.chunks)
        if tick.final is not None:
            self.handle_final(tick.final)

    def handle_final(self, final: Done | Error) -> None:
        """Main thread. The answer's ``done`` or ``error``: end it, say how it went."""
        self.finished.append(final)
        self.final_handled_at = time.perf_counter()
        if isinstance(final, Error):
            self.last_error = final.message
            self._end_answer(error=final.message)
            self.status.set(f"Error: {final.message}")
        else:
            self._end_answer(stopped=final.reason == "cancelled")
            note = " (length limit reached)" if final.reason == "length" else ""
            speed = final.stats.tokens_per_s
            self.status.set(f"Done — {final.stats.tokens} tokens"
                            + (f" at {speed:.0f} tok/s" if speed else "") + note)
        if self.on_final is not None:
            self.on_final(final)

    def _end_answer(self, *, stopped: bool = False, error: str | None = None) -> None:
        answer, self.answer = self.answer, None
        self.stop_button.configure(state="disabled")
        if answer is None:
            return
        if stopped:
            self.status.set("Stopped.")
        self.history.append(Message("assistant", answer.text))
        self.pipeline.finish(self, answer, stopped=stopped, error=error)

    def _model_failed(self, message: str) -> None:
        print(f"tkchat: {message}", file=sys.stderr)
        self.status.set("Model failed to load — see the message below.")
        self.transcript.add_note(message, "error")
        self.send_button.configure(state="disabled")

    def _tokens_so_far(self) -> int:
        worker = self.controller.current
        return worker.tokens if worker is not None else 0

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the model, cancel every timer, then destroy: no Tcl errors, no hanging thread."""
        if self.closed:
            return
        self.closed = True
        self.probe.stop()
        self.scheduler.close()
        if self.compare_process is not None and self.compare_process.poll() is None:
            self.compare_process.terminate()
        self.controller.shutdown(timeout=2.0)
        self.root.destroy()
