"""Keep the transcript's view where the reader has it while the program changes its text.

Tk keeps the line at the top of a Text widget in place when text above or below it changes,
but not when that line itself is deleted: the view then moves to where the deletion began.
Replacing an answer's plain text with its rendered form deletes lines, so without help the
view jumped from the end of a long answer back to its first screen.

The rule, for every callback that changes the transcript:

- a reader at the bottom stays at the bottom (the view follows the answer);
- a question the reader sends brings the view to the bottom, wherever they had scrolled
  (:meth:`ViewKeeper.to_end`): they asked for what comes next;
- anywhere else, the first character on screen is remembered by a mark, with the height at
  which its line is drawn; if the lines it is in are replaced by their rendered form, the
  mark moves to the same line of the rendered block (or its last one); afterwards that line
  is put back at the same height. The anchor is text, never a fraction of the scroll range,
  since everything above the reader may change height;
- a header whose ◀ or ▶ was clicked (:meth:`ViewKeeper.hold`) stays at its height through
  every change that follows — the version painted in slices, its figures drawn, a branch
  written message by message — until the reader scrolls it away, sends or an answer
  streams. At the end of the text the view cannot go further down than the last line, so
  a shorter version would pull the header (and its arrows) down: blank space after the last
  line (:data:`SLACK_TAG`) lets it stay, until the hold ends.

Main thread only.
"""

from __future__ import annotations

import tkinter as tk
import tkinter.font as tkfont
import weakref
from collections.abc import Callable

ANCHOR_MARK = "view_anchor"  # no "-" in a mark used in index arithmetic: Tk would split there
HELD_MARK = "view_held"  # the header held (its ◀ ▶ under the pointer), across callbacks
SLACK_TAG = "view_slack"  # blank space below the last line, so a held header can stay put

# Per text widget: the height at which the header at HELD_MARK is held.
_held_at: weakref.WeakKeyDictionary[tk.Text, int] = weakref.WeakKeyDictionary()


def at_bottom(text: tk.Text) -> bool:
    """Is the reader at the end of the text (and so should follow it)? Yes if its last line
    is on screen. Not a fraction of the scroll range: in a 20,000-line transcript, 0.999 of
    it left a reader ten lines up "at the bottom", and pulled them down. A widget not on
    screen yet has no reader: it follows, so it shows the end when it appears."""
    return text.dlineinfo("end-1c") is not None or not text.winfo_viewable()


def lines_between(text: tk.Text, start: str, end: str) -> int:
    """Logical lines from ``start`` to ``end`` (elided ones count too)."""
    return int(text.tk.call(str(text), "count", "-lines", start, end))


def screen_y(text: tk.Text, index: str) -> int | None:
    """The height at which ``index``'s display line is drawn, None when it is off screen."""
    info = text.dlineinfo(index)
    return None if info is None else int(info[1])


def put_at(text: tk.Text, index: str, y: int, *, slack: bool = False) -> None:
    """Scroll so that ``index``'s display line is drawn at height ``y`` (as near as the
    text allows: Tk shows no blank space after its end). ``slack``: where the end stops it,
    blank space after the last line (as much as needed) lets it be drawn at ``y``."""
    added = 0
    if slack:
        set_slack(text, 0)
    for _round in range(3 if slack else 1):
        text.yview(index)
        info = text.dlineinfo(index)
        if info is not None and info[1] != y:
            text.yview_scroll(info[1] - y, "pixels")
        info = text.dlineinfo(index)
        if not slack or info is None or info[1] <= y:
            return
        # drawn lower: the end stopped the scroll (Tk's own rounding may leave a few pixels
        # short after the first round)
        added += info[1] - y
        set_slack(text, added)


def set_slack(text: tk.Text, pixels: int) -> None:
    """Blank space of ``pixels`` after the text's last line (0: none)."""
    if pixels <= 0:
        if text.tag_ranges(SLACK_TAG):
            text.tag_remove(SLACK_TAG, "1.0", "end")
        return
    text.tag_remove(SLACK_TAG, "1.0", "end")
    text.tag_configure(SLACK_TAG, spacing3=pixels)
    text.tag_add(SLACK_TAG, "end-1c linestart", "end")
    text.tag_raise(SLACK_TAG)  # over the spacing of the message's own tags


