"""The classroom in the window: the mode menu and banner, the lesson panel, the lag timeline, live
figures, a student's pipeline, the watchdog, record and replay."""
