"""The lab's commands: ``tkchat bench``, ``selftest``, ``watchdog``, ``record`` and
``replay``, named in the command line's table (:data:`tkchat.cli.LAB_COMMANDS`)."""