def keep_held(text: tk.Text, index: str, y: int) -> None:
    """Hold the header at ``index`` at height ``y`` from now on (its ◀ or ▶ was clicked):
    put it there now, and every :class:`ViewKeeper` keeps it there until it is let go."""
    _held(text, index, y)
    put_at(text, HELD_MARK, y, slack=True)


def _held(text: tk.Text, index: str, y: int) -> None:
    text.mark_set(HELD_MARK, index)
    text.mark_gravity(HELD_MARK, "left")  # (text written at it goes after it)
    _held_at[text] = y


def let_go(text: tk.Text) -> None:
    """The header held (if any) is no longer held; the slack below the end goes."""
    if _held_at.pop(text, None) is not None:
        text.mark_unset(HELD_MARK)
        set_slack(text, 0)


def _still_held(text: tk.Text) -> int | None:
    """The height at which the held header is drawn, if it is still drawn there (not if
    the reader has scrolled it away: then it is let go)."""
    y = _held_at.get(text)
    if y is None:
        return None
    info = text.dlineinfo(HELD_MARK)
    if info is None or info[1] != y:
        let_go(text)
        return None
    return y


class ViewKeeper:
    """One per callback that changes the transcript (the tick that appends text and paints
    the blocks it completed, or a painter slice): :meth:`changing` before each change,
    :meth:`restore` once at the end. What the reader sees is looked at before the first
    change; the anchor is only set when text that is not at the end changes."""

    def __init__(self, text: tk.Text, *, follow_end: bool = True) -> None:
        """``follow_end=False``: a page read from its top (a lesson): a reader at its top
        stays at the top, one at its end is not pulled along (nor a widget not on screen
        yet, which would otherwise follow the end)."""
        self.text = text
        self.follow_end = follow_end
        self.mode: str | None = None  # None (not looked yet), "bottom", "top" or "anchor"
        self.changed = False  # was anything changed?
        self.streamed_only = True  # was every change a few lines added at the end?
        self._anchored = False  # is the anchor mark set?
        self._y = 0  # where the anchor's display line was drawn, in pixels
        self._line: int | None = None  # the anchor's line within a block being replaced
        self.held = False  # is the anchor a header held (:meth:`hold`)?

    def changing(self, *, at_end: bool = False, streamed: bool = False) -> None:
        """The text is about to change; ``at_end``: only by text added at its end (which
        moves nothing a reader who scrolled up is looking at); ``streamed``: by a few lines
        added at its end (a tick's tokens), which :meth:`restore` follows with ``see``."""
        if self.mode is None and streamed:
            let_go(self.text)  # an answer streams: the reader follows it again
        if self.mode is None and (held := _still_held(self.text)) is not None:
            self._hold_at(HELD_MARK, held)
            return
        if self.mode is None:
            if self.follow_end:
                self.mode = "bottom" if at_bottom(self.text) else "anchor"
            else:
                self.mode = "top" if float(self.text.yview()[0]) <= 0.0 else "anchor"
        self.changed = True
        self.streamed_only &= at_end and streamed
        if self.mode == "anchor" and not at_end and not self._anchored:
            top = self.text.index("@0,0")
            info = self.text.dlineinfo(top)
            self.text.mark_set(ANCHOR_MARK, top)
            self.text.mark_gravity(ANCHOR_MARK, "right")  # stays with that character
            self._y = info[1] if info else 0
            self._anchored = True

    def hold(self, index: str) -> None:
        """The text is about to change around ``index`` (the header whose ◀ or ▶ was just
        clicked), which stays at its height on screen: not the top line, nor the end the
        reader was at (the arrow would move away from under the pointer). If it is not on
        screen, the usual rule (:meth:`changing`)."""
        info = self.text.dlineinfo(index)
        if info is None or self.mode is not None:
            self.changing()
            return
        _held(self.text, index, info[1])
        self._hold_at(index, info[1])

    def _hold_at(self, index: str, y: int) -> None:
        self.mode, self.changed, self._anchored, self.held = "anchor", True, True, True
        self.text.mark_set(ANCHOR_MARK, index)
        self.text.mark_gravity(ANCHOR_MARK, "right")
        self._y = y

    def to_end(self) -> None:
        """The reader asked for the end (they sent a question): :meth:`restore` puts the view
        there, wherever they had scrolled, and from then on it follows the answer."""
        if self._anchored:
            self.text.mark_unset(ANCHOR_MARK)
        let_go(self.text)
        self.mode, self.changed, self._anchored, self._line = "bottom", True, False, None
        self.held = False
        self.streamed_only = False  # from wherever they were: not a few lines away

    def replacing(self, start: str, end: str) -> None:
        """The text from ``start`` to ``end`` is about to be deleted: if the anchor is in it,
        remember on which of its lines."""
        if not self._anchored:
            return
        if self.text.compare(start, "<=", ANCHOR_MARK) and self.text.compare(ANCHOR_MARK, "<", end):
            self._line = lines_between(self.text, start, ANCHOR_MARK)

    def replaced(self, start: str, end: str) -> None:
        """The deleted text's replacement lies from ``start`` to ``end``: the anchor, if it
        was in the deleted text, goes to its line there (or the replacement's last line)."""
        if self._line is None:
            return
        last = max(0, lines_between(self.text, start, end) - 1)
        self.text.mark_set(ANCHOR_MARK, f"{start} + {min(self._line, last)} lines")
        self._line = None

    def restore(self) -> None:
        """Put the view back: at the bottom (or the top), or with the anchor's line at its
        height.

        The bottom, after a few lines were only added at the end (a tick's tokens), by ``see``:
        the end was on screen a moment ago, so Tk scrolls by the new lines' height, and its
        redisplay lays out only those (an insert and its redisplay on a screenful of wrapped
        text, 2026-12-03: 0.1 ms with ``see``, 3.4 ms with ``yview``, whose redisplay fills
        the window upwards from the last line, measuring every line on screen again).

        The bottom after any other change by putting the last line at the top (``yview``):
        Tk's redisplay, which
        lays out the new view anyway, fills the window up from it, with the last line whole.
        Not ``see("end")``: that lays out here, inside the callback, the old view and the
        lines above the end, and a long paragraph at the end twice more (the lesson demos:
        35-83 ms in one callback on a quiet machine, up to 117 ms on CI, where the window's
        own long task failed lesson 10's; with ``yview`` 6-13 ms, layout included). The
        scrollbar may then lag by a frame or two, until Tk has measured the new lines."""
        if self.mode == "bottom" and self.changed and self.streamed_only:
            self.text.see("end")
        elif self.mode == "bottom" and self.changed:
            self.text.yview("end-1c")
        elif self.mode == "top" and self.changed:
            self.text.yview_moveto(0.0)
        elif self._anchored:
            put_at(self.text, ANCHOR_MARK, self._y, slack=self.held)
            self.text.mark_unset(ANCHOR_MARK)
        self.mode, self.changed, self._anchored, self.held = None, False, False, False
        self.streamed_only = True


