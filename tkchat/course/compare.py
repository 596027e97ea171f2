"""``tkchat compare``: a broken mode and the fixed pipeline, in two windows side by side.

Two *processes*, not two windows of one process: one Tk main thread cannot be frozen and
smooth at the same time. Both get the same prompt and the same seed, so with the same model
they produce the same answer — the only difference is how it reaches the screen.

``--toolkit`` picks the windows: two Tk ones (a broken mode beside fixed), two Qt ones (Qt's
broken ``no-coalesce`` beside Qt fixed), or ``both``: the Qt client beside the Tk window, both
fixed — the same pipeline in two toolkits.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from types import FrameType

from tkchat.modes import FIXED

COMPARE_TOOLKITS: tuple[str, ...] = ("tk", "qt", "both")
# The broken window when none is named: Tk's most visible freeze; Qt's own mistake.
DEFAULT_BROKEN = {"tk": "blocking", "qt": "no-coalesce"}

DEFAULT_PROMPTS = {
    "en": "Explain, with a short Python example, why a chat window can freeze while a "
    "language model streams its answer.",
    "zh": "用一个简短的 Python 例子解释：语言模型流式输出回答时，聊天窗口为什么会卡住。",
}


def default_prompt(language: str | None) -> str:
    """The prompt both windows send when none is given: in ``language`` (None: the
    system's, as the windows choose theirs)."""
    from tkchat.course.lessons import default_language

    return DEFAULT_PROMPTS[language or default_language()]


def window_args(language: str | None, projector: bool) -> list[str]:
    """A compare window's language and projector mode, as command-line options."""
    return [*(["--lang", language] if language else []), *(["--projector"] if projector else [])]


def compare_command(broken: str, model_args: list[str]) -> list[str]:
    """The command line of ``tkchat compare`` for a window's model options (the window adds
    its language and projector mode: ``--lang``, ``--projector``)."""
    return [sys.executable, "-m", "tkchat", "compare", "--broken", broken, *model_args]


def windows(broken: str | None, toolkit: str) -> list[tuple[str, str]]:
    """The two windows, left then right, as (toolkit, mode)."""
    if toolkit == "both":
        return [("qt", FIXED), ("tk", FIXED)]
    return [(toolkit, broken or DEFAULT_BROKEN[toolkit]), (toolkit, FIXED)]


def window_commands(
    broken: str | None,
    model_args: list[str],
    *,
    prompt: str,
    seed: int,
    max_tokens: int,
    screen: tuple[int, int],
    toolkit: str = "tk",
) -> list[list[str]]:
    """The two child command lines: broken (or Qt) on the left, fixed on the right."""
    width, height = screen
    half = max(480, width // 2 - 12)
    tall = max(420, min(height - 80, 800))
    commands = []
    for index, (kit, mode) in enumerate(windows(broken, toolkit)):
        commands.append(
            [
                sys.executable,
                "-m",
                "tkchat",
                *model_args,
                *(["--toolkit", "qt"] if kit == "qt" else []),
                "--mode",
                mode,
                "--prompt",
                prompt,
                "--seed",
                str(seed),
                "--max-tokens",
                str(max_tokens),
                "--geometry",
                f"{half}x{tall}+{index * (half + 12)}+0",
                "--no-history",  # a demonstration, not a conversation to keep
            ]
        )
    return commands


def _screen_size() -> tuple[int, int]:
    import tkinter as tk

    root = tk.Tk()
    try:
        return root.winfo_screenwidth(), root.winfo_screenheight()
    finally:
        root.destroy()


def run_compare(
    broken: str | None,
    model_args: list[str],
    *,
    prompt: str,
    seed: int,
    max_tokens: int,
    toolkit: str = "tk",
) -> int:
    """Start both windows and wait; closing either leaves the other, Ctrl+C or SIGTERM
    closes both. Returns 0 when both windows exited cleanly."""
    import tkinter as tk  # here, not at the top: only this command opens a window

    try:
        screen = _screen_size()
    except tk.TclError as exc:
        print(f"tkchat compare: cannot open a window ({exc})", file=sys.stderr)
        return 2
    commands = window_commands(
        broken,
        model_args,
        prompt=prompt,
        seed=seed,
        max_tokens=max_tokens,
        screen=screen,
        toolkit=toolkit,
    )
    children = [subprocess.Popen(command) for command in commands]

    def stop(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while any(child.poll() is None for child in children):
            time.sleep(0.1)
    except KeyboardInterrupt:
        pass
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    codes = [child.returncode for child in children]
    return 0 if all(code in (0, -signal.SIGTERM) for code in codes) else 1
