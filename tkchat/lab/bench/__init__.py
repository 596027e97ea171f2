"""The bench: the window measured in every mode against baselines of the same run, and the
scenarios and lesson demos it runs (``tkchat bench``)."""
