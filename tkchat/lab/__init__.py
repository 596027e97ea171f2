"""The lab: what measures, grades and records the chat window, apart from the app itself.

``bench/`` (``tkchat bench``: every mode against baselines of the same run, the scenarios, the
lessons' claims), ``selftest/`` (the grader: four questions asked of a real window from a
process of its own, one student or a class), ``classroom/`` (a class of simulated students on
one server), ``recording/`` (``tkchat record`` and ``tkchat replay``), ``watchdog.py`` (the
second process that shows a frozen window is frozen) and ``commands/`` (their command lines).
The app imports nothing from here; the lab sees a window through the Protocols it declares.
"""
