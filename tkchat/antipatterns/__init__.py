"""BROKEN ON PURPOSE: the mistakes that freeze a chat window, reproduced for teaching.

Every module here is real code doing the real wrong thing, so a class can watch the same
prompt freeze the window and then watch the fixed pipeline (``tkchat/ui/pipeline.py``) stay
smooth. Nothing else in tkchat imports these modules except the mode registry
(``tkchat/modes.py``) — and, for the server's one, ``tkchat serve --broken`` and
``tkchat bench --serve-loop``. They break, deliberately, the rules the rest of the code keeps:

- ``blocking``            — the model loop runs in the click handler, on the Tk main thread.
- ``main_thread_reader``  — a worker generates, but the main thread loops reading the stream.
- ``per_chunk_render``    — every chunk re-renders the whole answer's markdown (quadratic).
- ``no_coalesce``         — one insert plus a forced redraw per token, no batching.
- ``blocking_server``     — ``tkchat serve --broken``: the server iterates the model's
                            generator on its asyncio event loop (the article's version).
- ``asyncio_run``         — ``asyncio.run()`` in the Send handler: "awaiting" freezes Tk.
- ``asyncio_render``      — an ``async for`` on Tk's own loop re-renders the whole answer per
                            chunk: async does not make CPU work free.
- ``asyncio_blocking_call`` — a coroutine on Tk's own loop iterates the model itself, with
                            no ``asyncio.to_thread``: one step lasts the whole answer.
- ``asyncio_slow_poll``   — Tk runs the asyncio loop every 200 ms: no lag, text in bursts.

The ``asyncio-*`` demos break what ``tkchat/aio/`` (the correct asyncio modes) does right.

Each still ends its answer by itself (the length limit stops it), so the window comes back
without anyone having to press anything.
"""
