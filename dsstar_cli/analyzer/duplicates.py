"""Files that hold the same data, said in their descriptions: identical files, and a table whose
rows are the first rows of another's, or all among them (a cut copy).

Lab: two files with the same 6,658 rows were described as unrelated, and a 37-row cut copy of a
50-row file was not flagged; a model chose the cut copy. Two checks, both bounded:

- same bytes (any format): files of one size are hashed, a few sampled blocks first (cache.py),
  then whole, up to HASH_UP_TO each and HASH_TOTAL in all; in dsstar's process (a read, no parse);
- same rows (tables, in a bounded child: bounded.py): each table is read as its description says
  (loader_call.py); only tables under the same column names are compared, each read whole up to
  ROWS_UP_TO bytes and MAX_ROWS rows, its rows hashed (numbers as numbers, so a CSV and its
  re-saved XLSX match). A table past a bound is left out: nothing is said rather than a guess.

A note depends on other files, so it is never cached with a file's description: the analyzer
adds the notes after profiling, on every run (analyzer/__init__.py). What the child found is cached
under a key over every table it compared, so a change to any one of them is seen.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from dsstar_cli.analyzer.bounded import Child
from dsstar_cli.analyzer.cache import DescriptionCache, cache_key, sampled_hash
from dsstar_cli.analyzer.limits import AnalyzerLimits
from dsstar_cli.analyzer.loader_call import CALL, Loader, loader_of

HASH_UP_TO = 256 * 1024 * 1024   # Files hashed whole up to this size,
HASH_TOTAL = 1024 * 1024 * 1024  # and this many bytes hashed in all.
ROWS_UP_TO = 32 * 1024 * 1024    # Tables whose rows are compared, up to this size on disk,
MAX_ROWS = 500_000               # and this many rows;
EXCEL_UP_TO = 4 * 1024 * 1024    # a workbook up to this size (openpyxl reads a big one for minutes).
ROWS_TOTAL = 256 * 1024 * 1024   # Bytes of tables compared in all (the smallest first),
MAX_TABLES = 300                 # and tables.
MIN_ROWS = 5                     # A smaller table is not called a cut copy or subset of another.
CHILD_SHARE = 0.8                # Of its time bound, the child compares tables; then it answers with what it found.
SHOWN = 3                        # Other files named in one note.

Notes = dict[str, list[str]]


def _whole_hash(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def same_bytes(root: Path, sizes: dict[str, int]) -> list[list[str]]:
    """Groups (sorted) of non-empty files with identical bytes, among `sizes` (relative path -> size)."""
    by_size: dict[int, list[str]] = {}
    for relative, size in sizes.items():
        if 0 < size <= HASH_UP_TO:
            by_size.setdefault(size, []).append(relative)
    groups, hashed = [], 0
    for size, names in sorted(by_size.items()):
        if len(names) < 2:
            continue
        if hashed + size * len(names) > HASH_TOTAL:
            break
        hashed += size * len(names)
        by_hash: dict[str, list[str]] = {}
        try:
            sampled: dict[str, list[str]] = {}
            for name in names:
                sampled.setdefault(sampled_hash(root / name, size), []).append(name)
            for candidates in (c for c in sampled.values() if len(c) > 1):
                for name in candidates:
                    by_hash.setdefault(_whole_hash(root / name), []).append(name)
        except OSError:
            continue
        groups += [sorted(same) for same in by_hash.values() if len(same) > 1]
    return sorted(groups)


def _listed(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def bytes_notes(groups: list[list[str]]) -> Notes:
    notes: Notes = {}
    for group in groups:
        for name in group:
            others = [other for other in group if other != name]
            notes.setdefault(name, []).append(f"Identical to {_listed(others)} (the same bytes): one source, "
                                              "not two; use one of them.")
    return notes


COLUMNS = re.compile(r"^(\d[\d,]*) columns?[^:\n]*:(.*)$", re.MULTILINE)
DETAIL = re.compile(r"^- (.+?): ", re.MULTILINE)


def columns_said(description: str) -> tuple | None:
    """The column names a table's description gives below its load call (frame.py's `N columns:`
    line, then its `- name:` details or `  names:` line); None when it gives none. Only a filter:
    tables said to have other columns are not read again to compare their rows."""
    call = CALL.search(description)
    found = COLUMNS.search(description, call.end()) if call else None
    if found is None:
        return None
    listed = found.group(2).strip()
    if not listed:
        below = description[found.end():]
        short = re.match(r"\n  names: (.*)", below)
        listed = short.group(1) if short else ", ".join(DETAIL.findall(below.split("\n\n")[0].split("\nFirst ")[0]))
    return found.group(1), tuple(sorted(listed.split(", ")))


def table_candidates(described: dict[str, str], sizes: dict[str, int], groups: list[list[str]]) -> dict[str, dict]:
    """Tables whose rows may be compared: one load call in their description, columns said like
    another candidate's, within ROWS_UP_TO, the smallest first up to ROWS_TOTAL and MAX_TABLES; of
    files with the same bytes only the first (the others are said identical already)."""
    copies = {name for group in groups for name in group[1:]}
    said = {name: columns_said(text) for name, text in described.items() if name not in copies}
    alike = Counter(columns for columns in said.values() if columns)
    tables, total = {}, 0
    for relative in sorted(said, key=lambda name: (sizes.get(name, ROWS_UP_TO + 1), name)):
        loader, size = loader_of(described[relative]), sizes.get(relative, ROWS_UP_TO + 1)
        bound = EXCEL_UP_TO if loader is not None and loader.reader == "read_excel" else ROWS_UP_TO
        if loader is None or size > bound or alike[said[relative]] < 2:
            continue
        if total + size > ROWS_TOTAL or len(tables) == MAX_TABLES:
            break
        tables[relative], total = {"reader": loader.reader, "options": loader.options}, total + size
    return tables if len(tables) >= 2 else {}


# -- in the bounded child ------------------------------------------------------------------------

def _row_hashes(path: Path, loader: Loader) -> tuple[tuple[str, ...], object] | None:
    """(column names in order, the rows' hashes: numpy uint64 in row order), columns taken in name
    order, numbers as float64 (a CSV's 1 and an XLSX's 1.0 match); None past MAX_ROWS."""
    import numpy as np
    import pandas as pd

    from dsstar_cli.analyzer.loader_call import read

    frame = read(path, loader)  # Whole, footnote rows left out as the description says: within ROWS_UP_TO.
    if len(frame) > MAX_ROWS:
        return None
    names = sorted(range(len(frame.columns)), key=lambda i: str(frame.columns[i]))
    hashes = np.zeros(len(frame), dtype="uint64")
    for i in names:
        column = frame.iloc[:, i]
        if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
            values = column.to_numpy(dtype="float64", na_value=np.nan)
        else:
            values = column.astype(object).where(column.notna(), "").astype(str).str.strip().to_numpy(dtype=object)
        hashes = hashes * np.uint64(1000003) ^ pd.util.hash_array(values)  # Wraps around: a hash, not a number.
    return tuple(str(frame.columns[i]) for i in names), hashes


def _relation(small, large) -> str | None:
    """'same', 'same-unordered', 'prefix', 'subset' or None, for row hashes with len(small) <= len(large)."""
    import numpy as np

    if len(small) == len(large) and len(small):
        if np.array_equal(small, large):
            return "same"
        return "same-unordered" if np.array_equal(np.sort(small), np.sort(large)) else None
    if len(small) < MIN_ROWS:  # A row or two found in another table says little (one city in two states' lists).
        return None
    if np.array_equal(small, large[: len(small)]):
        return "prefix"
    return "subset" if np.isin(small, large).all() else None


def rows_relations(root: Path, tables: dict[str, dict], seconds: float) -> list[tuple[str, str, int, str, int]]:
    """(relation, smaller, its rows, larger, its rows) for tables under the same column names whose
    rows are the same ('same', 'same-unordered'), a prefix ('prefix') or a subset ('subset'). Past
    `seconds`, no more tables are read: what was found so far is answered."""
    deadline = time.monotonic() + seconds
    by_columns: dict[tuple, dict] = {}
    for relative, fields in sorted(tables.items()):
        if time.monotonic() > deadline:
            break
        try:
            read = _row_hashes(root / relative, Loader(**fields))
        except Exception:  # A table that cannot be read again is simply not compared.
            continue
        if read is not None and read[0]:
            by_columns.setdefault(read[0], {})[relative] = read[1]
    found = []
    for hashes in by_columns.values():
        ordered = sorted(hashes, key=lambda name: (len(hashes[name]), name))
        for i, small in enumerate(ordered):
            for large in ordered[i + 1:]:
                relation = _relation(hashes[small], hashes[large])
                if relation:
                    found.append((relation, small, len(hashes[small]), large, len(hashes[large])))
    return found


def rows_notes(relations: list[tuple[str, str, int, str, int]]) -> Notes:
    """One sentence per file and kind of relation, naming the other files (SHOWN at most)."""
    same: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    cut_of: dict[str, list[tuple[str, int, int]]] = {}
    cuts: dict[str, list[tuple[str, int, int]]] = {}
    among: dict[str, list[tuple[str, int, int]]] = {}
    subsets: dict[str, list[tuple[str, int, int]]] = {}
    for relation, small, m, large, n in relations:
        if relation.startswith("same"):
            order = "" if relation == "same" else ", in another order"
            same.setdefault(small, []).append(f"{large}{order}")
            same.setdefault(large, []).append(f"{small}{order}")
            rows[small] = rows[large] = n
        else:
            (cut_of if relation == "prefix" else among).setdefault(small, []).append((large, m, n))
            (cuts if relation == "prefix" else subsets).setdefault(large, []).append((small, m, n))
    notes: Notes = {}
    for name, others in same.items():
        notes.setdefault(name, []).append(
            f"Same table as {_listed(others)}: the same {rows[name]:,} rows under the same columns (only the bytes differ: line endings, quoting or format); one source, not two.")
    for name, larger in cut_of.items():
        (large, m, n), *more = sorted(larger, key=lambda item: (-item[2], item[0]))
        also = f"; likewise of {_listed([item[0] for item in more])}" if more else ""
        notes.setdefault(name, []).append(f"A cut copy of {large}: its {m:,} rows are the first {m:,} of "
                                          f"{large}'s {n:,} (same columns){also}; the fuller table is {large}.")
    for name, larger in among.items():
        (large, m, n), *more = sorted(larger, key=lambda item: (-item[2], item[0]))
        also = f"; also among the rows of {_listed([item[0] for item in more])}" if more else ""
        notes.setdefault(name, []).append(f"Its {m:,} rows are all among {large}'s {n:,} rows (same columns): "
                                          f"a subset of it{also}.")
    for name, smaller in cuts.items():
        listed = [f"{small} (its first {m:,} of {n:,} rows)" for small, m, n in sorted(smaller)]
        notes.setdefault(name, []).append(f"Cut cop{'y' if len(listed) == 1 else 'ies'} of this table: "
                                          f"{_listed(listed)}.")
    for name, smaller in subsets.items():
        listed = [f"{small} ({m:,} of its rows)" for small, m, n in sorted(smaller)]
        notes.setdefault(name, []).append(f"Subset{'' if len(listed) == 1 else 's'} of this table's rows: "
                                          f"{_listed(listed)}.")
    return notes


def _compared(root: Path, tables: dict[str, dict], limits: AnalyzerLimits, seconds: float,
              cache: DescriptionCache | None) -> list:
    """`rows_relations` over `tables`, in a bounded child; cached under a key over every table
    compared (each file's identity and sampled blocks), so an unchanged folder is not read again
    while a change to any one of them is."""
    keys = [cache_key(root / name, name, f"duplicates|{json.dumps(fields, sort_keys=True)}")
            for name, fields in sorted(tables.items())] if cache else [None]
    key = hashlib.sha256("|".join(keys).encode()).hexdigest() if all(keys) else None
    hit = cache.get(key) if key else None
    if hit is not None:
        return hit["relations"]
    child = Child(limits.memory_mb)
    try:
        fields, _ = child.profile({"duplicates": tables, "root": str(root), "limits": asdict(limits),
                                   "seconds": seconds * CHILD_SHARE}, seconds)
    finally:
        child.kill()
    if fields is None or "relations" not in fields:
        return []  # Stopped by a bound: nothing is said rather than a guess.
    if key:
        cache.put(key, fields)
    return fields["relations"]


def find(root: Path, described: dict[str, str], sizes: dict[str, int], limits: AnalyzerLimits,
         seconds: float, cache: DescriptionCache | None = None) -> Notes:
    """Notes by relative path: same bytes among every file in `sizes`, same rows among the tables
    `described` (relative path -> description), compared in a bounded child within `seconds`."""
    groups = same_bytes(root, sizes)
    notes = bytes_notes(groups)
    tables = table_candidates(described, sizes, groups)
    if tables and seconds > 0:
        relations = _compared(root, tables, limits, seconds, cache)
        for relative, more in rows_notes([tuple(r) for r in relations]).items():
            notes.setdefault(relative, []).extend(more)
    return notes
