"""The script's work folder, seen from dsstar's side: what is in it, how much, and removing what a
script wrote past the cap. Nothing here follows a link: a script may have planted links anywhere
in it, and every process a script started is dead by the time these run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

Inventory = dict[str, tuple[int, int]]


def _entries(folder: Path):
    """(relative path, lstat) of every entry below `folder`, links included but never followed."""
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            try:
                yield os.path.relpath(path, folder), os.lstat(path)
            except OSError:
                continue


def inventory(folder: Path) -> Inventory:
    """Identity (inode, change time) of each entry: no script can forge a change time."""
    return {relative: (st.st_ino, st.st_ctime_ns) for relative, st in _entries(folder)}


def usage(folder: Path) -> int:
    """Bytes on disk under `folder`, whatever the names, times or kinds of the entries."""
    return sum(st.st_blocks * 512 for _, st in _entries(folder))


def remove_new(folder: Path, before: Inventory) -> None:
    """Remove every entry that is not in `before` as it was (new, or changed since), deepest first."""
    doomed = [(relative, st) for relative, st in _entries(folder) if before.get(relative) != (st.st_ino, st.st_ctime_ns)]
    for relative, st in sorted(doomed, key=lambda item: item[0].count(os.sep), reverse=True):
        path = os.path.join(folder, relative)
        try:
            if stat.S_ISDIR(st.st_mode):
                _remove_tree(path)
            else:
                os.unlink(path)
        except FileNotFoundError:
            continue


def _remove_tree(path: str) -> None:
    for dirpath, dirnames, filenames in os.walk(path, topdown=False, followlinks=False):
        for name in filenames:
            os.unlink(os.path.join(dirpath, name))
        for name in dirnames:
            inner = os.path.join(dirpath, name)
            os.unlink(inner) if os.path.islink(inner) else os.rmdir(inner)
    os.rmdir(path)
