"""asyncio, done right: the two asyncio modes of the window, and the async token sources.

tkchat's own pipeline moves an answer with a worker thread, a queue and a 16 ms tick
(``tkchat/ui/pipeline.py``). Many programs are written with asyncio instead; this room shows
how such a program keeps a Tk window smooth, as real code a class can switch to:

- :mod:`.thread_loop` — mode ``asyncio-thread`` (the one tkchat recommends): an asyncio loop
  on a thread of its own; its coroutines hand events to the same channel and tick;
- :mod:`.tk_loop` — mode ``asyncio-tk``: Tk's event loop runs the asyncio loop a short step
  every 16 ms, so coroutines run on the main thread (and must never block);
- :mod:`.answer` — one answer as an asyncio task: ``async for`` over a token source, exactly
  one final event, and what Stop cancels;
- :mod:`.local_source` — the local model as an async iterator (the model on a worker thread);
- :mod:`.remote_source` — a server's answer through an async HTTP client (httpx);
- :mod:`.sources` — which source answers, for the model the window holds.

Each module says which thread runs what. The ways to get asyncio wrong in a window are the
``asyncio-*`` demos of ``tkchat/antipatterns/``. Nothing of the window imports this room: the
modes registry (:data:`tkchat.modes.PIPELINES`) names its pipelines by import path.
"""
