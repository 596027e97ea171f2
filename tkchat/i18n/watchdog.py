"""The strings of the watchdog window (``tkchat watchdog``), in English and Chinese: it opens
in the chat window's language."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "wd.title": "tkchat watchdog — heartbeat of the chat window (Esc closes, M moves)",
        "wd.caption": "seconds since the chat window's last heartbeat (every 50 ms)",
        "wd.waiting": "waiting for the chat window…",
        "wd.frozen_now": "FROZEN {seconds}",
        "wd.alive": "alive ♥ {beats} beats/s",
        "wd.gap": "frozen {seconds}",
        "wd.seconds": "{value} s",
        "wd.now": "now",
        "wd.axis": "{n} s",
        "wd.ago": "-{n} s",
    },
    "zh": {
        "wd.title": "tkchat 看门狗——聊天窗口的心跳（Esc 关闭，M 移到另一边）",
        "wd.caption": "距聊天窗口上一次心跳的秒数（它每 50 毫秒跳一次）",
        "wd.waiting": "正在等待聊天窗口…",
        "wd.frozen_now": "冻结 {seconds}",
        "wd.alive": "正常 ♥ 每秒 {beats} 次心跳",
        "wd.gap": "冻结了 {seconds}",
        "wd.seconds": "{value} 秒",
        "wd.now": "现在",
        "wd.axis": "{n} 秒",
        "wd.ago": "-{n} 秒",
    },
}
