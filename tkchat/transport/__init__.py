"""Transport: how events travel from the generating thread to the consuming thread.

In-process this is :class:`~tkchat.transport.channel.EventChannel`, a ``queue.Queue``.
:mod:`tkchat.transport.chaos` can stand in front of it to break order on purpose (lesson 13).
"""
