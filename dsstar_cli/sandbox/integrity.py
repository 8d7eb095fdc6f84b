"""Prove the data folder was not touched: a metadata snapshot before and after each script."""

from __future__ import annotations

import os
from pathlib import Path

Snapshot = dict[str, tuple[int, int, int, int]]


def snapshot_folder(root: Path) -> Snapshot:
    """(size, mtime_ns, mode, inode) of every entry below `root`, hidden ones included."""
    entries: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            entries[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns, st.st_mode, st.st_ino)
    return entries


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths added, removed or altered between two snapshots, sorted."""
    keys = set(before) | set(after)
    return sorted(k for k in keys if before.get(k) != after.get(k))
