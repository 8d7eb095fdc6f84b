"""Removing runs from the history: `dsstar runs rm RUN...` and `dsstar runs prune --older-than 30d`.

Only what `dsstar runs` lists is ever removed: a folder named as a run id, directly in one of the
run roots (history.run_roots). A path given that resolves anywhere else is refused, so a mistyped
path cannot remove the user's own files. A run whose journal another process holds locked (a run
still going, or being resumed: see runlog) is left alone; the lock is held while its folder is
removed, so no `resume` can start on a folder half gone. Nothing is followed through a link
(fdtree.remove_path).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from dsstar_cli import fdtree
from dsstar_cli.errors import UsageError
from dsstar_cli.history import RUN_ID, find_run, run_folders, run_roots
from dsstar_cli.runlog import lock_journal

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(text: str) -> float:
    """Seconds in `30d`, `12h`, `90m`, `2w`, `45s` or a sum such as `1d12h`."""
    compact = text.strip().lower()
    if not compact or _DURATION.sub("", compact):
        raise UsageError(f"--older-than takes a duration such as 30d, 12h, 90m or 2w, not {text!r}")
    return sum(float(number) * _UNITS[unit] for number, unit in _DURATION.findall(compact))


def named_runs(refs: list[str], configured: str | None) -> list[Path]:
    """The run folders `refs` name (as `runs show` takes them: id, unique prefix, or folder), each
    checked to be a run folder the history lists. UsageError for the first that is not."""
    roots = run_roots(configured)
    folders: list[Path] = []
    for ref in refs:
        folder = find_run(ref, configured)
        if folder.parent not in roots or not RUN_ID.fullmatch(folder.name):
            raise UsageError(f"{ref} is not in the runs folder ({roots[0]}): only runs that `dsstar runs` "
                             "lists are removed")
        if folder not in folders:
            folders.append(folder)
    return folders


def last_written(folder: Path) -> float:
    """When the run last wrote its journal (a resumed run counts from its resumption), as a timestamp."""
    for path in (folder / "events.jsonl", folder):
        try:
            return path.stat().st_mtime
        except OSError:
            continue
    return time.time()


def runs_older_than(seconds: float, configured: str | None, now: float | None = None) -> list[Path]:
    """Every listed run whose journal was last written more than `seconds` ago, oldest first."""
    cutoff = (time.time() if now is None else now) - seconds
    return sorted((folder for folder in run_folders(configured) if last_written(folder) < cutoff),
                  key=lambda folder: folder.name)


@dataclass
class Removal:
    removed: list[str] = field(default_factory=list)
    in_use: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (id, why)


def remove_runs(folders: list[Path]) -> Removal:
    """Remove each folder that no process holds; say which were removed, in use, or could not be."""
    done = Removal()
    for folder in folders:
        try:
            journal = os.open(folder / "events.jsonl", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            journal = None  # A run folder dsstar never finished creating: nobody holds it.
        except OSError as exc:
            done.failed.append((folder.name, exc.strerror or str(exc)))
            continue
        try:
            if journal is not None and not lock_journal(journal):
                done.in_use.append(folder.name)
                continue
            fdtree.remove_path(folder)
            done.removed.append(folder.name)
        except OSError as exc:
            done.failed.append((folder.name, exc.strerror or str(exc)))
        finally:
            if journal is not None:
                os.close(journal)
    return done
