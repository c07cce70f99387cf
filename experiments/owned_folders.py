"""Folders a script makes, and may therefore remove or replace, marked so that no script removes
a folder it did not make (a user's --images-dir, say, that happens to hold other files).

    make_owned(path, "writer_benchmark")     # a new, marked folder
    remove_owned(path, "writer_benchmark")   # removes it only if it is absent, empty or marked

A folder `ffcv run --output-dir` made holds recipe.toml: pass run_folder=True to count that as
made by the script too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

MARK = ".made-by"


def make_owned(path, maker: str) -> Path:
    """Creates `path` (and its parents) with the mark naming `maker`; it must not exist yet."""
    path = Path(path)
    path.mkdir(parents=True)
    (path / MARK).write_text(maker + "\n")
    return path


def is_owned(path, run_folder: bool = False) -> bool:
    path = Path(path)
    return (path / MARK).is_file() or (run_folder and (path / "recipe.toml").is_file())


def remove_owned(path, maker: str, run_folder: bool = False) -> None:
    """Removes `path` when it is absent, an empty folder, or one a script made (marked); anything
    else stops the script with a message naming it, and it is left as it is."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    if path.is_dir() and not path.is_symlink():
        if is_owned(path, run_folder):
            shutil.rmtree(path)
            return
        if not any(path.iterdir()):
            path.rmdir()
            return
    raise SystemExit(f"{maker}: {path} exists and was not made by this script (it has no {MARK} "
                     f"file); it is left as it is: move it away or name another folder")
