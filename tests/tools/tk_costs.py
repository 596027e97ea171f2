"""What Tk's Text widget charges for the operations the transcript does, measured alone.

``python -m tests.tools.tk_costs --json docs/runs/tk-costs.json`` (from a clone, on a display or
under Xvfb) builds a bare Text widget, fills it the way a long conversation would, and times
each operation with the main thread's CPU clock (a busy machine delays it, but does not
inflate it the way it inflates wall-clock time); what Tk does on its own afterwards (its
idle redisplay and the line measuring it spreads over 1 ms timers) is timed too, event by
event, for 1.5 s. The figures docs/bench.md quotes about Tk come from this run:

- ``paint near the end``: what one paint of a block costs where an answer streams — 7 plain
  lines replaced by 40 tagged runs, a line appended, the view moved to the end — in an empty
  widget, under a million characters of rich text (a tag every six words, 40 tags), and
  under 3.4 million characters of plain text, by turns;
- ``unset 5,000 marks``: after the text they were in is deleted (they all sit on one line
  then), and before;
- ``configure a tag``: the font of a tag no text has, and of one that covers the text.

Tk-only (no tkchat window, no model). Main thread.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import tkinter as tk
import tkinter.font as tkfont
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tkchat.lab.bench.scenarios.chat_text import long_conversation
from tkchat.lab.display import ensure_display

TAGS = [f"style-{i}" for i in range(40)]
COLUMNS = ("mode", "widget", "widget_chars", "cpu_ms", "cpu_max_ms", "after_ms", "after_max_ms")
REPEATS = 21


class Bench:
    """Text widgets, each in a window of its own, filled differently. Main thread."""

    def __init__(self) -> None:
        self.root = tk.Tk()
        self.fonts = [tkfont.Font(family="DejaVu Sans", size=9 + i % 4) for i in range(4)]
        self.rng = random.Random(7)
        self.texts: dict[str, tk.Text] = {}

    def widget(self, name: str) -> tk.Text:
        """A new Text widget in a window of its own, all of one size and all on screen."""
        window = tk.Toplevel(self.root)
        window.geometry("1000x700")
        text = tk.Text(window, wrap="word", font=("DejaVu Sans", 11))
        text.pack(fill="both", expand=True)
        for number, tag in enumerate(TAGS):
            text.tag_configure(tag, foreground=f"#{number * 5:02x}3030")
            text.tag_configure(tag, font=self.fonts[number % 4])
        self.texts[name] = text
        return text

    def fill(self, text: tk.Text, messages: int, *, rich: bool) -> str:
        """A conversation of ``messages`` into ``text``: plain, or a tag every few words."""
        text.delete("1.0", "end")
        args: list[object] = []
        for _role, message in long_conversation(messages):
            for line in message.split("\n"):
                if rich:
                    words = line.split(" ")
                    for start in range(0, len(words), 6):
                        args += [" ".join(words[start : start + 6]) + " ", (self.rng.choice(TAGS),)]
                    args += ["\n", ()]
                else:
                    args += [line + "\n", ("answer",)]
            if len(args) > 20_000:
                text.insert("end", *args)  # type: ignore[arg-type]
                args = []
        if args:
            text.insert("end", *args)  # type: ignore[arg-type]
        self.settle(text)
        chars = int(text.count("1.0", "end")[0])  # type: ignore[index]
        return f"{chars:,} characters, {'rich' if rich else 'plain'}" if chars > 1 else "empty"

    def settle(self, text: tk.Text) -> None:
        text.see("end")
        text.tk.call(str(text), "count", "-update", "-ypixels", "1.0", "end")
        self.after()

    def after(self, seconds: float = 1.5) -> tuple[float, float]:
        """Tk's own events for ``seconds``: their CPU in all, and the longest one's (ms)."""
        import _tkinter

        end = time.perf_counter() + seconds
        busy = longest = 0.0
        while time.perf_counter() < end:
            began = time.thread_time()
            if self.root.tk.dooneevent(_tkinter.DONT_WAIT):
                spent = time.thread_time() - began
                busy += spent
                longest = max(longest, spent)
            else:
                time.sleep(0.0005)
        return busy * 1000, longest * 1000

    def paint_near_the_end(self, text: tk.Text) -> None:
        """One block painted where an answer streams: 7 plain lines replaced by 40 tagged
        runs, a line appended, the view at the end. (The widget ends 7 lines longer.)"""
        block = ("A paragraph of plain text that is about to be painted. " * 5 + "\n") * 7
        text.insert("end", block, ("answer",))
        text.delete("end-8l linestart", "end-1l linestart")
        runs: list[object] = []
        words = block.split(" ")
        for start in range(0, len(words), 8):
            runs += [" ".join(words[start : start + 8]) + " ", (self.rng.choice(TAGS),)]
        text.insert("end-1c", *runs)  # type: ignore[arg-type]
        text.insert("end", "and the next line arrives\n", ("answer",))
        text.see("end")
        text.dlineinfo("end-1c")


def _row(
    mode: str, widget: str, text: tk.Text, spent: list[float], after: list[Any]
) -> dict[str, Any]:
    return {
        "mode": mode,
        "widget": widget,
        "widget_chars": int(text.count("1.0", "end")[0]),  # type: ignore[index]
        "cpu_ms": round(statistics.median(spent), 2),
        "cpu_max_ms": round(max(spent), 2),
        "after_ms": round(statistics.median(busy for busy, _ in after), 2),
        "after_max_ms": round(max(longest for _, longest in after), 2),
    }


def _timed(
    bench: Bench, mode: str, widget: str, text: tk.Text, call: Callable[[], None]
) -> dict[str, Any]:
    """One call, then Tk's own work after it."""
    bench.after(0.2)
    began = time.thread_time()
    call()  # (its redisplay, at idle, is in what follows)
    spent = [(time.thread_time() - began) * 1000]
    return _row(mode, widget, text, spent, [bench.after()])


