"""How numbers are written in a delimited file: ',' thousands (`"55,457"` beside `903`), or the
European way in ';'-separated exports (decimal commas `12,50`, '.' thousands `1.234`). The
options it returns are pandas' own (`thousands=`, `decimal=`), applied only where every value of
a column agrees: pandas would read `"1,2"` as 12 with thousands=','."""

from __future__ import annotations

import re

import pandas as pd

US_GROUPED = re.compile(r"^-?\d{1,3}(,\d{3})+(\.\d+)?$")
US_PLAIN = re.compile(r"^-?\d+(\.\d+)?$")
EU_DECIMAL = re.compile(r"^-?(\d{1,3}(\.\d{3})+|\d+),\d+$")
EU_GROUPED = re.compile(r"^-?\d{1,3}(\.\d{3})+(,\d+)?$")
EU_PLAIN = re.compile(r"^-?\d+$")
COMMA_NUMBER = re.compile(r"^-?\d+(,\d+)+(\.\d+)?$")
MOSTLY = 0.8
CHECKED_VALUES = 500
CHECKED_COLUMNS = 200  # Wide tables: the first columns decide (per-column checks cost ~1 ms each).


def _text_columns(frame: pd.DataFrame) -> list[list[str]]:
    """The non-empty cells of the first columns and rows, as stripped text (plain Python: a few
    hundred short strings per column are matched faster than pandas' per-call overhead)."""
    block = frame.iloc[:CHECKED_VALUES, :CHECKED_COLUMNS].to_numpy(dtype=object)
    columns = []
    for column in block.T:
        values = [v.strip() for v in column if isinstance(v, str) and v.strip()]
        if values:
            columns.append(values)
    return columns


def _column_is(values: list[str], allowed: tuple[re.Pattern, ...], marker: re.Pattern,
               share: float = 1.0) -> bool:
    """At least `share` of the values match one of the allowed patterns, and one the marker."""
    fits = sum(any(p.match(v) for p in allowed) for v in values)
    return fits >= share * len(values) and any(marker.match(v) for v in values)


def number_options(raw: pd.DataFrame, delimiter: str) -> dict:
    """pandas options for the numbers in `raw` (the table read as text)."""
    columns = _text_columns(raw)
    if delimiter != ",":
        european = (EU_DECIMAL, EU_GROUPED, EU_PLAIN)
        if any(_column_is(v, european, EU_DECIMAL) for v in columns):
            grouped = any(_column_is(v, european, EU_GROUPED) for v in columns)
            return {"decimal": ",", "thousands": "."} if grouped else {"decimal": ","}
    # A column of numbers, some grouped, may hold a few text cells (a repeated sub-header): they stay
    # text whatever thousands= says. A badly grouped number ("1,2") would become 12: never then.
    if any(_column_is(v, (US_GROUPED, US_PLAIN), US_GROUPED, MOSTLY) and not any(COMMA_NUMBER.match(x) and not US_GROUPED.match(x) for x in v)
           for v in columns):
        return {"thousands": ","}
    return {}
