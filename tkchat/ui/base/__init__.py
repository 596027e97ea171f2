"""The window's ground floor: what every part of it shares and nothing of a feature — the
interface's language, the message box, the status line, notices, what is remembered
between runs, the conversation as the model reads it, and the one value that hands these to
each part (:class:`~tkchat.ui.base.services.Services`)."""
