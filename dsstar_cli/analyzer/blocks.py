"""Small delimited files that hold several blocks, one under another, separated by empty rows: a
data book's "Number of reports: 2,600,678" lines, then a titled table, then another. Read as one
table, the first block's values become column names and the tables below are lost in it. Each
block is told apart here, with its own `pd.read_csv` call when it is a titled table."""

from __future__ import annotations

import csv
import io
import re

MAX_BYTES = 256 * 1024   # Only small files: a big one is a table, not a page of a report.
MAX_BLOCKS = 8
MAX_INLINE_ROWS = 6      # A block of this few label-value rows is shown whole.
THOUSANDS = re.compile(r"-?\d{1,3}(,\d{3})+")


def _rows(text: str, delimiter: str) -> list[list[str]] | None:
    """The rows, one per line; None when a quoted cell spans lines (line numbers would not match)."""
    lines = text.splitlines()
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    return rows if len(rows) == len(lines) else None


def _cells(row: list[str]) -> list[str]:
    cells = [c.strip() for c in row]
    while cells and not cells[-1]:
        cells.pop()
    return cells


def _table(block: list[tuple[int, list[str]]]) -> tuple[str, int, list[str], int] | None:
    """(title, header line, header cells, data rows) when the block is a header of two or more
    cells, under a one-cell title row or not, then rows."""
    title = block[0][1][0] if len(block[0][1]) == 1 else ""
    rest = block[1:] if title else block
    if len(rest) < 2 or len(rest[0][1]) < 2:
        return None
    return title, rest[0][0], rest[0][1], len(rest) - 1


def blocks_note(text: str, delimiter: str, options: dict) -> str | None:
    """A note naming each block (two or more blocks of two or more rows), with a loader for each
    titled table; None for a file that is one table."""
    if len(text) > MAX_BYTES:
        return None
    rows = _rows(text, delimiter)
    if rows is None:
        return None
    blocks: list[list[tuple[int, list[str]]]] = [[]]
    for number, row in enumerate(rows):
        cells = _cells(row)
        if cells:
            blocks[-1].append((number, cells))
        elif blocks[-1]:
            blocks.append([])
    blocks = [b for b in blocks if len(b) >= 2 and any(len(cells) >= 2 for _, cells in b)]  # Not notes.
    if len(blocks) < 2:
        return None
    keep = {k: v for k, v in options.items() if k in ("sep", "encoding", "thousands", "decimal")}
    if "thousands" not in keep and any(THOUSANDS.fullmatch(c) for block in blocks for _, cells in block for c in cells):
        keep["thousands"] = ","
    extra = "".join(f", {k}={v!r}" for k, v in keep.items())
    width = max(len(row) for row in rows)  # Trailing empty cells read as 'Unnamed' columns: usecols drops them.
    told = []
    for block in blocks[:MAX_BLOCKS]:
        first, last = block[0][0] + 1, block[-1][0] + 1
        table = _table(block)
        if len(block) <= MAX_INLINE_ROWS and not (table and table[0]):  # Label-value rows: shown whole.
            told.append(f"lines {first}-{last}: " + "; ".join(" | ".join(c[:60] for c in cells) for _, cells in block))
        elif table:
            title, header_line, header, count = table
            told.append(f"lines {first}-{last}: " + (f"{title[:100]!r}, " if title else "")
                        + f"header {', '.join(map(repr, header[:8]))}, {count} row(s): "
                        f"pd.read_csv(path, skiprows={header_line}, nrows={count}{extra}"
                        + (f", usecols=range({len(header)})" if width > len(header) else "") + ")")
        else:
            told.append(f"lines {first}-{last}: {len(block)} rows, the first {' | '.join(block[0][1])[:100]!r}")
    more = f" (and {len(blocks) - MAX_BLOCKS} more)" if len(blocks) > MAX_BLOCKS else ""
    return (f"The file holds {len(blocks)} blocks separated by empty rows{more}; the call above reads them as one "
            "table. Each block: " + " || ".join(told))
