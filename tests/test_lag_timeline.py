"""The lag timeline draws what the probe measured: frozen intervals shaded and labelled, text
arrivals ticked, at the text size chosen — and a redraw reads only the samples that are new
and draws one point per pixel column, whatever the history holds. Paused, the drawing stands
still while the samples are still kept; scrolled back (keys, a drag), it draws older ones;
resumed, it is live again.

Every picture here is of samples given on a clock the test sets (``clock=``): a late firing
of the probe is made by moving that clock, not by freezing the loop. How long a redraw takes
is the bench's to measure.
"""

from __future__ import annotations

import gc
import itertools
import math
import tkinter as tk
from collections import deque
from collections.abc import Iterator

import pytest

from tests.conftest import pump_until
from tests.x_input import handled, keyboard_focus, needs_xdotool, xdotool
from tkchat import stats
from tkchat.ui.base.translator import Translator
from tkchat.ui.lag_probe import LagProbe, LagSample
from tkchat.ui.scheduler import AfterScheduler
from tkchat.ui.settings.fonts import FontSizer
from tkchat.ui.teaching.lag_record import LagRecord, answer_arrivals
from tkchat.ui.teaching.lag_timeline import LagTimeline, freeze_label
from tkchat.ui.transcript.transcript import AnswerView

pytestmark = pytest.mark.gui

NOW = 1000.0


def scripted_samples() -> list[LagSample]:
    """20 s of a probe every 5 ms, 0.3 ms late, with one 1.7 s freeze ending at NOW - 8 (no
    firing inside it, as in life) and one firing 30 ms late (slow, not a long task)."""
    samples = []
    at = NOW - 20.0
    while at < NOW:
        if NOW - 9.7 < at < NOW - 8.0:
            at = NOW - 8.0
            samples.append(LagSample(at, 1700.0))
        else:
            samples.append(LagSample(at, 30.0 if abs(at - (NOW - 4.0)) < 0.0025 else 0.3))
        at += 0.005
    return samples


ARRIVALS = [(NOW - 15.0, 10), (NOW - 14.0, 40), (NOW - 6.0, 90), (NOW - 1.0, 120)]


def make_timeline(root: tk.Tk, samples: list[LagSample]) -> LagTimeline:
    timeline = LagTimeline(
        root, AfterScheduler(root), lambda: samples, lambda: ARRIVALS, clock=lambda: NOW
    )
    timeline.pack(fill="both", expand=True)
    root.geometry("900x320")
    root.update()  # laid out at that size
    return timeline


def _x_of(timeline: LagTimeline, at: float) -> float:
    layout = timeline._measure()
    return layout.left + (at - (NOW - 20.0)) * (layout.right - layout.left) / 20.0


def test_a_freeze_is_shaded_over_the_time_it_took_and_labelled_with_its_length(
    root: tk.Tk,
) -> None:
    timeline = make_timeline(root, scripted_samples())
    timeline.redraw(NOW)
    (shade,) = timeline.find_withtag("frozen")  # the 30 ms firing is not a long task
    x0, _top, x1, _bottom = timeline.coords(shade)
    assert x0 == pytest.approx(_x_of(timeline, NOW - 9.7), abs=1.0)
    assert x1 == pytest.approx(_x_of(timeline, NOW - 8.0), abs=1.0)
    (label,) = timeline.find_withtag("frozen-label")
    assert timeline.itemcget(label, "text") == "frozen 1.70 s"
    assert timeline.bbox(label)[0] < x1 and timeline.bbox(label)[2] > x0  # over its interval
    # The lag line reaches the freeze's height: 1.7 s on a scale from 1 ms to 10 s.
    layout = timeline._measure()
    peak_y = min(timeline.coords(timeline.find_withtag("lag")[0])[1::2])
    decades = 4  # 1 ms .. 10 s
    want = layout.bottom - math.log10(1700.0) / decades * (layout.bottom - layout.top)
    assert peak_y == pytest.approx(want, abs=1.0)


def test_text_arrivals_are_ticks_along_the_bottom(root: tk.Tk) -> None:
    timeline = make_timeline(root, scripted_samples())
    timeline.redraw(NOW)
    comb = timeline.coords(timeline.find_withtag("arrivals")[0])
    band = timeline._measure().band
    tips = [comb[i] for i in range(0, len(comb), 2) if comb[i + 1] < band]
    expected = [_x_of(timeline, at) for at, _chars in ARRIVALS]
    assert len(tips) == len(expected)
    for tip, want in zip(tips, expected, strict=True):
        assert tip == pytest.approx(want, abs=2.0)


