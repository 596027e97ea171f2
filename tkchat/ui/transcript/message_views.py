"""What the transcript knows of each message on screen: a question (:class:`UserView`) or an
answer (:class:`AnswerView`), where it is in the widget (marks) and what it holds; and what
its header line is made of (the links, the versions). Plain values and pure functions; the
transcript (main thread) is the only one that changes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tkchat.render.soft_breaks import LineState
from tkchat.store import AnswerFigures, Kept, MessageRef
from tkchat.ui.look.chinese_wrap import BreakState
from tkchat.ui.transcript.markdown_view import PaintJob

VERSION_STEPS = {"prev": -1, "next": 1}  # the "◀ n/m ▶" links of an answer with versions
NAV_TAG = "versions"  # the whole "◀ n/m ▶" of a header, to find it again and redraw it

__all__ = [
    "NAV_TAG",
    "VERSION_STEPS",
    "AnswerView",
    "Branch",
    "UserView",
    "header_args",
    "label_tag",
    "version_links",
]


# The messages after a question's version: each one's role, text, status, an answer's figures
# (or None) and a regenerated answer's versions with the one shown (tkchat/store/variants.py).
Branch = list[Kept]


@dataclass
class UserView:
    """One question on screen."""

    number: int
    head_mark: str  # the start of its header line
    text: str
    role: str = "user"
    # Every version of an edited question (from 0), with the branch that followed each; the
    # one shown's entries are brought up to date when another is shown. Empty: only one.
    versions: list[str] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    shown: int = 0
    saved_as: int | None = None  # its message's id in the store, once it has versions


@dataclass
class AnswerView:
    """Where one streaming answer is in the widget, and what it holds so far."""

    number: int
    start_mark: str
    end_mark: str
    head_mark: str = ""  # the start of its header line
    role: str = "assistant"
    rendered: bool = False
    started_at: float = 0.0  # perf_counter when the answer began (the question was sent)
    first_text_at: float | None = None  # perf_counter when its first text was on screen
    arrivals: list[tuple[float, int]] = field(default_factory=list)  # (when, chars so far)
    column: LineState | int = 0  # where the last line on display is (for the next soft break)
    breaks: BreakState = BreakState()  # and where Chinese last may break (the next tick's)
    job: PaintJob | None = None  # its markdown painting, block by block as it streams
    paintable: bool = True  # False: shown as it is (a demo drew it, or asked for no render)
    status: str = "streaming"  # then how it ended: complete, stopped, error or interrupted
    # Every version of a regenerated answer, (text, status) by number from 0, and which one
    # is shown. Empty: only the one shown. The shown one's entry is brought up to date when
    # it ends and when another is shown (``text`` and ``status`` are the truth for it).
    versions: list[tuple[str, str]] = field(default_factory=list)
    shown: int = 0
    saved_as: MessageRef | None = None  # its message in the store (History sets it)
    # Around the note its end wrote ([stopped], the error): from notes_mark to tail_mark.
    notes_mark: str = ""
    tail_mark: str = ""
    figures: dict[int, AnswerFigures] = field(default_factory=dict)  # by version shown
    # Its text as it arrived, in the pieces it arrived in until someone reads it whole: one
    # string grown by += was copied whole every tick (650,000 characters, 60 times a second).
    _parts: list[str] = field(default_factory=list, repr=False)
    length: int = 0  # characters of its text

    @property
    def text(self) -> str:
        """Its text as it arrived (its markdown source)."""
        if len(self._parts) != 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0]

    @text.setter
    def text(self, value: str) -> None:
        self._parts[:] = [value]
        self.length = len(value)

    def add_text(self, more: str) -> None:
        self._parts.append(more)
        self.length += len(more)

    def text_from(self, start: int) -> str:
        """``text[start:]``, without joining what comes before it."""
        tail: list[str] = []
        begins = self.length
        for part in reversed(self._parts):
            if begins <= start:
                break
            tail.append(part)
            begins -= len(part)
        return "".join(reversed(tail))[start - begins :]


def label_tag(key: str) -> str:
    """The tag that finds a header's role word again ("transcript.you" -> "label-you")."""
    return "label-" + key.rsplit(".", 1)[-1]


def version_links(view: UserView | AnswerView) -> list[object]:
    """Insert arguments for "◀ n/m ▶" (nothing for a message with one version). A link that
    leads nowhere, or any while the answer streams, is drawn without its ``act-`` tag."""
    count = len(view.versions)
    if count < 2:
        return []
    ended = not isinstance(view, AnswerView) or view.status != "streaming"

    def link(symbol: str, step: str, possible: bool) -> list[object]:
        tags = ("who", NAV_TAG, "action", f"act-{step}") if ended and possible else ("who", NAV_TAG)
        return [symbol, tags]

    return [
        "   ",
        ("who", NAV_TAG),
        *link("◀", "prev", view.shown > 0),
        f" {view.shown + 1}/{count} ",
        ("who", NAV_TAG),
        *link("▶", "next", view.shown < count - 1),
    ]


def header_args(
    t: Callable[..., str], who: str, actions: tuple[str, ...], view: UserView | AnswerView
) -> list[object]:
    """Text-widget insert arguments for a message's header line, in ``t``'s language: who,
    then the links, then an answer's versions if it has several."""
    args: list[object] = [t(who), ("who", label_tag(who))]
    for action in actions:
        args += ["   ", ("who",), t(f"transcript.{action}"), ("who", "action", f"act-{action}")]
    return [*args, *version_links(view), "\n", ("who",)]
