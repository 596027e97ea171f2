"""``python -m tkchat`` starts the app, exactly like the ``tkchat`` command."""

from tkchat.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