def test_freeze_lengths_read_well() -> None:
    assert freeze_label(0.34) == "frozen 340 ms" and freeze_label(1.702) == "frozen 1.70 s"


def test_labels_that_would_overlap_stack_and_the_longest_wins(root: tk.Tk) -> None:
    samples = [LagSample(NOW - 20.0 + i * 0.005, 0.3) for i in range(100)]
    # Five freezes of 300 to 700 ms, close together: too many labels for the room.
    samples += [LagSample(NOW - 5.0 + n * 0.9, 300.0 + n * 100) for n in range(5)]
    timeline = make_timeline(root, samples)
    timeline.redraw(NOW)
    assert len(timeline.find_withtag("frozen")) == 5
    labels = [timeline.itemcget(i, "text") for i in timeline.find_withtag("frozen-label")]
    assert labels[0] == "frozen 700 ms" and 2 <= len(labels) <= 5
    boxes = [timeline.bbox(i) for i in timeline.find_withtag("frozen-label")]
    for n, a in enumerate(boxes):
        for b in boxes[n + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], "overlap"


def test_no_freeze_label_is_written_over_the_caption(root: tk.Tk) -> None:
    """Seen in lesson 01 at 1280×720: two freezes close together at the start of the plot,
    and the second label went up a row, onto "event-loop lag, last 20 s"."""
    samples = [LagSample(NOW - 20.0 + i * 0.005, 0.3) for i in range(100)]
    samples += [LagSample(NOW - 17.0, 600.0), LagSample(NOW - 16.2, 500.0)]
    timeline = make_timeline(root, samples)
    root.geometry("460x320")  # a lesson panel beside the chat on a 1280-pixel screen
    root.update()
    timeline.redraw(NOW)
    c = caption_box(timeline)
    labels = timeline.find_withtag("frozen-label")
    assert labels, "the longest freeze keeps its label"
    for label in labels:
        b = timeline.bbox(label)
        assert c[2] <= b[0] or b[2] <= c[0] or c[3] <= b[1] or b[3] <= c[1], "on the caption"


def caption_box(timeline: LagTimeline) -> tuple[int, int, int, int]:
    (caption,) = (
        item
        for item in timeline.find_withtag("fixed")
        if timeline.type(item) == "text"
        and str(timeline.itemcget(item, "text")).startswith("event-loop lag")
    )
    return timeline.bbox(caption)


def test_the_caption_fits_a_narrow_panel_in_large_text(root: tk.Tk) -> None:
    """Seen by hand at 192 dpi and +4 text steps: the lesson panel's timeline read
    "event-loop lag, last 20" — the caption began after the axis labels' width, and its end
    fell off the canvas."""
    timeline = make_timeline(root, scripted_samples())
    timeline.set_font_size(22)
    root.geometry("620x420")
    root.update()
    timeline.redraw(NOW)
    left, _top, right, _bottom = caption_box(timeline)
    assert left >= 0 and right <= timeline.winfo_width()


def test_it_follows_the_text_size(root: tk.Tk) -> None:
    timeline = make_timeline(root, scripted_samples())
    sizer = FontSizer(root)
    sizer.on_change(timeline.set_font_size)
    small_font = timeline.label_font.cget("size")
    small_width = int(timeline.cget("width"))
    sizer.apply(22)
    assert timeline.label_font.cget("size") > small_font * 1.5
    assert int(timeline.cget("width")) > small_width
    assert float(timeline.itemcget(timeline.find_withtag("lag")[0], "width")) >= 6
    (label,) = timeline.find_withtag("frozen-label")
    assert timeline.itemcget(label, "font") == str(timeline.label_font)


