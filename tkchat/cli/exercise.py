"""``tkchat exercise [FOLDER]``: a copy of the pipeline exercise to work in (the template, the
reference solution, the four wrong ones and the instructions), from the course installed with
tkchat, so a wheel's user has them as a clone's does."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from tkchat.cli.options import Subcommands

NAME = "exercise"
DEFAULT_FOLDER = "tkchat-exercise"


def add_parser(commands: Subcommands) -> None:
    exercise = commands.add_parser(
        NAME,
        help="copy the pipeline exercise (template, solution, wrong ones) into a folder",
        description="Copy the exercise of lessons/exercises into FOLDER (default "
        f"./{DEFAULT_FOLDER}), to edit and run with --mode FILE.py:Pipeline.",
    )
    exercise.add_argument("folder", nargs="?", default=DEFAULT_FOLDER, type=Path)


def copy_exercise(target: Path) -> list[Path]:
    """Copy the exercise's files into ``target`` (made if missing); an existing file is never
    overwritten (FileExistsError names it). Returns the files copied."""
    from tkchat.course.lessons import lessons_dir

    source = lessons_dir() / "exercises"
    files = sorted(
        path
        for path in source.rglob("*")
        if path.is_file() and path.suffix in (".py", ".md") and "__pycache__" not in path.parts
    )
    clashes = [target / path.relative_to(source) for path in files]
    taken = [path for path in clashes if path.exists()]
    if taken:
        raise FileExistsError(f"{taken[0]} exists already: choose another folder")
    for path, copy in zip(files, clashes, strict=True):
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    return clashes


def run(args: argparse.Namespace) -> int:
    target: Path = args.folder
    try:
        copied = copy_exercise(target)
    except OSError as exc:
        print(f"tkchat exercise: {exc}", file=sys.stderr)
        return 1
    template = target / "pipeline_template.py"
    print(
        f"Copied {len(copied)} files into {target}. Start with {target / 'README.en.md'} "
        f"(中文: README.zh.md), then: tkchat --mode {template}:Pipeline"
    )
    return 0
