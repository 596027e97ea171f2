"""Settings in the window: the dialog, where its answers go, what is remembered between runs."""
