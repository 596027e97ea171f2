"""The recorded run: ``tkchat record`` saves an answer's tokens with their times, the lag and
the input (:mod:`.file` is the format), ``tkchat replay`` plays it back in a window, and
``tkchat bench --recording`` reports on it."""
