"""The pipeline view's window: the control strip, the lanes, the keys.

Opened from the View menu (F9) and by the demo of a lesson that shows it (``stages: yes``
in its header: lessons 04, 06, 07, 11 and 13). A demo opens it behind the chat: the class
watches the chat while the answer streams (at projector size the view covers the whole
screen, Send included), and F9 brings the view, with every moment of the answer, to the
front. One window at a time (:class:`StageDoor` opens it, or brings it to the front);
closing it puts the tick and the backend back as they were.

Keys (in the view; listed in it and in docs/teaching.md): Space play/pause, → one tick,
↓ one token, ← one moment back, ↑ one moment forward, 1 / 2 / 3 full speed, 1/10, 1/50,
Esc back to the chat (the view stays open behind it).

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
from collections.abc import Callable
from tkinter import ttk

from tkchat.ui.base.translator import Translator
from tkchat.ui.look.scaling import dp, window_size
from tkchat.ui.pump import EventPump
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.stages.canvas import StageCanvas
from tkchat.ui.stages.feed import Lanes, StageFeed, StageSources
from tkchat.ui.stages.player import SPEEDS, StagePlayer

WINDOW_SIZE = (900, 560)  # design pixels: beside the chat
# Text this large (points) or larger — projector mode's, or text made larger — and the view
# opens over the chat, as large as the screen allows: at 900x560, projector text in Chinese
# left the five lanes room for 10-point figures only (1280x720, 2026-12-04).
LARGE_TEXT = 14
LARGE_WINDOW_SIZE = (1280, 720)
KEYS: dict[str, str] = {  # key sequence -> the control it runs
    "<space>": "toggle",
    "<Right>": "step_tick",
    "<Down>": "step_token",
    "<Left>": "back",
    "<Up>": "forward",
    "<Key-1>": "speed_1",
    "<Key-2>": "speed_10",
    "<Key-3>": "speed_50",
    "<Escape>": "to_chat",
}


class StageWindow(tk.Toplevel):
    """The view: the strip of controls, the moment's caption, the lanes, the keys' legend."""

    def __init__(
        self,
        master: tk.Misc,
        translate: Translator,
        sources: StageSources,
        pump: EventPump,
        pipeline_name: Callable[[], str],
        size: int,
        to_chat: Callable[[], None],
    ) -> None:
        """``to_chat()``: put the keyboard back in the chat (Esc: the view goes behind it)."""
        super().__init__(master)
        self.t = translate
        self.to_chat = to_chat
        self.geometry(
            window_size(self, *(LARGE_WINDOW_SIZE if size >= LARGE_TEXT else WINDOW_SIZE))
        )
        self.timers = AfterScheduler(self)
        self.feed = StageFeed(sources)
        self._build(size)
        self.draws = 0  # moments drawn (at most one per tick)
        self.player = StagePlayer(
            self.timers,
            pump,
            self.feed,
            lambda: sources.controller.backend,
            pipeline_name,
            self._show,
        )
        for sequence, control in KEYS.items():
            self.bind(sequence, self._key(control))
        translate.on_change(self._language_changed)  # (a bound method: dropped once closed)
        self._relabel()
        self._show(self.player.history[-1], None)
        self.protocol("WM_DELETE_WINDOW", self.destroy)

    def _build(self, size: int) -> None:
        strip = ttk.Frame(self, padding=dp(self, 6))
        self.buttons: dict[str, ttk.Button] = {}
        for control in ("toggle", "back", "step_tick", "step_token", "forward"):
            button = ttk.Button(strip, command=self._key_command(control))
            button.pack(side="left", padx=(0, dp(self, 4)))
            self.buttons[control] = button
        for speed in reversed(SPEEDS):
            button = ttk.Button(strip, command=self._key_command(f"speed_{speed}"))
            button.pack(side="right", padx=(dp(self, 4), 0))
            self.buttons[f"speed_{speed}"] = button
        strip.pack(side="top", fill="x")
        strip.bind("<Configure>", self._fit_the_strip)
        self.strip = strip
        self.caption = ttk.Label(self, anchor="w", padding=(dp(self, 8), 0))
        self.caption.pack(side="top", fill="x")
        self.legend = ttk.Label(self, anchor="w", justify="left", padding=dp(self, 8))
        self.legend.pack(side="bottom", fill="x")
        self.legend.bind("<Configure>", lambda e: self.legend.configure(wraplength=e.width - 16))
        self.canvas = StageCanvas(self, self.t, size)
        self.canvas.pack(side="top", fill="both", expand=True)

    def _fit_the_strip(self, _event: tk.Event) -> None:
        """At least as wide as the strip of controls, within the screen (with projector text
        in Chinese, 1280x720, the last speed button was squeezed to a sliver). Run on the
        strip's ``<Configure>``: Tk has measured the strip by the time it places it, in a
        layout pass of its own once the callback that opened the view has returned (the
        loop runs its timers in between). Forcing that layout inside that callback
        (update_idletasks) made the building, the new window's whole layout and the lanes'
        fitting one long task (up to about 100 ms at 1280x720 on a projector)."""
        width = min(self.strip.winfo_reqwidth(), self.winfo_screenwidth())
        self.minsize(width, 1)  # the window's own size need not be read: Tk widens it if it must

    # -- controls ----------------------------------------------------------------------------

    def run(self, control: str) -> None:
        """Run a control by name (a key, a button, a test)."""
        player = self.player
        if control == "to_chat":
            self.lower()  # below every other window: the chat, at the front again, has the keys
            self.to_chat()
            return
        if control.startswith("speed_"):
            player.set_speed(int(control.removeprefix("speed_")))
        elif control == "step_token":
            if not player.step_token():
                self.caption.configure(text=self.t("stages.no_token_steps"))
                return
        else:
            getattr(player, control)()
        self._caption()

    def _key(self, control: str) -> Callable[[tk.Event], str]:
        def handler(_event: tk.Event) -> str:
            self.run(control)
            return "break"

        return handler

    def _key_command(self, control: str) -> Callable[[], None]:
        return lambda: self.run(control)

    # -- drawing -----------------------------------------------------------------------------

    def _show(self, lanes: Lanes, before: Lanes | None) -> None:
        self.draws += 1
        self.canvas.draw(lanes, before)
        self._caption()

    def _caption(self) -> None:
        player = self.player
        shown = player.cursor + 1 if player.cursor is not None else len(player.history)
        state = "stages.paused" if player.paused else "stages.playing"
        speed = self.t(
            "stages.speed.full" if player.speed == 1 else "stages.speed.slow", n=player.speed
        )
        self.caption.configure(
            text=self.t(
                "stages.caption",
                state=self.t(state),
                speed=speed,
                shown=shown,
                kept=len(player.history),
                mode=player.shown().mode or "—",
            )
        )

    def _language_changed(self, _lang: str) -> None:
        self._relabel()

    def _relabel(self) -> None:
        self.title(self.t("stages.title"))
        self.buttons["toggle"].configure(text=self.t("stages.button.toggle"))
        for control in ("back", "step_tick", "step_token", "forward"):
            self.buttons[control].configure(text=self.t(f"stages.button.{control}"))
        self.buttons["speed_1"].configure(text=self.t("stages.speed.full"))
        for speed in SPEEDS[1:]:
            self.buttons[f"speed_{speed}"].configure(text=self.t("stages.speed.slow", n=speed))
        self.legend.configure(text=self.t("stages.keys"))
        self.canvas.relabel()
        self.canvas.relayout()
        self._caption()

    def set_font_size(self, size: int) -> None:
        self.canvas.set_font_size(size)

    def destroy(self) -> None:
        self.player.close()
        self.timers.close()
        super().destroy()


class StageDoor:
    """Opens the one pipeline view (or brings it to the front) and knows whether it is open.
    ``size()``: the window's text size now, which the view's lanes follow; ``to_chat()``:
    the keyboard back in the chat."""

    def __init__(
        self,
        root: tk.Misc,
        translate: Translator,
        sources: StageSources,
        pump: Callable[[], EventPump],
        pipeline_name: Callable[[], str],
        size: Callable[[], int],
        to_chat: Callable[[], None],
    ) -> None:
        self.root, self.t, self.sources = root, translate, sources
        self.pump, self.pipeline_name, self.size = pump, pipeline_name, size
        self.to_chat = to_chat
        self.window: StageWindow | None = None

    def open(self, *, front: bool = True) -> StageWindow:
        """Open the view, or bring it back; ``front=False`` (a lesson's demo): behind the
        chat, which keeps the keyboard, so that nothing covers what the class watches."""
        window = self.window
        if window is not None and window.winfo_exists():
            window.deiconify()
            window.player.follow_backend()  # (a lesson's demo may have chosen another)
        else:
            window = self.window = StageWindow(
                self.root,
                self.t,
                self.sources,
                self.pump(),
                self.pipeline_name,
                self.size(),
                self.to_chat,
            )
        if front:
            window.lift()
            window.focus_set()
        else:
            window.lower()
            self.to_chat()
        return window

    def set_font_size(self, size: int) -> None:
        if self.window is not None and self.window.winfo_exists():
            self.window.set_font_size(size)

    def close(self) -> None:
        if self.window is not None and self.window.winfo_exists():
            self.window.destroy()
        self.window = None