class EndFollower:
    """A reader at the end stays at the end when the widget's height changes (the window
    resized, a bar shown above the transcript): Tk keeps the top line in place instead, so
    a chat reopened at its end was left showing its middle once the window had settled.
    Between ``text`` and its scrollbar: give :meth:`scrolled` as ``yscrollcommand``, with
    the scrollbar's ``set`` as ``scroll_set``."""

    def __init__(self, text: tk.Text, scroll_set: Callable[[float | str, float | str], object]):
        self.text = text
        self.scroll_set = scroll_set
        self.at_end = True  # as of the last time the view moved (before a resize)
        text.bind("<Configure>", lambda _e: self._resized(), add="+")

    def scrolled(self, first: float | str, last: float | str) -> None:
        self.at_end = self._hidden_below(float(first), float(last)) < self._line_height()
        self.scroll_set(first, last)

    def _hidden_below(self, first: float, last: float) -> float:
        """Pixels of text below the view (from the scroll fractions: no layout is asked for
        in the middle of one). ``see("end")`` can leave the last line partly hidden."""
        if last >= 1.0 or last <= first:
            return 0.0
        return (1.0 - last) * self.text.winfo_height() / (last - first)

    def _line_height(self) -> int:
        font = tkfont.nametofont(str(self.text.cget("font")), root=self.text)
        return int(font.metrics("linespace"))

    def _resized(self) -> None:
        if self.at_end:
            self.text.yview_moveto(1.0)
