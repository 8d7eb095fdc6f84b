"""Describe a pandas DataFrame compactly: shape, each column's type, range or values, examples."""

from __future__ import annotations

import itertools

import pandas as pd

from dsstar_cli.analyzer.budget import DETAIL, SAMPLE, Part

ALL_VALUES_UP_TO = 12     # A column with this few distinct values lists them all.
MAX_VALUE_CHARS = 60
DETAILED_COLUMNS = 30     # Tables up to this wide get every column in detail;
WIDE_DETAILED = 12        # wider ones every name, and this many in detail (few-valued first).
NAMES_CHARS = 4000        # A wide table's column names, listed in full up to this.


def _short(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def describe_column(series: pd.Series) -> str:
    non_null = series.dropna()
    nulls = len(series) - len(non_null)
    parts = [str(series.dtype)]
    if nulls:
        parts.append(f"{nulls} null")
    if non_null.empty:
        return f"{', '.join(parts)}; all null"
    if all(isinstance(v, list) for v in non_null.iloc[:LIST_CHECK]):
        return f"{', '.join(parts)}; {_list_column(non_null)}"
    try:
        distinct = non_null.unique()
    except TypeError:  # Unhashable cells (dicts from JSON).
        return f"{', '.join(parts)}; e.g. {_short(non_null.iloc[0])}"
    if pd.api.types.is_bool_dtype(series) or len(distinct) <= ALL_VALUES_UP_TO:
        counts = non_null.value_counts()
        shown = ", ".join(f"{_short(v)} ({n})" for v, n in counts.items())
        return f"{', '.join(parts)}; {len(distinct)} distinct: {shown}"
    if pd.api.types.is_numeric_dtype(series):
        return f"{', '.join(parts)}; min {non_null.min():g}, max {non_null.max():g}, mean {non_null.mean():g}; {len(distinct)} distinct"
    if pd.api.types.is_datetime64_any_dtype(series):
        return f"{', '.join(parts)}; from {non_null.min()} to {non_null.max()}"
    examples = ", ".join(_short(v) for v in distinct[:3])
    return f"{', '.join(parts)}; {len(distinct)} distinct; e.g. {examples}"


LIST_CHECK = 1000  # Cells looked at to call a column one of lists.


def _list_column(cells: pd.Series) -> str:
    """A column of lists (JSON arrays): how many are empty (an empty list is a convention to
    decide, often 'applies to all', like null), their lengths, and the values inside them with
    counts, which a filter matches against."""
    lists = [v for v in cells if isinstance(v, list)]
    empty = sum(1 for v in lists if not v)
    lengths = [len(v) for v in lists if v]
    text = f"lists; {empty:,} empty" + (f", {min(lengths)}-{max(lengths)} items in the others" if lengths else "")
    try:
        values = pd.Series([item for v in lists for item in dict.fromkeys(v)]).value_counts()
    except TypeError:  # Unhashable items (nested objects).
        return f"{text}; e.g. {_short(next((v for v in lists if v), []))}"
    if values.empty:
        return text
    if len(values) <= ALL_VALUES_UP_TO:
        shown = ", ".join(f"{_short(v)} ({n})" for v, n in values.items())
        return f"{text}; {len(values)} distinct items: {shown} (lists holding each)"
    examples = ", ".join(_short(v) for v in values.index[:5])
    return f"{text}; {len(values)} distinct items, most common: {examples}"


def _name(name) -> str:
    text = str(name)
    return repr(text) if text != text.strip() or ", " in text or not text else text


def _all_names(frame: pd.DataFrame) -> str:
    """Every column's name, within NAMES_CHARS: the structure a script needs even when no detail fits."""
    names, used = [], 0
    for name in frame.columns:
        item = _name(name)
        if used + len(item) > NAMES_CHARS:
            break
        names.append(item)
        used += len(item) + 2
    more = f", ... and {len(frame.columns) - len(names):,} more" if len(names) < len(frame.columns) else ""
    return ", ".join(names) + more


def _wide_detailed(frame: pd.DataFrame) -> list:
    """The WIDE_DETAILED columns a wide table details: those holding a few values (2 to
    ALL_VALUES_UP_TO, what filters are made of) first, in table order, then the first others."""
    def few(name) -> bool:
        try:
            return 2 <= frame[name].nunique() <= ALL_VALUES_UP_TO
        except TypeError:  # Unhashable cells.
            return False
    filters = list(itertools.islice((name for name in frame.columns if few(name)), WIDE_DETAILED))
    chosen = set(filters)  # Counting stops at WIDE_DETAILED: a 10,000-column table is not scanned whole.
    return (filters + [name for name in frame.columns if name not in chosen])[:WIDE_DETAILED]


def frame_parts(frame: pd.DataFrame, sample_rows: int, rows_note: str = "") -> list[Part]:
    """The description as ranked parts (budget.py): the columns' names are structure, their
    statistics detail, the first rows a sample. A wide table lists every name, then details
    WIDE_DETAILED columns, each a part of its own (as many as fit)."""
    width = len(frame.columns)
    plural = "" if width == 1 else "s"
    if width <= DETAILED_COLUMNS:
        details = [f"- {_name(name)}: {describe_column(frame[name])}" for name in frame.columns]
        parts = [Part(f"{width} column{plural}{rows_note}:"),
                 Part("\n".join(details), DETAIL, short=f"  names: {_all_names(frame)}")]
    else:
        chosen = _wide_detailed(frame)
        parts = [Part(f"{width} columns{rows_note}: {_all_names(frame)}")]
        parts += [Part(("In detail, the columns with few values first:\n" if i == 0 else "")
                       + f"- {_name(name)}: {describe_column(frame[name])}", DETAIL) for i, name in enumerate(chosen)]
    if sample_rows and len(frame):
        with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 40):
            shown = min(sample_rows, len(frame))
            parts.append(Part((f"First {shown} rows:" if shown > 1 else "First row:") + "\n"
                              + frame.head(sample_rows).to_string(index=False), SAMPLE))
    return parts


def describe_frame(frame: pd.DataFrame, sample_rows: int, rows_note: str = "") -> str:
    """Column-by-column summary plus a few example rows. `rows_note` says if rows were sampled."""
    return "\n".join(part.text for part in frame_parts(frame, sample_rows, rows_note))