def test_the_scale_s_labels_never_overlap_in_a_short_strip_of_large_type(root: tk.Tk) -> None:
    """Seen in lesson 06 at 1280×720 with projector type: a 13 s freeze, six decades in a
    plot of about 70 px, and "100 ms" written over "10 ms". Every decade keeps its line;
    the labels skip decades to stay a line apart, the lowest one (1 ms) always labelled."""
    samples = [LagSample(NOW - 20.0 + i * 0.005, 0.3) for i in range(100)]
    samples.append(LagSample(NOW - 3.0, 13_000.0))
    timeline = make_timeline(root, samples)
    sizer = FontSizer(root)
    sizer.on_change(timeline.set_font_size)
    sizer.apply(18)
    timeline.configure(height=240)
    timeline.pack_configure(expand=False, fill="x")
    root.update()
    timeline.redraw(NOW)
    layout = timeline._measure()
    scale_labels = [
        item
        for item in timeline.find_withtag("fixed")
        if timeline.type(item) == "text"
        and timeline.itemcget(item, "anchor") == "e"
        and timeline.coords(item)[1] <= layout.bottom + 1
    ]
    texts = [timeline.itemcget(item, "text") for item in scale_labels]
    assert texts[0] == "1 ms" and 2 <= len(texts) < 6, texts  # some decades skipped
    boxes = sorted((timeline.bbox(item) for item in scale_labels), key=lambda box: box[1])
    for upper, lower in itertools.pairwise(boxes):
        assert upper[3] <= lower[1], texts


class Clock:
    """``time.perf_counter`` as the test sets it."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The probe's clock (and the timeline's, given it): moved only by the test."""
    fake = Clock()
    monkeypatch.setattr(stats.time, "perf_counter", fake)
    return fake


def test_a_late_firing_of_the_probe_is_drawn_as_a_freeze_of_its_length(
    root: tk.Tk, clock: Clock
) -> None:
    """The probe's real timer, on a clock the test moves: a firing 600 ms after it was due
    (the loop held that long) becomes a band labelled with that length."""
    scheduler = AfterScheduler(root)
    probe = LagProbe(scheduler)
    timeline = LagTimeline(root, scheduler, lambda: probe.history, lambda: [], clock=clock)
    timeline.pack(fill="both", expand=True)
    probe.start()  # due 5 ms from now, on the test's clock
    pump_until(root, lambda: len(probe.history) >= 2, what="firings on time")
    timeline.redraw()
    assert timeline.find_withtag("frozen") == ()
    clock.now += 0.005 + 0.6  # the next firing comes 600 ms after it was due
    fired = len(probe.history)
    pump_until(root, lambda: len(probe.history) > fired, what="the late firing")
    assert probe.history[fired][1] == pytest.approx(600.0)  # (at, lag_ms, waited_ms)
    timeline.redraw()
    (label,) = timeline.find_withtag("frozen-label")
    assert timeline.itemcget(label, "text") == "frozen 600 ms"
    scheduler.close()


class ManualProbe(LagProbe):
    """A probe whose timer is the test: it notes each request, and the test fires it."""

    def __init__(self, root: tk.Tk, interval_ms: int, window_s: float, history_s: float) -> None:
        super().__init__(AfterScheduler(root), interval_ms, window_s, history_s)
        self.asked: list[int] = []

    def _schedule(self, delay_ms: int) -> None:
        self.asked.append(delay_ms)


def test_the_probe_history_is_longer_than_its_window_and_bounded(root: tk.Tk, clock: Clock) -> None:
    probe = ManualProbe(root, interval_ms=5, window_s=0.2, history_s=0.5)
    assert probe.history.maxlen == 101
    probe.start()
    for _ in range(300):  # 1.5 s of firings, each on time
        clock.now += 0.005
        probe._fire_and_keep()
    assert len(probe.history) == 101  # full, and no longer
    assert probe.history[-1][0] - probe.history[0][0] == pytest.approx(0.5)
    # 30 s of it in a window (6,000 samples) cost every full collection a walk as objects;
    # as plain tuples of floats, the collector untracks them
    gc.collect()
    assert not any(gc.is_tracked(sample) for sample in probe.history)
    assert probe.recent[-1].at - probe.recent[0].at <= 0.2
    assert len(probe.asked) == 301  # re-armed after every firing


def test_answer_arrivals_reads_only_the_last_span_of_the_newest_answers() -> None:
    clock = [100.0]
    old = AnswerView(1, "s1", "e1", started_at=10.0, arrivals=[(11.0, 5), (12.0, 9)])
    mid = AnswerView(2, "s2", "e2", started_at=70.0, arrivals=[(75.0, 3), (85.0, 8)])
    new = AnswerView(3, "s3", "e3", started_at=90.0, arrivals=[(91.0, 2), (99.0, 7)])
    answers = [old, mid, new]
    read = answer_arrivals(answers, span_s=20.0, clock=lambda: clock[0])
    assert read() == [(85.0, 8), (91.0, 2), (99.0, 7)]
    answers.clear()  # a new chat: the transcript clears its list in place
    assert read() == []


