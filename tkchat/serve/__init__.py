"""``tkchat serve``: the same event stream over HTTP (Server-Sent Events), for a browser client
and for remote desktop clients. See :mod:`tkchat.serve.server`.

Needs the optional extra ``serve`` (Starlette and uvicorn); nothing is imported here, so
``import tkchat.serve`` works without it. The browser client lives in ``static/``.
"""
