"""Consumption logic, free of Tk so it can be tested without a window.

:class:`~tkchat.consume.stream_consumer.StreamConsumer` turns whatever was drained from the
queue in one tick into "text to append" and "the final event", in order, for the current
generation only. The Tk side (``tkchat.ui.pump``) calls it once per 16 ms tick.
"""
