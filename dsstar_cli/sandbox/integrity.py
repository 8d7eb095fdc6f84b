"""Prove the data folder was not touched: a metadata snapshot before and after each script.

The change time (ctime) is in the snapshot because no process can set it: a write that keeps the
size and then restores the mtime with os.utime still moves the ctime, and so does chmod, a rename
or a hard link (which also changes the link count)."""

from __future__ import annotations

import os
from pathlib import Path

from dsstar_cli import fdtree

Snapshot = dict[str, tuple[int, ...]]


def snapshot_folder(root: Path) -> Snapshot:
    """(size, mtime, ctime, mode, inode, links) of `root` and every entry below it, hidden ones included."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return {".": (-1,)}  # The whole folder is gone: every entry compares as removed.
    entries: Snapshot = {".": (st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_ino)}
    try:  # By descriptor: in the basic tier a script may leave a tree no path can name here.
        for entry in fdtree.entries(root):
            st = entry.stat
            entries[_name(entry)] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_ino, st.st_nlink)
    except OSError:
        pass  # What could not be walked (an unreadable data folder) is not compared, as before.
    return entries


def _name(entry: fdtree.Entry) -> str:
    """Its path, or for one past PATH_MAX its name and the inode of its folder (the same in both
    snapshots while that folder is)."""
    return entry.path or f"(past PATH_MAX, in folder inode {os.fstat(entry.folder).st_ino})/{entry.name}"


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths added, removed or altered between two snapshots, sorted."""
    keys = set(before) | set(after)
    changed = sorted(k for k in keys if before.get(k) != after.get(k))
    # The folder itself changes with any entry added or removed: name it only when nothing else did.
    return [k for k in changed if k != "."] or ["(the data folder itself)" for k in changed]
