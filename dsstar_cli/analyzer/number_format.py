"""How numbers are written in a delimited file, decided from every sampled value of every column,
whatever the delimiter: ',' thousands (`1,937,041`, `"55,457"` beside `903`), decimal commas
(`12,50`), '.' thousands with decimal commas (`1.234,5`), or pandas' default ('.' decimals).

One `pd.read_csv` call takes one `thousands=` and one `decimal=` for the whole file, and pandas
applies them blindly: with decimal=',' the thousands `3,512` become 3.512; with thousands=',' the
decimal `12,50` becomes 1250. So each column says which readings write all its numbers right
(a reading "fits" a column), the file gets the reading that fits the most columns, and when
columns disagree the ones it would read wrong are read as text (`dtype=`) and named in a note,
rather than given a loader that corrupts them. The rules, per column and over all its sampled values:
- digits grouped by a separator must come in groups of exactly three after a first group of one to
  three digits (not starting with 0): `1,937,041` and `3,512` can be thousands, `1,2` cannot;
- a value with two of the same separator (`1,937,041`, `1.234.567`) can only be thousands;
- ',' followed by three digits in every comma value (`3,512` beside `903`) means thousands: decimal
  commas are taken only from a column that has a value that cannot be thousands (`12,50`, `0,125`);
  a '.' with three digits after it (`1.250`) stays ambiguous and follows the other columns.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

MOSTLY = 0.8            # A column is numbers when this share of its distinct values are numbers written right.
CHECKED_COLUMNS = 200   # Wide tables: the first columns decide (the others are read as pandas reads them).
MAX_TEXT_COLUMNS = 8    # Past this many columns that disagree, no thousands=/decimal= at all: all are said.
EXPONENT = r"([eE][-+]?\d+)?"
NUMBER_LIKE = re.compile(rf"[-+]?[\d.,]*\d[\d.,]*{EXPONENT}")

# The readings, in the order preferred when several fit: pandas' default first, then ',' thousands.
DEFAULT, US, EU_DECIMAL, EU = 0, 1, 2, 3
OPTIONS = ({}, {"thousands": ","}, {"decimal": ","}, {"decimal": ",", "thousands": "."})
WRITTEN = (  # Every number of a column written right for the reading.
    re.compile(rf"[-+]?(\d+(\.\d+)?|\.\d+){EXPONENT}"),
    re.compile(rf"[-+]?((\d+|[1-9]\d{{0,2}}(,\d{{3}})+)(\.\d+)?|\.\d+){EXPONENT}"),
    re.compile(r"[-+]?\d+(,\d+)?"),
    re.compile(r"[-+]?(\d+|[1-9]\d{0,2}(\.\d{3})+)(,\d+)?"),
)
PARSED = (  # What pandas reads as a number under the reading, once the thousands character is removed.
    re.compile(rf"[-+]?(\d+(\.\d*)?|\.\d+){EXPONENT}"),
    re.compile(rf"[-+]?(\d+(\.\d*)?|\.\d+){EXPONENT}"),
    re.compile(rf"[-+]?(\d+(,\d*)?|,\d+){EXPONENT}"),
    re.compile(rf"[-+]?(\d+(,\d*)?|,\d+){EXPONENT}"),
)
SAID = ("'.' decimals", "',' thousands", "',' decimals", "'.' thousands and ',' decimals")
TO_NUMBER = ("pd.to_numeric(df[{c}])", "pd.to_numeric(df[{c}].str.replace(',', ''))",
             "pd.to_numeric(df[{c}].str.replace(',', '.'))",
             "pd.to_numeric(df[{c}].str.replace('.', '').str.replace(',', '.'))")


@dataclass
class Column:
    """What one column's sampled values allow. A column of numbers (`numeric`) names the readings
    that write all its numbers right (`fits`); a text column fits the readings that keep it text.
    `parses`: the readings under which pandas would read every value as a number. `values`: the
    column's distinct values, to show one in the shape `shape`."""

    name: object
    numeric: bool
    fits: set[int]
    parses: set[int]
    values: list = field(default_factory=list, repr=False)
    shape: str = ""

    @property
    def example(self) -> str:
        return next((v.strip() for v in self.values if _shape(v.strip()) == self.shape), self.shape)


@dataclass
class NumberFormat:
    """The options for the file's `pd.read_csv` call (thousands=, decimal=, dtype= for columns read
    as text) and, when columns disagree, the note that says so and how to convert them."""

    options: dict
    note: str | None = None


EVERY = frozenset(range(len(OPTIONS)))
DIGITS = str.maketrans("23456789", "11111111")  # 0 kept apart: a thousands group never starts with 0.
SEPARATED = re.compile(r"[.,]\d|\d[.,]")
JOIN = "\x1f"  # Joins a column's values into one string (C-speed translate and split).


def _shape(value: str) -> str:
    """The value with every digit 1-9 written 1: the rules below only count digits and look for 0."""
    return value.translate(DIGITS)


def _shapes(joined: str) -> dict[str, int]:
    """{shape: how many distinct values have it} of values joined by JOIN: a column of 20,000
    numbers has a few dozen shapes."""
    counts: dict[str, int] = {}
    for shape, n in Counter(_shape(joined).split(JOIN)).items():
        key = shape.strip()
        if key:
            counts[key] = counts.get(key, 0) + n
    return counts


