"""Many small files of one layout (per-day or per-store exports): in a folder of more than
MANY_FILES files, where the retriever shows the model a hundred descriptions at most, one file of
each layout is profiled and every other small file with the same first line is described by
reference: its columns (that first line), its own row count and size. A folder of 10,000 such
files is then analysed in seconds instead of minutes.

Past LIST_ONLY files not even that: each folder pattern's files of one type (`day*/` + `.csv`) get
one profiled example, and every other file is listed by name and size without being opened (the
retriever would drop their descriptions anyway), so 100,000 files cost seconds, not minutes."""

from __future__ import annotations

import re
from pathlib import Path

MANY_FILES = 1000
LIST_ONLY = 10_000
MAX_EXAMPLES = 1000  # Files profiled, at most, in a folder past LIST_ONLY.
SMALL_BYTES = 1024 * 1024
LINE_FORMATS = {".csv", ".tsv", ".tab", ".psv", ".jsonl", ".ndjson"}
SHOWN_HEADER_CHARS = 300


def _head_and_rows(path: Path) -> tuple[bytes, int] | None:
    """(first line, lines after it) of a small line-based file; None for anything else."""
    if path.suffix.lower() not in LINE_FORMATS:
        return None
    try:
        with path.open("rb") as handle:
            content = handle.read(SMALL_BYTES + 1)
    except OSError:
        return None
    if len(content) > SMALL_BYTES or not content or b"\x00" in content[:8192]:
        return None
    first, _, rest = content.partition(b"\n")
    rows = rest.count(b"\n") + (1 if rest and not rest.endswith(b"\n") else 0)
    return first.rstrip(b"\r"), rows


def references(root: Path, relatives: list[Path]) -> dict[Path, str]:
    """Description by reference for each file that shares its first line with an earlier one
    (the first of each layout is left to be profiled)."""
    if len(relatives) <= MANY_FILES:
        return {}
    first_of: dict[tuple[str, bytes], Path] = {}
    described: dict[Path, str] = {}
    for relative in relatives:
        found = _head_and_rows(root / relative)
        if found is None:
            continue
        head, rows = found
        layout = (relative.suffix.lower(), head)
        if layout not in first_of:
            first_of[layout] = relative
            continue
        shown = head.decode("utf-8", errors="replace")[:SHOWN_HEADER_CHARS]
        described[relative] = (f"Same layout as {first_of[layout]} (identical first line: {shown}); "
                               f"{rows:,} line(s) after it. Load it exactly as {first_of[layout]} is loaded.")
    return described


def _pattern(relative: Path) -> str:
    """The glob a file shares with its siblings: numbers in folder names become `*`, plus `*.suffix`."""
    parent = re.sub(r"\d+", "*", relative.parent.as_posix())
    name = f"*{relative.suffix.lower()}" if relative.suffix else "*"
    return name if parent == "." else f"{parent}/{name}"


def listed_only(relatives: list[Path]) -> dict[Path, str]:
    """Past LIST_ONLY files: a description (without opening the file) for all but one example of each
    folder pattern and type; the examples (MAX_EXAMPLES at most) are left to be profiled."""
    if len(relatives) <= LIST_ONLY:
        return {}
    groups: dict[str, list[Path]] = {}
    for relative in relatives:
        groups.setdefault(_pattern(relative), []).append(relative)
    described: dict[Path, str] = {}
    for number, (pattern, members) in enumerate(groups.items()):
        example = members[0] if number < MAX_EXAMPLES else None
        for relative in members:
            if relative == example:
                continue
            like = f"; {example} is described as their example" if example else ""
            described[relative] = (f"Listed, not read: one of {len(members):,} files matching {pattern} in a "
                                   f"folder of {len(relatives):,} files{like}.")
    return described
