"""Lines a broken quote swallows: an unclosed `"` makes a CSV reader take every line after it, up
to the next quote, as one field, so 200 lines read as "1 data row" and nothing fails. The file is
read as a CSV reader reads it (bounded: its first SCAN_BYTES); a row whose lines between its first
and its last look like rows of their own (as many delimiters as the header) swallowed them: a real
multi-line field (an address, a comment) rarely looks like that."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

SCAN_BYTES = 4 * 1024 * 1024  # ~0.15 s of csv.reader; files whose head has no quote are not scanned.


@dataclass
class Swallowed:
    """What the scan found: `lines` lines swallowed into other rows, among `read` physical lines
    below the header that parsed as `rows` records; the first such row runs from line `first` to
    line `last`."""

    lines: int
    read: int
    rows: int
    first: int
    last: int
    whole: bool  # the whole file was scanned


def scan(path: Path, encoding: str, delimiter: str, skip_rows: int = 0) -> Swallowed | None:
    """The swallowed lines in the file's first SCAN_BYTES (whole lines), or None when there are none."""
    with path.open("rb") as handle:
        data = handle.read(SCAN_BYTES + 1)
    whole = len(data) <= SCAN_BYTES
    if not whole:
        data = data[: data.rfind(b"\n", 0, SCAN_BYTES) + 1]
    if b'"' not in data:
        return None
    text = data.decode(encoding, errors="replace")
    lines = io.StringIO(text, newline="").readlines()
    limit = csv.field_size_limit(SCAN_BYTES + 1)  # A swallowing field may be most of the scan.
    try:
        return _count(lines, delimiter, skip_rows, whole)
    except csv.Error:
        return None
    finally:
        csv.field_size_limit(limit)


def _count(lines: list[str], delimiter: str, skip_rows: int, whole: bool) -> Swallowed | None:
    reader = csv.reader(iter(lines), delimiter=delimiter)
    width, previous, header_end, rows, swallowed, first = None, 0, 0, 0, 0, None
    for index, record in enumerate(reader):
        start, end = previous + 1, reader.line_num  # 1-based physical lines this record took
        previous = end
        if index < skip_rows or not record:
            continue
        if width is None:  # The header (or the first row of a header-less file) gives the width.
            width, header_end = len(record), end
            continue
        rows += 1
        # lines[start:end - 1]: the lines between the row's first (start - 1) and its last (end - 1).
        if width >= 2 and any(line.count(delimiter) == width - 1 for line in lines[start:end - 1]):
            swallowed += end - start
            first = first or (start, end)
    if not swallowed:
        return None
    return Swallowed(swallowed, previous - header_end, rows, first[0], first[1], whole)


def note(found: Swallowed) -> str:
    """The warning a description carries: how many lines, from which line, and how to read them."""
    where = "" if found.whole else f" (in the first {found.read:,} lines below the header, all that was checked)"
    spans = found.last - found.first + 1
    return (f"Broken quoting: {found.lines:,} line(s), most looking like rows of their own, are read inside a "
            f"quoted field of another row{where}; the first such field opens on line {found.first:,} and closes on line "
            f"{found.last:,} ({spans:,} lines read as 1 row); {found.read:,} lines below the header parse as "
            f"{_rows(found.rows)}. The rows counted here are rows as parsed: check that quote; quoting=3 "
            "(csv.QUOTE_NONE) in the load call reads every line as a row.")


def _rows(n: int) -> str:
    return f"{n:,} data row" + ("" if n == 1 else "s")
