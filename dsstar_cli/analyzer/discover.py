"""Which files in a data folder get described: every regular file, recursively, but not hidden
files or version-control and tool folders (and never through a symlink loop)."""

from __future__ import annotations

import os
from pathlib import Path

SKIPPED_DIRS = {"__pycache__", "node_modules", ".git", ".hg", ".svn", ".dsstar"}


def list_data_files(root: Path) -> list[Path]:
    """Paths relative to `root`, sorted, hidden entries and tool folders skipped."""
    found: list[Path] = []
    seen_dirs: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        st = os.stat(dirpath)
        if (st.st_dev, st.st_ino) in seen_dirs:  # A symlink loop: walk each real folder once.
            dirnames[:] = []
            continue
        seen_dirs.add((st.st_dev, st.st_ino))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in filenames:
            path = Path(dirpath, name)
            if not name.startswith(".") and (path.is_file() or path.is_symlink()):
                found.append(path.relative_to(root))
    return sorted(found)