def _history(every_s: float) -> list[LagSample]:
    """30 s of a probe firing every ``every_s``, with ten freezes."""
    count = int(30.0 / every_s)
    samples = [LagSample(NOW - 30.0 + i * every_s, 0.2 + (i % 7) * 0.3) for i in range(count)]
    samples += [LagSample(NOW - 19.0 + n * 1.9, 120.0 + n * 40) for n in range(10)]
    return sorted(samples, key=lambda s: s.at)


class Read(list[LagSample]):
    """A probe's history that counts the samples a redraw reads (newest first)."""

    read = 0

    def __reversed__(self) -> Iterator[LagSample]:
        for sample in super().__reversed__():
            self.read += 1
            yield sample


def test_a_redraw_reads_only_new_samples_and_draws_a_point_per_pixel_column(
    root: tk.Tk,
) -> None:
    """The full picture — a 30 s history of a probe every 5 ms (6,000 firings), a
    60-per-second flood of arrivals, ten freezes: the first redraw takes in the history,
    the next only what is new since; the lag line has one point per pixel column (not one
    per firing), and a history ten times sparser draws the same freezes."""
    arrivals = [(NOW - 20.0 + i / 60, i * 4) for i in range(1200)]
    samples, sparse = Read(_history(0.005)), Read(_history(0.05))
    full = LagTimeline(root, AfterScheduler(root), lambda: samples, lambda: arrivals)
    thin = LagTimeline(root, AfterScheduler(root), lambda: sparse, lambda: arrivals)
    for timeline in (full, thin):
        timeline.pack(fill="x")
        timeline.configure(width=1000, height=170)
    root.update()
    full.redraw(NOW)  # the first one takes in the whole history
    thin.redraw(NOW)
    assert samples.read == len(samples) and sparse.read == len(sparse)
    assert len(full.find_withtag("frozen")) == len(thin.find_withtag("frozen")) == 10
    layout = full._measure()
    points = len(full.coords(full.find_withtag("lag")[0])) // 2
    in_view = sum(1 for s in samples if s.at >= NOW - 20.0)
    assert points <= layout.right - layout.left + 1 < in_view  # a point per column
    for n in range(1, 5):  # as it runs: ten new firings, the picture a quarter second on
        samples.read = 0
        samples += [LagSample(NOW + n * 0.25 - (10 - i) * 0.005, 0.3) for i in range(10)]
        full.redraw(NOW + n * 0.25)
        assert samples.read == 11  # the ten new ones, and the one that stops the reading
        assert len(full.coords(full.find_withtag("lag")[0])) // 2 <= points + 1


def test_a_destroyed_timeline_stops_redrawing(root: tk.Tk) -> None:
    scheduler = AfterScheduler(root)
    timeline = LagTimeline(root, scheduler, list, list, refresh_ms=20)
    timeline.pack()
    timeline.start()
    pump_until(root, lambda: len(timeline.redraw_ms) >= 2, what="redraws")
    timeline.destroy()
    assert not scheduler.pending(timeline.timer)
    root.update()  # (the root fixture fails the test if a callback hit the dead widget)


def test_it_speaks_the_window_s_language_and_follows_a_switch(root: tk.Tk) -> None:
    """A Chinese class sees a Chinese chart (it was English in a Chinese window)."""
    translate = Translator("zh")
    timeline = LagTimeline(
        root,
        AfterScheduler(root),
        scripted_samples,
        lambda: ARRIVALS,
        clock=lambda: NOW,
        translate=translate,
    )
    timeline.pack(fill="both", expand=True)
    root.geometry("900x320")
    root.update()
    timeline.redraw(NOW)

    def texts() -> set[str]:
        return {
            str(timeline.itemcget(i, "text"))
            for i in timeline.find_all()
            if timeline.type(i) == "text"
        }

    zh = texts()
    assert {"事件循环延迟，最近 20 秒", "现在", "文字", "冻结 1.70 秒", "50 毫秒：长任务"} <= zh, zh
    assert not any("ms" in text or "now" in text for text in zh), zh
    translate.set_language("en")
    root.update()
    timeline.redraw(NOW)
    assert {"event-loop lag, last 20 s", "now", "frozen 1.70 s"} <= texts()


# -- paused, scrolled back, live again --------------------------------------------------------


