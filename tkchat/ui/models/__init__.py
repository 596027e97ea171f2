"""Models in the window: the picker, the catalogue dialog and its downloads, switching the
backend."""
