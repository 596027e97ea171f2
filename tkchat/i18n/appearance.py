"""The strings of the window's look: the theme and chat-only items of the View menu, the
button that brings the teaching controls back, and the compact health line."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "menu.theme_system": "Theme: follow the system",
        "menu.theme_light": "Light theme",
        "menu.theme_dark": "Dark theme",
        "menu.chat_only": "Chat only (fold the teaching controls)",
        "button.teaching": "Teaching controls",
        "health.compact_lag": "lag {now} ms",
        "appearance.name.light": "light",
        "appearance.name.dark": "dark",
        "appearance.system": "Following the system: {theme} theme ({source}).",
        "appearance.nothing_detected": "the system did not say, so light",
    },
    "zh": {
        "menu.theme_system": "主题：跟随系统",
        "menu.theme_light": "浅色主题",
        "menu.theme_dark": "深色主题",
        "menu.chat_only": "仅聊天（收起教学控件）",
        "button.teaching": "教学控件",
        "health.compact_lag": "延迟 {now} 毫秒",
        "appearance.name.light": "浅色",
        "appearance.name.dark": "深色",
        "appearance.system": "跟随系统：{theme}主题（{source}）。",
        "appearance.nothing_detected": "系统没有给出，使用浅色",
    },
}
