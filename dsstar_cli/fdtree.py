"""Walking and removing a folder a script may have filled, whatever it put there.

A script can leave a tree no path can name: folders 100,000 deep, or a path longer than PATH_MAX
(4,096 bytes), where every call that takes a path fails with ENAMETOOLONG and os.walk, which
recurses and joins paths, either crashes dsstar (RecursionError) or silently skips what lies below.
So the walk here is a loop, not a recursion, and it never builds a path: it holds one descriptor,
of the folder it is in, looks at each entry by name relative to it (fstatat, unlinkat), goes down
by opening a child relative to it, and comes back up through "..", checking that it arrived in
the folder it came from. Depth and path length do not matter, and only one descriptor is open at
a time whatever the depth. A link is never followed: entries are lstat'ed and folders opened with
O_NOFOLLOW.

In a tree that is dsstar's own (`repair`: the work folder), a folder a script took our
permissions away from (chmod 000 on a folder it owns, which is also ours) is given them back
first, and a folder that still cannot be walked raises OSError: the caller decides (the cap counts
it as exceeded). Elsewhere (the data folder, never modified) a folder we may not open is skipped."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Callable, Iterator

PATH_MAX = 4096
OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Entry:
    """One entry below the walk's root, valid while the walk is looking at it."""
    folder: int              # descriptor of the folder holding it (name it relative to this)
    name: str
    stat: os.stat_result     # lstat: a link is itself, never its target
    path_length: int         # characters of its path relative to the root
    _parents: list[str]      # the names leading to it (the walk's own list, changed as it goes)

    @property
    def is_folder(self) -> bool:
        return stat.S_ISDIR(self.stat.st_mode)

    @property
    def key(self) -> tuple[int, int]:
        """(device, inode): who the entry is, wherever it lies."""
        return self.stat.st_dev, self.stat.st_ino

    @property
    def path(self) -> str | None:
        """Its path relative to the root, or None when that path is longer than PATH_MAX (no tool
        could open it by that path, and building it would cost as much as the depth)."""
        if self.path_length >= PATH_MAX:
            return None
        return "/".join(self._parents + [self.name])


class TreeChanged(OSError):
    """A folder changed under the walk (going down, or back up through ".."): only a process
    still running in the tree could do that."""


def entries(root: str | os.PathLike, descend: Callable[[Entry], bool] = lambda entry: True,
            repair: bool = False) -> Iterator[Entry]:
    """Every entry below `root`, each folder before what it holds; the walk goes into a folder
    when `descend(entry)` says so (asked after the caller has looked at it, so the caller may
    remove it first). The caller may unlink the entry it is looking at. `repair`: see above."""
    for entry, leaving in _walk(_open_folder(None, os.fspath(root), repair=repair), descend, repair):
        if not leaving:
            yield entry


def remove(folder: int, name: str) -> None:
    """Remove `name` from the folder open as `folder`: a file or link, or a folder with everything
    below it, however deep. A name already gone is not an error."""
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=folder)
            return
        for entry, leaving in _walk(_open_folder(folder, name, st, repair=True), lambda entry: True, True):
            if leaving or not entry.is_folder:
                _gone(os.rmdir if leaving else os.unlink, entry)
        os.rmdir(name, dir_fd=folder)
    except FileNotFoundError:
        pass


def _gone(remove_call: Callable, entry: Entry) -> None:
    try:
        remove_call(entry.name, dir_fd=entry.folder)
    except FileNotFoundError:
        pass


def remove_path(path: str | os.PathLike) -> None:
    """Remove the file or folder at `path` (a path that can be named: the run folder itself)."""
    path = os.path.abspath(path)
    parent = os.open(os.path.dirname(path), OPEN_FOLDER)
    try:
        remove(parent, os.path.basename(path))
    finally:
        os.close(parent)


@dataclass
class _Frame:
    """A folder the walk is in or below: who it is, and the names in it still to look at."""
    key: tuple[int, int]
    pending: list[str]
    entry: Entry | None        # the entry that led into it (None for the root)


def _walk(fd: int, descend: Callable[[Entry], bool], repair: bool) -> Iterator[tuple[Entry, bool]]:
    """(entry, False) for every entry below the folder open as `fd` (which the walk now owns), and
    (folder entry, True) once the walk has come back up out of a folder it went into."""
    parents: list[str] = []
    try:
        stack = [_Frame(_key(os.fstat(fd)), _names(fd), None)]
        while stack:
            frame = stack[-1]
            if not frame.pending:
                stack.pop()
                if frame.entry is not None:
                    fd = _up(fd, stack[-1].key)
                    parents.pop()
                    frame.entry.folder = fd
                    yield frame.entry, True
                continue
            name = frame.pending.pop()
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            length = (frame.entry.path_length + 1 if frame.entry else 0) + len(name)
            entry = Entry(fd, name, st, length, parents)
            yield entry, False
            if not (entry.is_folder and descend(entry)):
                continue
            try:
                child = _open_folder(fd, name, st, repair)
            except FileNotFoundError:
                continue  # The caller removed it.
            except PermissionError:
                if repair:
                    raise
                continue  # Not ours to walk, and not ours to change.
            try:
                stack.append(_Frame(_key(os.fstat(child)), _names(child), entry))
            except BaseException:
                os.close(child)
                raise
            parents.append(name)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def _key(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _names(fd: int) -> list[str]:
    """The names in the folder open as `fd`, last first (the walk pops them from the end)."""
    return sorted(os.listdir(fd), reverse=True)


def _up(fd: int, expected: tuple[int, int]) -> int:
    """The folder above the one open as `fd` (closed), which must be `expected`."""
    parent = os.open("..", OPEN_FOLDER, dir_fd=fd)
    if _key(os.fstat(parent)) != expected:
        os.close(parent)
        raise TreeChanged("a folder moved while it was being walked")
    os.close(fd)
    return parent


def _open_folder(folder: int | None, name: str, st: os.stat_result | None = None, repair: bool = False) -> int:
    """The folder `name` in `folder` (None: a path), opened without following a link; `repair`:
    when it is ours and lacks u+rwx (a script took them away), they are given back first. With
    `st` (its lstat), it must still be that folder."""
    st = st or os.stat(name, dir_fd=folder, follow_symlinks=False)
    if repair and st.st_mode & 0o700 != 0o700 and st.st_uid == os.geteuid() and stat.S_ISDIR(st.st_mode):
        _give_back_permissions(folder, name, st)
    fd = os.open(name, OPEN_FOLDER, dir_fd=folder)
    if _key(os.fstat(fd)) != _key(st):
        os.close(fd)
        raise TreeChanged(f"{name!r} changed while it was being walked")
    return fd


def _give_back_permissions(folder: int | None, name: str, st: os.stat_result) -> None:
    """Add u+rwx to the folder `name` in `folder`: through a handle that names it without opening
    it (O_PATH), so a link swapped in for it is never followed. Best effort: the open after says."""
    try:
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return
    try:
        if _key(os.fstat(handle)) == _key(st):
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(st.st_mode) | 0o700)
    except OSError:
        pass
    finally:
        os.close(handle)
