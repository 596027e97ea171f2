"""``tkchat bench --class N``: a class of N simulated students sharing one ``tkchat serve``.

- :mod:`.students` — one student: asks, reads the answer as it streams (its place in the line
  first), reads it for a while, asks again, with its own conversation;
- :mod:`.run` — the server in a process of its own, the class, a monitor asking ``/health``,
  and the figures: every request answered or told its place, none lost, none mixed up, served
  in the order they came, the line's waits, ``/health``'s latency.
"""
