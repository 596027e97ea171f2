"""The browser client's files: which ones may be served, and with which content type.

Only files inside the static directory are served, never hidden ones, and only types with
a content type named here. Naming the types makes the answer the same on every machine: the
system's mimetypes table varies (it may call ``.js`` ``application/javascript``, or not know
``.mjs`` at all), and with ``nosniff`` on every response a browser will not run a script
served under a type it does not take for JavaScript.

Plain functions and constants; the handlers call them on the event loop.
"""

from __future__ import annotations

from pathlib import Path

from tkchat.installed import static_root

STATIC_DIR = static_root()  # package data, in a wheel as in a clone

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".woff2": "font/woff2",
    ".wasm": "application/wasm",
}

NOT_INSTALLED_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tkchat serve</title></head>
<body><h1>tkchat serve</h1>
<p>The server is running, but the browser client is not installed
(<code>tkchat/serve/static/</code> is missing or empty: reinstall tkchat).</p>
<p>The API works: <code>POST /chat</code>, <code>POST /v1/chat/completions</code>,
<code>GET /health</code>.</p></body></html>
"""


def client_missing(root: Path) -> str | None:
    """None when ``root`` holds the browser client; else the sentence ``tkchat serve`` prints
    at start (the page then says the same)."""
    if (root / "index.html").is_file():
        return None
    return (
        f"the browser client is not installed ({root} has no index.html): the API works, "
        "the page at / does not; reinstall tkchat"
    )


def static_file(root: Path, relative: str) -> Path | None:
    """The file ``relative`` names inside ``root``, or None: nothing outside ``root`` (``..``,
    symlinks out), no hidden files, and only types we name a content type for."""
    try:
        base = root.resolve()
        path = (base / relative).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
    except (OSError, ValueError):
        return None
    if any(part.startswith(".") for part in path.relative_to(base).parts):
        return None
    return path if path.suffix.lower() in CONTENT_TYPES else None
