"""The strings only the Qt client shows (``tkchat --toolkit qt``).

Everything the two windows have in common — the health bar, Send and Stop, "Done", the error
line — is the Tk window's own string (``tkchat.i18n.window``), so both toolkits say the same
thing in the same words. Kept apart from :data:`tkchat.i18n.STRINGS`, which is the Tk window's.
"""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "qt.title": "tkchat (Qt) — {name}{broken}",
        "qt.lag_max": "max {max} ms",
        "qt.mode.fixed": "reader thread → queued signal → one append per 16 ms timer tick",
        "qt.mode.no-coalesce": "one signal and one append per token, no timer",
        "qt.placeholder": "Type a question; Enter sends, Esc stops",
    },
    "zh": {
        "qt.title": "tkchat（Qt）—— {name}{broken}",
        "qt.lag_max": "最大 {max} 毫秒",
        "qt.mode.fixed": "读取线程 → 排队信号 → 16 毫秒定时器每次追加一回",
        "qt.mode.no-coalesce": "每个 token 一个信号、追加一次，没有定时器",
        "qt.placeholder": "输入问题；回车发送，Esc 停止",
    },
}
