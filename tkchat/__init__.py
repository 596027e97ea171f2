"""tkchat: an offline Tkinter chat for local GGUF models that never blocks its window.

The app is laid out along the three stages of a streaming answer:

- ``tkchat.generate``     — generation: the model runs on a worker thread and emits events.
- ``tkchat.transport``    — transport: a thread-safe queue carries the events to the UI.
- ``tkchat.consume``      — consumption logic: reorder, drop stale generations, coalesce text.
- ``tkchat.ui``           — the Tk window: one ``after()`` loop drains the queue every 16 ms.
- ``tkchat.antipatterns`` — the same stages done wrong on purpose, for the lessons.

Beside it, in a house of its own that the app never imports, the lab: ``tkchat.lab`` — the
bench, the grader and the recorder that measure the window (lag, tokens/s, cancel).
"""

__version__ = "0.1.0"
