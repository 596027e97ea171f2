"""``tkchat bench``'s scenarios besides the modes: the final render of a long answer, a saved
conversation opened and scrolled, a long conversation at several lengths (``--long-chat``).
Each is a script the bench's runner drives (tkchat/measure/script.py)."""
