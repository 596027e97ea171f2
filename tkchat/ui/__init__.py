"""Consumption on the Tk main thread: the window, the 16 ms drain loop, the health bar."""
