"""The course: lessons in English and Chinese, the class plans, the exercises and the figures
the lessons quote. Not code: installed as the package data ``tkchat.lessons`` (setup.py maps
this folder into the package) and found with importlib.resources (tkchat/installed.py)."""
