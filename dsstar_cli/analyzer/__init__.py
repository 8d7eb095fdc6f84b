"""Data File Analyzer: a compact description of every file in the data folder.

Known formats are profiled deterministically (no model call); anything else is described by a
script the model writes (DS-STAR's method), when the caller supplies one. A file that cannot be
read still gets a description, saying what is wrong with it, so a bad file never breaks a run.

Descriptions go to the model, so a link leading outside the data folder (`users.csv -> /etc/shadow`)
is never opened unless the user opts in with `follow_links`: it is described only as such a link.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from dsstar_cli.analyzer import datasets, duplicates
from dsstar_cli.analyzer.bounded import BUDGET_GONE, profile_all
from dsstar_cli.analyzer.budget import STRUCTURE_FACTOR, Fitted
from dsstar_cli.analyzer.cache import DescriptionCache
from dsstar_cli.analyzer.discover import list_data_files, outside_check
from dsstar_cli.analyzer.formats import format_of_name, profiler_for
from dsstar_cli.analyzer.limits import AnalyzerLimits, NoData, ProfileError
from dsstar_cli.analyzer.partial import first_lines
from dsstar_cli.analyzer.siblings import MANY_FILES, listed_only, references
from dsstar_cli.analyzer.text_profiler import IN_FULL
from dsstar_cli.events import Event, Sink

# Called for a file no built-in profiler knows: (absolute path, relative name) -> description.
UnknownDescriber = Callable[[Path, str], str]


@dataclass
class FileDescription:
    path: str          # relative to the data folder
    format: str
    size_bytes: int
    method: str        # "builtin", "llm", or "metadata" (type and size only)
    description: str
    error: str | None = None
    cached: bool = False   # True when it came from the description cache
    # Nothing in it can be read as data (empty, junk bytes, unreadable, not a regular file, a link
    # not followed): a folder of only such files is refused before any model call.
    no_data: bool = False

    def as_prompt(self) -> str:
        return f"## {self.path} ({self.format}, {_human_size(self.size_bytes)})\n{self.description}"

    def as_dict(self) -> dict:
        return asdict(self)


def _human_size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size} B"


CUT_MARKER = "\n[... description cut at the size cap ...]"


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - len(CUT_MARKER)].rstrip() + CUT_MARKER


OUTSIDE_LINK = "A link leading outside the data folder (not followed; --follow-links to include it)."


def outside_link(relative: Path) -> FileDescription:
    """What is said of a link leading outside the data folder: nothing read, not even its target's name."""
    return FileDescription(str(relative), "link", 0, "metadata", OUTSIDE_LINK,
                           "link outside the data folder, not followed", no_data=True)


def _metadata_only(path: Path) -> str:
    with path.open("rb") as handle:
        head = handle.read(16)
    return f"Unrecognised format (first bytes: {head.hex(' ')}); no built-in profiler and no model description."


def not_regular(relative: Path, fmt: str) -> FileDescription:
    return FileDescription(str(relative), fmt, 0, "metadata", "Not a regular file (a device, pipe or socket): "
                           "not read.", "not a regular file", no_data=True)


def describe_file(root: Path, relative: Path, limits: AnalyzerLimits, mode: str,
                  describe_unknown: UnknownDescriber | None) -> FileDescription:
    """One file's description, in this process (the analyzer runs built-in profilers in bounded
    children instead: see `analyze_folder`)."""
    path = root / relative
    fmt = format_of_name(path.name)
    try:
        st = os.stat(path)  # Never open what is not a regular file: a FIFO would block.
        if not stat.S_ISREG(st.st_mode):
            return not_regular(relative, fmt)
        size = st.st_size
        fmt, profiler = profiler_for(path)
    except OSError as exc:
        why = exc.strerror or str(exc)
        return FileDescription(str(relative), fmt, 0, "metadata", f"Cannot be read: {why}.", why, no_data=True)
    try:
        if mode != "llm" and profiler is not None:
            method, text = "builtin", profiler(path, limits)
        elif mode != "builtin" and describe_unknown is not None:
            method, text = "llm", describe_unknown(path, str(relative))
        else:
            method, text = "metadata", _metadata_only(path)
        # Documents keep their whole text: the prompt shows them in full or by section (documents.py).
        whole = method == "builtin" and text.partition("\n")[0].endswith(IN_FULL)
        cap = limits.max_text_bytes + 200 if whole else limits.max_description_chars
        if isinstance(text, Fitted):  # Already fitted by rank: its structure may exceed the cap.
            cap *= STRUCTURE_FACTOR
        return FileDescription(str(relative), fmt, size, method, _cap(text, cap))
    except NoData as exc:
        return FileDescription(str(relative), fmt, size, "builtin", f"{cannot_read_as(fmt)}: {exc}.", str(exc),
                               no_data=True)
    except ProfileError as exc:
        return FileDescription(str(relative), fmt, size, "builtin", f"Unusable as {fmt}: {exc}.", str(exc))
    except PermissionError:
        return FileDescription(str(relative), fmt, size, "metadata", "Cannot be read: permission denied.",
                               "permission denied", no_data=True)
    except Exception as exc:  # A profiler bug or an odd file must not end the run.
        # Out of memory, or a library pandas loads late (pandas._libs.algos) could not be mapped: both
        # mean the data filled the memory bound.
        if isinstance(exc, MemoryError) or (isinstance(exc, ImportError) and "failed to map segment" in str(exc)):
            return stopped(root, relative, f"profiling ran out of the {limits.memory_mb} MB memory bound")
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return FileDescription(str(relative), fmt, size, "metadata", f"Could not be profiled ({error}).", error)