def quiet(since: float, until: float) -> list[LagSample]:
    """A probe every 50 ms, 0.3 ms late (sparser than the real 5 ms: the same picture)."""
    return [LagSample(since + i * 0.05, 0.3) for i in range(round((until - since) / 0.05))]


def fed_timeline(
    root: tk.Tk, samples: list[LagSample], arrivals: list[tuple[float, int]], clock: Clock
) -> LagTimeline:
    """A timeline of the lists the test adds to, on the test's clock, its timer every 20 ms."""
    timeline = LagTimeline(
        root, AfterScheduler(root), lambda: samples, lambda: arrivals, clock=clock, refresh_ms=20
    )
    timeline.pack(fill="both", expand=True)
    root.geometry("900x320")
    root.update()  # laid out at that size
    return timeline


def picture(timeline: LagTimeline) -> dict[int, tuple[str, list[float], str, str]]:
    """Every item drawn: its type, coordinates, text and state."""
    return {
        item: (
            timeline.type(item),
            timeline.coords(item),
            str(timeline.itemcget(item, "text")) if timeline.type(item) == "text" else "",
            str(timeline.itemcget(item, "state")),
        )
        for item in timeline.find_all()
    }


def texts(timeline: LagTimeline) -> set[str]:
    return {text for _type, _coords, text, _state in picture(timeline).values() if text}


def x_at(timeline: LagTimeline, at: float, end: float) -> float:
    """Where ``at`` is drawn in a view of the 20 s up to ``end``."""
    layout = timeline._measure()
    return layout.left + (at - (end - 20.0)) * (layout.right - layout.left) / 20.0


def test_paused_the_drawing_stands_still_while_the_samples_are_kept(root: tk.Tk) -> None:
    """The timer runs on, a freeze and an arrival come, the clock moves five seconds: not one
    item changes, and what came is kept for later."""
    clock = Clock(NOW)
    samples, arrivals = quiet(NOW - 30.0, NOW), list(ARRIVALS)
    timeline = fed_timeline(root, samples, arrivals, clock)
    timeline.start()
    pump_until(root, lambda: len(timeline.redraw_ms) >= 2, what="live redraws")
    timeline.pause()
    drawn, redraws = picture(timeline), len(timeline.redraw_ms)
    assert "paused" in texts(timeline) and "▶ live" in texts(timeline)
    samples += sorted([*quiet(NOW, NOW + 5.0), LagSample(NOW + 3.01, 800.0)], key=lambda s: s.at)
    arrivals.append((NOW + 4.0, 200))
    clock.now = NOW + 5.0
    pump_until(
        root,
        lambda: bool(timeline.record.freezes) and timeline.record.arrivals[-1][0] == NOW + 4.0,
        what="the new samples kept",
    )
    assert picture(timeline) == drawn and len(timeline.redraw_ms) == redraws
    assert timeline.record.freezes[-1].end == NOW + 3.01
    timeline.resume()  # live again: the freeze that came while paused is drawn
    (shade,) = timeline.find_withtag("frozen")
    assert timeline.coords(shade)[2] == pytest.approx(x_at(timeline, NOW + 3.01, NOW + 5.0), abs=1)
    assert "now" in texts(timeline) and "‖ pause" in texts(timeline)
    timeline.stop()


def test_scrolled_back_it_draws_older_samples_and_resumed_it_is_live(root: tk.Tk) -> None:
    clock = Clock(NOW)
    samples = sorted([*quiet(NOW - 60.0, NOW), LagSample(NOW - 40.01, 700.0)], key=lambda s: s.at)
    arrivals = [(NOW - 42.0, 10), (NOW - 1.0, 50)]
    timeline = fed_timeline(root, samples, arrivals, clock)
    timeline.redraw()
    assert timeline.find_withtag("frozen") == ()  # 40 s ago: before the live view
    timeline.scroll(25.0)  # live, it pauses first
    assert timeline.paused_at == NOW and timeline.back_s == 25.0
    (shade,) = timeline.find_withtag("frozen")
    x0, _top, x1, _bottom = timeline.coords(shade)
    assert x0 == pytest.approx(x_at(timeline, NOW - 40.71, NOW - 25.0), abs=1)
    assert x1 == pytest.approx(x_at(timeline, NOW - 40.01, NOW - 25.0), abs=1)
    comb = timeline.coords(timeline.find_withtag("arrivals")[0])
    tips = [comb[i] for i in range(0, len(comb), 2) if comb[i + 1] < timeline._measure().band]
    assert tips == [pytest.approx(x_at(timeline, NOW - 42.0, NOW - 25.0), abs=2)]
    assert {"frozen 700 ms", "-25 s", "-45 s"} <= texts(timeline)
    assert "now" not in texts(timeline)
    timeline.scroll(1000.0)  # no further back than the oldest sample kept
    assert timeline.back_s == pytest.approx(40.0, abs=0.1)
    timeline.scroll(-1000.0)  # nor later than the pause
    assert timeline.back_s == 0.0 and "paused" in texts(timeline)
    timeline.resume()
    assert timeline.paused_at is None and timeline.find_withtag("frozen") == ()
    assert "now" in texts(timeline)


