"""``tkchat selftest``: four questions asked of a real window with real input events, the
benchmark's targets, and a grade — computed by a process that never imports the pipeline.

The grader (:mod:`.runner`) starts the window in a child process (:mod:`.child`, or
:mod:`.qt_child` for the Qt client) with a home and a data folder of its own; the child
reports raw figures (:mod:`.protocol`, :mod:`.observe`, :mod:`.instruments`) and beats a
heartbeat on a pipe. The grader plays the user with ``xdotool`` (:mod:`.driver`), watches
the heartbeat from outside, attributes every late thing to inside or outside the pipeline's
calls (:mod:`.attribution`), judges (:mod:`.questions`, :mod:`.targets`: PASS, FAIL, or BUSY
when the machine rather than the pipeline was slow) and prints the report (:mod:`.report`).
``--mode FOLDER/`` grades a class (:mod:`.classroom`).
"""