TABLE_FORMATS = {"csv", "tsv", "excel", "parquet", "feather", "sqlite"}


def cannot_read_as(fmt: str) -> str:
    """How a file with no data in it begins its description: plainly, for whoever reads it."""
    return "Could not be read as a table" if fmt in TABLE_FORMATS else f"Could not be read as {fmt}"


def profile_builtin(root: Path, relative: Path, limits: AnalyzerLimits) -> dict:
    """What a bounded child answers: the built-in description's fields."""
    return describe_file(root, relative, limits, "builtin", None).as_dict()


def stopped(root: Path, relative: Path, why: str) -> FileDescription:
    """A file whose profiling hit a bound: its type, size and first lines, and which bound it hit."""
    try:
        size = os.stat(root / relative).st_size
    except OSError:
        size = 0
    fmt = format_of_name(relative.name)
    return FileDescription(str(relative), fmt, size, "metadata", f"Not profiled: {why}. Its type ({fmt}) and size "
                           f"({_human_size(size)}) are known; read it with care (in chunks)."
                           + ("" if why == BUDGET_GONE else first_lines(root / relative, fmt)), why)


def _regular_size(path: Path) -> int | None:
    """The size of a regular file; None for anything else (never opened: a FIFO would block)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _in_child(path: Path, mode: str) -> bool:
    """A regular file a built-in profiler describes: profiled in a bounded child, not here."""
    try:
        _, profiler = profiler_for(path)
    except OSError:
        return False
    return mode != "llm" and profiler is not None


def _with_duplicate_notes(root: Path, results: list[FileDescription | None], groups: list[datasets.Dataset],
                          sizes: dict[str, int], limits: AnalyzerLimits,
                          deadline: float | None, cache: DescriptionCache | None) -> list[FileDescription | None]:
    """The results with a first line on each file holding the same data as another (duplicates.py),
    a dataset's members' lines in its description. Added after caching: such a note depends on
    other files, so a cached description never holds one (it would go stale)."""
    profiled = {r.path: r.description for r in results if r is not None and r.method == "builtin" and r.error is None}
    tables = {path: text for path, text in profiled.items() if path in sizes}
    for group in groups:  # Members are read with the load call their dataset gives them.
        tables.update({member: profiled[group.path] for member in group.members if group.path in profiled})
    seconds = limits.seconds_per_file if deadline is None else min(limits.seconds_per_file, deadline - time.monotonic())
    notes = duplicates.find(root, tables, sizes, limits, seconds, cache)
    if not notes:
        return results
    for group in groups:  # Members named as the dataset's file list names them: below their common folder.
        base = os.path.commonpath([os.path.dirname(member) for member in group.members])
        short = (lambda text: text.replace(f"{base}/", "")) if base else (lambda text: text)
        said = [short(f"Member {member}: {' '.join(notes[member])}") for member in group.members if member in notes]
        if said:
            notes[group.path] = said[:duplicates.SHOWN] + ([f"... and {len(said) - duplicates.SHOWN} more such "
                                                            "members"] if len(said) > duplicates.SHOWN else [])
    return [replace(r, description="\n".join(notes[r.path]) + "\n" + r.description)
            if r is not None and r.path in notes else r for r in results]


def analyze_folder(root: Path, limits: AnalyzerLimits, emit: Sink, mode: str = "auto",
                   describe_unknown: UnknownDescriber | None = None, workers: int = 4,
                   cache: DescriptionCache | None = None, cache_context: str = "",
                   follow_links: bool = False, deadline: float | None = None) -> list[FileDescription]:
    """Describe every data file below `root`, emitting one event per file.

    Cached descriptions, links leading outside (without `follow_links`), odd files and the model's
    descriptions are done here; every built-in profile runs in a bounded child (bounded.py), a
    few in parallel. `cache_context` names whatever else shapes a description (mode, limits, the
    describing model). Past `deadline` (time.monotonic(), the run's --timeout) files are only
    listed with their type and size."""
    started = time.monotonic()
    files = list_data_files(root, follow_links)
    emit(Event("analysis_started", {"files": len(files)}))
    context = f"{mode}|{limits}|{cache_context}"
    results: list[FileDescription | None] = [None] * len(files)
    keys: list[str | None] = [None] * len(files)
    done = 0

    def finish(index: int, result: FileDescription) -> None:
        nonlocal done
        if keys[index] and result.error is None:  # Errors may be passing (permissions): never cached.
            cache.put(keys[index], result.as_dict())
        results[index], done = result, done + 1
        emit(Event("file_described", {"path": result.path, "format": result.format, "method": result.method,
                                      "chars": len(result.description), "error": result.error,
                                      "cached": result.cached, "done": done, "files": len(files)}))

    regular, sizes, leads_outside = [], {}, outside_check(root)
    for index, relative in enumerate(files):
        path = root / relative
        # First: the cache key and the layout check read the file (a FIFO would block), and a
        # description cached while links were followed must not be served now.
        if not follow_links and leads_outside(path):
            finish(index, outside_link(relative))
        elif (size := _regular_size(path)) is not None:
            regular.append(index)
            sizes[index] = size
        else:
            finish(index, describe_file(root, relative, limits, mode, describe_unknown))
    # Many files described as one dataset: profiled together, in a bounded child (never cached:
    # a description of many files); the others as before. Past LIST_ONLY files, none is opened to
    # find its schema: files are listed with one example per folder pattern (siblings.py).
    relatives = [files[index] for index in regular]
    unread = listed_only(relatives)
    groups = datasets.find(root, relatives) if mode != "llm" and not unread else []
    grouped = {Path(member) for group in groups for member in group.members}
    results += [None] * len(groups)
    keys += [None] * len(groups)
    jobs = [(len(files) + k, root, group.as_dict()) for k, group in enumerate(groups)]
    regular = [index for index in regular if files[index] not in grouped]
    by_reference = references(root, [files[index] for index in regular]) if not unread else {}
    for index in regular:
        relative, path = files[index], root / files[index]
        if relative in unread or relative in by_reference:  # Cheap, and depends on other files: not cached.
            method, text = ("metadata", unread[relative]) if relative in unread else ("builtin", by_reference[relative])
            finish(index, FileDescription(str(relative), format_of_name(relative.name), sizes[index], method, text))
            continue
        keys[index] = cache.key(path, str(relative), context) if cache else None
        hit = cache.get(keys[index]) if keys[index] else None
        if hit is not None:
            finish(index, FileDescription(**{**hit, "cached": True}))
        elif _in_child(path, mode):
            jobs.append((index, root, relative))
        else:
            finish(index, describe_file(root, relative, limits, mode, describe_unknown))
    if jobs:
        profile_all(jobs, limits, min(workers, os.cpu_count() or 1),
                    lambda r, rel, why: stopped(r, rel, why).as_dict(),
                    lambda index, fields: finish(index, FileDescription(**fields)), deadline)
    if len(relatives) <= MANY_FILES:  # Past it, files are described by reference to one example.
        results = _with_duplicate_notes(root, results, groups, {str(files[i]): s for i, s in sizes.items()},
                                        limits, deadline, cache)
    # Members of a dataset are in its description; a dataset goes where its path sorts.
    results = sorted((result for result in results if result is not None), key=lambda result: result.path)
    emit(Event("analysis_done", {"files": len(results), "cached": sum(r.cached for r in results),
                                 "seconds": round(time.monotonic() - started, 3)}))
    return results