@needs_xdotool
def test_keys_and_a_drag_scroll_it_and_the_button_goes_live(root: tk.Tk) -> None:
    """Real X input: ← → scroll a second at a time, End goes live, a drag to the right
    brings older moments into view, a click on the button goes live, Space pauses."""
    clock = Clock(NOW)
    timeline = fed_timeline(root, quiet(NOW - 60.0, NOW), [], clock)
    timeline.redraw()
    keyboard_focus(root, timeline)
    xdotool("key", "Left", "Left", "Left", "Right")
    handled(root)
    assert timeline.paused_at == NOW and timeline.back_s == pytest.approx(2.0)
    assert "-2 s" in texts(timeline)
    xdotool("key", "End")
    handled(root)
    assert timeline.paused_at is None
    layout = timeline._measure()
    x, y = timeline.winfo_rootx() + layout.left + 100, timeline.winfo_rooty() + layout.bottom - 20
    xdotool("mousemove", str(x), str(y), "mousedown", "1")
    xdotool("mousemove", str(x + 150), str(y), "mouseup", "1")
    handled(root)
    assert timeline.back_s == pytest.approx(150 * 20.0 / (layout.right - layout.left), abs=0.01)
    bx0, by0, bx1, by1 = timeline.bbox("control")
    left, top = timeline.winfo_rootx(), timeline.winfo_rooty()
    xdotool("mousemove", str(left + (bx0 + bx1) // 2), str(top + (by0 + by1) // 2), "click", "1")
    handled(root)
    assert timeline.paused_at is None and "‖ pause" in texts(timeline)
    xdotool("key", "space")
    handled(root)
    assert timeline.paused_at == NOW


def test_paused_it_speaks_chinese_too(root: tk.Tk) -> None:
    timeline = LagTimeline(
        root,
        AfterScheduler(root),
        lambda: quiet(NOW - 60.0, NOW),
        list,
        clock=lambda: NOW,
        translate=Translator("zh"),
    )
    timeline.pack(fill="both", expand=True)
    root.geometry("900x320")
    root.update()
    timeline.redraw()
    assert "‖ 暂停" in texts(timeline)
    timeline.pause()
    assert {"已暂停 · ← → 或拖动：往回看", "暂停时", "▶ 实时"} <= texts(timeline)
    timeline.scroll(12.0)
    assert {"-12 秒", "-32 秒"} <= texts(timeline)


def test_the_record_is_bounded_and_keeps_its_past_through_a_resize() -> None:
    """Five minutes of a probe whose history holds 30 s: the record keeps two minutes of it
    (columns, freezes, arrivals); a wider column (the timeline resized) keeps them too."""
    record = LagRecord(keep_s=120.0)
    ring: deque[LagSample] = deque(maxlen=601)
    for second in range(300):
        ring.extend(quiet(float(second), second + 1.0))
        if second == 250:
            ring.append(LagSample(second + 0.99, 500.0))
        record.take(ring, [(float(second), second)], second + 1.0, 0.02)
    assert 180.0 <= record.oldest() <= 181.0  # type: ignore[operator]
    assert len(record.arrivals) == 120 and len(record.freezes) == 1
    assert len(record.columns) <= 120 / 0.02 + 1
    record.take(ring, [], 300.0, 0.05)  # resized: 30 s read again, the rest folded
    assert 180.0 <= record.oldest() <= 181.0  # type: ignore[operator]
    assert [f.end for f in record.freezes] == [250.99]
    worst = {int(column): lag for column, lag in record.columns}
    assert worst[int(250.99 / 0.05)] == 500.0 and worst[int(200.0 / 0.05)] == 0.3
