"""Who held the event loop: a sampler of the Tk main thread's stack, the attribution of each
late moment to the code that caused it, and a Chrome trace-event writer.

Tk-free (it reads stacks and clocks, never a widget), below ``ui`` and ``lab``, which both
use it: the window runs the sampler to label its lag timeline and to tell the watchdog live,
the bench to put a culprit on every long task and to write ``--trace FILE``.
"""
