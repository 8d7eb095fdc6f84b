"""What the first rows of a table are, for CSV and Excel alike: title rows above the real header,
a header that is really data (a header-less file or list), and a pandas index written as the
first column under an empty header cell (`,acquirer,country_code` from `df.to_csv()`)."""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"^[-+]?(\d{1,3}([,.]\d{3})+|\d+)([.,]\d+)?([eE][-+]?\d+)?%?$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T][\d:.]+)?$|^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}$")
SHAPE_RUNS = re.compile(r"([a-z])+|([A-Z])+|(\d)+")
SAME_SHAPE_SHARE = 0.2   # A text cell is data-like when at least this share of the cells below share its shape.
UPPER_WORD_SHARE = 0.5   # An upper-case word over a list is data only when most of the list is such words.
SAME_KIND_SHARE = 0.8    # A number or date cell is data-like when most cells below are numbers or dates too.


LAYOUT_ROWS = 50


def filled(row: list[str]) -> int:
    return sum(1 for cell in row if cell.strip())


def header_row(head: list[list[str]]) -> int:
    """Comment lines (`# ...`) first, then title rows: the header is the first row nearly as wide as
    the widest followed by a wide row — or a row with an empty first cell over a pandas index."""
    comments = 0
    while comments < len(head) and head[comments] and head[comments][0].lstrip().startswith("#"):
        comments += 1
    rest = head[comments:]
    if has_index_column(rest[:LAYOUT_ROWS]) or unnamed_first_column(rest[:LAYOUT_ROWS]):
        return comments
    widths = [filled(row) for row in rest]
    return comments + (find_header_row(widths) if max(widths, default=0) >= 2 else 0)


def find_header_row(widths: list[int]) -> int:
    """Index of the first row nearly as wide as the widest (>= 75 %) followed by a wide row (>= 50 %)."""
    width = max(widths, default=0)
    wide, next_wide = math.ceil(0.75 * width), math.ceil(0.5 * width)
    return next((i for i, w in enumerate(widths[:-1]) if w >= wide and widths[i + 1] >= next_wide), 0)


def _kind(cell: str) -> str:
    """'number', 'date', or the cell's shape: runs of lower case, upper case and digits collapsed
    (`WDR36` -> `A9`, `first_name` -> `a_a`), the rest kept."""
    if NUMBER.match(cell):
        return "number"
    if DATE.match(cell):
        return "date"
    return SHAPE_RUNS.sub(lambda m: "a" if m.group(1) else "A" if m.group(2) else "9", cell)[:20]


def _years_across(row: list[str]) -> bool:
    """Two or more increasing years across a row (`Category,2022,2023,2024`): column names."""
    years = [int(c) for c in (c.strip() for c in row) if re.fullmatch(r"(19|20)\d\d", c)]
    numbers = [c for c in row if NUMBER.match(c.strip())]
    return len(years) >= 2 and len(years) == len(numbers) and years == sorted(set(years))


def first_row_is_data(rows: list[list[str]]) -> bool:
    """True when the candidate header (rows[0]) looks like the rows below it: a number over
    numbers, a date over dates, and text shaped like the text below. Text over numbers is a header.
    With no number or date column to go by, only a single column of codes shaped like the codes
    below (`WDR36` over `TBL3`) is data: a word with lower case ("Name" over "Connecticut") is a
    header far more often, and an upper-case word ("GENE") too unless most cells below are such words."""
    if len(rows) < 3 or not rows[0] or unnamed_first_column(rows):
        return False  # Years over counts, under an empty corner cell, are a header.
    if _years_across(rows[0]):
        return False
    typed, text_shares = False, []
    for column, cell in enumerate(rows[0]):
        cell = cell.strip()
        below = [r[column].strip() for r in rows[1:] if column < len(r) and r[column].strip()]
        if not cell or not below:
            continue
        kinds = [_kind(b) for b in below]
        kind = _kind(cell)
        typed_below = sum(k in ("number", "date") for k in kinds) / len(kinds)
        share = kinds.count(kind) / len(kinds)
        if kind in ("number", "date"):
            if share < SAME_KIND_SHARE:
                return False
            typed = True
        elif typed_below >= SAME_KIND_SHARE or share < SAME_SHAPE_SHARE:
            return False
        else:
            text_shares.append((kind, share))
    if typed:
        return True
    if len(rows[0]) != 1 or not text_shares:
        return False
    kind, share = text_shares[0]
    return "a" not in kind and (kind != "A" or share >= UPPER_WORD_SHARE)


def unnamed_first_column(rows: list[list[str]]) -> bool:
    """True for a header whose only empty cell is the first, over rows as wide whose first cells
    are filled: row labels without a column name (`,2022,2023` over `Fraud,10,20`)."""
    if len(rows) < 2 or len(rows[0]) < 2 or rows[0][0].strip() or not all(c.strip() for c in rows[0][1:]):
        return False
    below = [r for r in rows[1:] if filled(r)]
    return bool(below) and sum(len(r) == len(rows[0]) and bool(r[0].strip()) for r in below) >= 0.8 * len(below)


def has_index_column(rows: list[list[str]]) -> bool:
    """True for a header whose first cell is empty over a first column of whole numbers: the
    index pandas writes with `to_csv()`/`to_excel()`, loaded back with index_col=0."""
    if len(rows) < 2 or not rows[0] or rows[0][0].strip() or len(rows[0]) < 2:
        return False
    firsts = [r[0].strip() for r in rows[1:] if filled(r)]
    return bool(firsts) and all(re.fullmatch(r"-?\d+", f) for f in firsts) and any(c.strip() for c in rows[0][1:])
