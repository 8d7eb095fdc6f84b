"""Data files the folder's documents name but the folder lacks.

A readme that documents `payments.csv` makes a model plan around `payments.csv`; when the file is
not there, nothing else in the prompt says so, and steps are spent looking for it. So each name
with a data-file extension that a document mentions is looked up in the folder (by name, any
case, anywhere in the tree, as a file or a folder: Spark writes `sales.parquet/` as a folder), and
the names found nowhere are said, one line per document."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

from dsstar_cli.analyzer import FileDescription
from dsstar_cli.analyzer.discover import iter_data_files

DATA_EXTENSIONS = ("csv", "tsv", "tab", "psv", "json", "jsonl", "ndjson", "xlsx", "xlsm", "xls", "parquet", "pq",
                   "feather", "arrow", "sqlite", "sqlite3", "db", "h5", "hdf5", "dta", "sav", "sas7bdat", "xml")
COMPRESSIONS = ("gz", "bz2", "xz", "zip")
_EXTENSION = rf"\.(?:{'|'.join(DATA_EXTENSIONS)})(?:\.(?:{'|'.join(COMPRESSIONS)}))?"
# A bare name (`data/payments.csv`, not inside a URL or a longer path) or a quoted one that may hold
# spaces (`Q1 sales.xlsx`). Wildcards and placeholders (`*.csv`, `{year}.csv`) are no file's name.
_BARE = re.compile(rf"(?<![\w./\\$%{{*-])((?:[\w.-]+[/\\])*\w[\w.-]*{_EXTENSION})(?![\w-])", re.IGNORECASE)
_QUOTED = re.compile(rf"[`'\"]([^`'\"\n*{{}}<>]{{1,120}}?{_EXTENSION})[`'\"]", re.IGNORECASE)
MAX_NAMED = 20  # Names said per document; more are counted.


def mentioned(text: str) -> list[str]:
    """The data-file names `text` mentions (their last path part), in order of first mention."""
    quoted = [(m.start(1), m.end(1), m.group(1)) for m in _QUOTED.finditer(text)]
    bare = [(m.start(1), m.end(1), m.group(1)) for m in _BARE.finditer(text)
            if not any(start <= m.start(1) < end for start, end, _ in quoted)]  # `Q1 sales.xlsx`: one name
    names: dict[str, str] = {}
    for _, _, found in sorted(quoted + bare):
        name = re.split(r"[/\\]", found.strip())[-1]
        names.setdefault(name.lower(), name)
    return list(names.values())


def present_names(root: Path) -> set[str]:
    """Every file's and folder's name below `root` (lower case), as the analyzer lists them."""
    names: set[str] = set()
    for relative in iter_data_files(root):
        names.update(part.lower() for part in relative.split(os.sep))
    return names


def _absent(name: str, present: set[str]) -> bool:
    """Not there by its name, nor compressed (`payments.csv.gz` holds `payments.csv`)."""
    lower = name.lower()
    return lower not in present and not any(f"{lower}.{suffix}" in present for suffix in COMPRESSIONS)


def absent_note(documents: Iterable[FileDescription], root: str | Path) -> str:
    """One line per document naming data files the folder lacks, after a blank line, to follow the
    data files in the prompt ("" when no document does). The folder is walked only when some
    document names a data file."""
    named = [(doc.path, mentioned(doc.description)) for doc in documents]
    named = [(path, names) for path, names in named if names]
    if not named or not Path(root).is_dir():
        return ""
    present = present_names(Path(root))
    lines = []
    for path, names in named:
        missing = [name for name in names if _absent(name, present)]
        if missing:
            more = f", ... and {len(missing) - MAX_NAMED} more" if len(missing) > MAX_NAMED else ""
            lines.append(f"Named in {path} but not in the folder: {', '.join(missing[:MAX_NAMED])}{more}")
    return "\n\n" + "\n".join(lines) if lines else ""