def _paints(bench: Bench, widgets: dict[str, str]) -> list[dict[str, Any]]:
    """The paint in each widget by turns, so that a machine getting busier or quieter meanwhile
    weighs on all of them alike."""
    spent: dict[str, list[float]] = {name: [] for name in widgets}
    after: dict[str, list[Any]] = {name: [] for name in widgets}
    for _ in range(REPEATS):
        for name in widgets:
            text = bench.texts[name]
            bench.after(0.05)
            began = time.thread_time()
            bench.paint_near_the_end(text)
            spent[name].append((time.thread_time() - began) * 1000)
            after[name].append(bench.after(0.3))
    return [
        _row("paint near the end", widgets[name], bench.texts[name], spent[name], after[name])
        for name in widgets
    ]


def _marks(text: tk.Text, before: bool) -> None:
    for number in range(5_000):
        text.mark_set(f"m{number}", f"{number * 3 + 1}.0")
    names = [f"m{number}" for number in range(5_000)]
    if before:
        text.mark_unset(*names)
        text.delete("1.0", "end")
    else:
        text.delete("1.0", "end")
        text.mark_unset(*names)


def run() -> list[dict[str, Any]]:
    ensure_display()
    bench = Bench()
    widgets = {
        "empty": bench.fill(bench.widget("empty"), 0, rich=False),
        "rich": bench.fill(bench.widget("rich"), 300, rich=True),
        "plain": bench.fill(bench.widget("plain"), 1000, rich=False),
    }
    rows = _paints(bench, widgets)
    for before in (False, True):
        text = bench.texts["plain"]
        widget = bench.fill(text, 1000, rich=False)
        mode = f"unset 5,000 marks {'before' if before else 'after'} deleting their text"

        def marks(text: tk.Text = text, before: bool = before) -> None:
            _marks(text, before)

        rows.append(_timed(bench, mode, widget, text, marks))
    text = bench.texts["rich"]
    spare = tkfont.Font(family="DejaVu Sans", size=12)
    for mode, tag in (("no text has", "unused"), ("on the text", TAGS[0])):

        def configure(tag: str = tag) -> None:
            text.tag_configure(tag, font=spare)

        rows.append(
            _timed(bench, f"configure the font of a tag {mode}", widgets["rich"], text, configure)
        )
    bench.root.destroy()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tools.tk_costs", description=__doc__)
    parser.add_argument("--json", type=Path, metavar="PATH", help="keep the run here")
    args = parser.parse_args(argv)
    started = time.time()
    load_before = round(os.getloadavg()[0], 2)
    rows = run()
    for row in rows:
        print("  ".join(f"{key}={row[key]}" for key in COLUMNS))
    if args.json is not None:
        payload = {
            "command": "python -m tests.tools.tk_costs " + " ".join(sys.argv[1:]),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
            "python": sys.version.split()[0],
            "tk": tk.Tcl().eval("info patchlevel"),
            "load_1min": [load_before, round(os.getloadavg()[0], 2)],
            "columns": list(COLUMNS),
            "runs": rows,
            "targets": [],
        }
        args.json.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