def _parses(shapes: dict[str, int]) -> set[int]:
    """The readings under which pandas reads every value as a number."""
    if not all(NUMBER_LIKE.fullmatch(s) for s in shapes):
        return set()  # A text cell keeps the column text under any reading.
    parses = set()
    for reading in EVERY:
        thousands = OPTIONS[reading].get("thousands")
        if all(PARSED[reading].fullmatch(s.replace(thousands, "") if thousands else s) for s in shapes):
            parses.add(reading)
    return parses


def _column(name, values: list[str]) -> Column:
    """Reads the distinct values of one column."""
    joined = JOIN.join(values)
    if ("." not in joined and "," not in joined) or not SEPARATED.search(joined):
        return Column(name, False, set(EVERY), set())  # Text and whole numbers: read alike by any reading.
    shapes = _shapes(joined)
    separated = [s for s in shapes if NUMBER_LIKE.fullmatch(s) and ("." in s or "," in s)]
    if not separated:
        return Column(name, False, set(EVERY), set())
    parses = _parses(shapes)
    written = sum(n for s, n in shapes.items() if any(p.fullmatch(s) for p in WRITTEN))
    example = max(separated, key=len)
    if written < MOSTLY * sum(shapes.values()):  # Text with number-like cells (dates 01.02.2024, versions).
        return Column(name, False, set(EVERY) - parses, parses, values, example)
    fits = {r for r in EVERY if all(WRITTEN[r].fullmatch(s) for s in separated)}
    if {US, EU_DECIMAL} <= fits and any("," in s for s in separated):
        fits -= {EU_DECIMAL, EU}  # Every comma is followed by three digits: thousands.
    return Column(name, True, fits, parses, values, example)


def _columns(raw: pd.DataFrame) -> list[Column]:
    """Each of the first CHECKED_COLUMNS columns of `raw` (the table read as text), from all its
    distinct non-empty values."""
    columns = []
    names = raw.columns.tolist()  # Python values: header=None numbers the columns 0, 1, ...
    for position in range(min(len(names), CHECKED_COLUMNS)):
        values = raw.iloc[:, position].dropna().unique().tolist()  # dtype=str: all text
        if values:
            columns.append(_column(names[position], values))
    return columns


def _choose(columns: list[Column]) -> tuple[int, list[Column], list[Column]]:
    """(the reading for the file, the columns it would read as wrong numbers, the columns whose
    numbers it leaves as text): the reading that fits the most columns, then corrupts the fewest,
    pandas' default first on ties."""
    def wrong(reading: int) -> list[Column]:
        return [c for c in columns if reading not in c.fits and reading in c.parses]

    def fitted(reading: int) -> int:
        return sum(reading in c.fits for c in columns if c.numeric)

    best = max(range(len(OPTIONS)), key=lambda r: (fitted(r), -len(wrong(r)), -r))
    left = [c for c in columns if c.numeric and best not in c.fits and best not in c.parses]
    return best, wrong(best), left


def _names(columns: list[Column]) -> str:
    shown = ", ".join(repr(c.name) for c in columns[:5])
    return shown + (f" and {len(columns) - 5} more" if len(columns) > 5 else "")


def _note(reading: int, columns: list[Column], wrong: list[Column], left: list[Column], named: bool = True) -> str:
    """Which columns the reading does not fit, what the call does with them, how to convert one."""
    numeric = [c for c in wrong + left if c.numeric]
    said = []
    if numeric:
        own = "; ".join(f"{c.name!r} " + (f"uses {SAID[min(c.fits)]}" if c.fits else "mixes separators")
                        + f" (e.g. {c.example!r})" for c in numeric[:5])
        others = any(reading in c.fits for c in columns if c.numeric and c not in numeric)
        said.append(f"Number formats differ between columns: {own}"
                    + (f" and {len(numeric) - 5} more" if len(numeric) > 5 else "")
                    + (f"; the others use {SAID[reading]}" if others else "")
                    + ". One read_csv call takes one thousands= and one decimal=.")
    dates = [c for c in wrong if not c.numeric]
    if dates:
        said.append(("Column " if len(dates) == 1 else "Columns ") + _names(dates)
                    + (" holds" if len(dates) == 1 else " hold") + f" number-like text (e.g. {dates[0].example!r}) that "
                    f"{', '.join(f'{k}={v!r}' for k, v in OPTIONS[reading].items())} would turn into numbers.")
    if wrong or left:
        said.append(f"The call above reads {_names(wrong + left)} as text" + (" (dtype=)" if named else "")
                    + (", not as wrong numbers." if wrong else "."))
    convertible = next((c for c in numeric if c.fits), None)
    if convertible:
        said.append("Convert such a column with its own separators, e.g. "
                    + TO_NUMBER[min(convertible.fits)].format(c=repr(convertible.name)) + ".")
    return " ".join(said)


def number_format(raw: pd.DataFrame) -> NumberFormat:
    """The `pd.read_csv` options for the numbers in `raw` (the table read as text, dtype=str)."""
    columns = _columns(raw)
    reading, wrong, left = _choose(columns)
    if len(wrong + left) > MAX_TEXT_COLUMNS:  # Too many to name in the call: pandas' default corrupts none.
        reading, wrong, left = DEFAULT, [], [c for c in columns if c.numeric and DEFAULT not in c.fits]
        return NumberFormat({}, _note(reading, columns, wrong, left, named=False) if left else None)
    options = dict(OPTIONS[reading])
    if wrong or left:  # Named even when they would stay text: pandas' python engine converts cell by cell.
        options["dtype"] = {c.name: "str" for c in wrong + left}
    return NumberFormat(options, _note(reading, columns, wrong, left) if wrong or left else None)
