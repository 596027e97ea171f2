"""The strings of the conversation sidebar, in English and Chinese."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "sidebar.new": "New chat",
        "sidebar.search_hint": "Search chats",
        "sidebar.untitled": "Untitled chat",
        "sidebar.rename": "Rename",
        "sidebar.delete": "Delete",
        "sidebar.export": "Export as Markdown…",
        "sidebar.deleted": "Deleted “{title}”.",
        "sidebar.undo": "Undo",
        "sidebar.no_results": "No chats match “{query}”.",
        "sidebar.just_now": "just now",
        "sidebar.yesterday": "yesterday",
        "sidebar.days_ago": "{days} days ago",
    },
    "zh": {
        "sidebar.new": "新对话",
        "sidebar.search_hint": "搜索对话",
        "sidebar.untitled": "未命名对话",
        "sidebar.rename": "重命名",
        "sidebar.delete": "删除",
        "sidebar.export": "导出为 Markdown……",
        "sidebar.deleted": "已删除“{title}”。",
        "sidebar.undo": "撤销",
        "sidebar.no_results": "没有与“{query}”匹配的对话。",
        "sidebar.just_now": "刚刚",
        "sidebar.yesterday": "昨天",
        "sidebar.days_ago": "{days} 天前",
    },
}
