"""The script's work folder, seen from dsstar's side: what is in it, how much, and removing what a
script wrote past the cap. Every walk goes through fdtree (by descriptor, no recursion, no path
built), so no depth, path length or link a script leaves can crash it, hide bytes from the cap or
lead it outside. Every process a script started is dead by the time these run."""

from __future__ import annotations

from pathlib import Path

from dsstar_cli import fdtree

# Who each entry is, (device, inode) -> change time. No script can forge a change time, and a
# rename or a new hard link moves it, so an entry with its old identity is one no script touched.
Inventory = dict[tuple[int, int], int]


def inventory(folder: Path) -> Inventory:
    """The identity of every entry below `folder` (empty when it cannot be walked: then everything
    found after a script counts as the script's)."""
    try:
        return {entry.key: entry.stat.st_ctime_ns for entry in fdtree.entries(folder, repair=True)}
    except OSError:
        return {}


def usage(folder: Path) -> int:
    """Bytes on disk under `folder`, whatever the names, depth, times or kinds of the entries.
    Raises OSError when part of it cannot be walked (the caller counts that as over the cap)."""
    return sum(entry.stat.st_blocks * 512 for entry in fdtree.entries(folder, repair=True))


def remove_new(folder: Path, before: Inventory) -> None:
    """Remove every entry that is not in `before` as it was (new, or changed since): a folder that
    was there before stays and is cleaned inside, a new one goes with everything in it. Raises the
    first OSError met once it has removed all it could."""
    failed: list[OSError] = []

    def kept(entry: fdtree.Entry) -> bool:
        return entry.key in before and (entry.is_folder or before[entry.key] == entry.stat.st_ctime_ns)

    try:
        for entry in fdtree.entries(folder, descend=kept, repair=True):
            if not kept(entry):
                try:
                    fdtree.remove(entry.folder, entry.name)
                except OSError as exc:
                    failed.append(exc)
    except OSError as exc:
        failed.append(exc)
    if failed:
        raise failed[0]


def enforce_cap(folder: Path, before: Inventory, cap_mb: int) -> str:
    """'' when `folder` is within `cap_mb`; else (what the script wrote is then removed) the one
    line that says why its step failed. A folder that cannot be walked counts as over the cap."""
    try:
        if usage(folder) <= cap_mb * 1024 * 1024:
            return ""
        why = f"the script wrote past the run folder's cap of {cap_mb} MB"
    except OSError as exc:
        why = f"the script left a work folder that cannot be walked ({_reason(exc)}), counted as past its cap"
    try:
        remove_new(folder, before)
    except OSError as exc:
        return f"[dsstar: {why}; what it wrote could not all be removed ({_reason(exc)})]"
    return f"[dsstar: {why}; what it wrote was removed]"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__

