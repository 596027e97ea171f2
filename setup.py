"""The one thing pyproject.toml cannot say: ``lessons/`` is installed as ``tkchat.lessons``.

The course stays at the top of the repository, where people look for it, and the build maps
that folder into the package (``package_dir``), so a wheel carries it without a copy in the
tree. pyproject.toml's ``packages.find`` only finds folders under ``tkchat/``, and a mapped
package must be named in the list, so the list is made here; everything else about the
build is in pyproject.toml. tkchat finds these files with importlib.resources
(tkchat/installed.py).
"""

from setuptools import find_packages, setup

COURSE = ["tkchat.lessons", "tkchat.lessons.exercises", "tkchat.lessons.exercises.wrong"]

setup(
    packages=[*find_packages(include=["tkchat", "tkchat.*"]), *COURSE],
    package_dir={"tkchat.lessons": "lessons"},
)
