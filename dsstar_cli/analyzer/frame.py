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
CONSTANTS_CHARS = 1500    # Columns holding one value, named with it, up to this.
PROBE_ROWS = 16           # Rows compared first: a column that differs in them is not constant.
MIN_ROWS = 3              # Fewer rows than this: any column could look constant.


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


def _one_value(series: pd.Series) -> tuple[bool, object]:
    """(True, the value) when every non-empty cell holds the same value (or none has one)."""
    values = series.dropna()
    if values.empty:
        return True, None
    first = values.iloc[0]
    try:
        return bool((values == first).all()), first
    except (TypeError, ValueError):  # Cells pandas cannot compare (lists, dicts from JSON).
        return False, None


def constant_columns(frame: pd.DataFrame) -> list[tuple[int, object]]:
    """(position, value) of the columns holding one value in every row read (None: empty in every
    row). Only the columns whose few probe rows agree are checked whole, so a wide table costs a
    comparison of PROBE_ROWS rows, not a count of every column's values."""
    if len(frame) < MIN_ROWS:
        return []
    found = []
    for position in _probed(frame):
        one, value = _one_value(frame.iloc[:, position])
        if one:
            found.append((position, value))
    return found


def _probed(frame: pd.DataFrame) -> list[int]:
    """Positions of the columns whose PROBE_ROWS rows, spread through the frame, agree (compared
    at once: a loop over 10,000 columns would cost a second)."""
    probe = frame.iloc[sorted({round(i * (len(frame) - 1) / (PROBE_ROWS - 1)) for i in range(PROBE_ROWS)})]
    probe = probe.set_axis(range(len(frame.columns)), axis=1)  # Positions: names may repeat.
    try:
        first = probe.bfill().iloc[0]
        agree = (probe.eq(first, axis=1) | probe.isna()).all()
        return [int(p) for p in agree[agree].index]
    except (TypeError, ValueError):  # Cells pandas cannot compare at once (lists, dicts from JSON).
        return [p for p in range(len(frame.columns)) if _one_value(probe.iloc[:, p])[0]]


def _bounded(items: list[str], chars: int) -> str:
    shown, used = [], 0
    for item in items:
        if used + len(item) > chars:
            break
        shown.append(item)
        used += len(item) + 2
    return ", ".join(shown) + (f", ... and {len(items) - len(shown):,} more" if len(shown) < len(items) else "")


def _constants_line(frame: pd.DataFrame, constants: list[tuple[int, object]], rows_note: str) -> str:
    """One line naming each constant column with its value: a filter flag 'Y' in every row is what a
    script needs to know (a filter on it keeps every row), and costs a few words."""
    valued, empty = [], []
    for position, value in constants:
        name = _name(frame.columns[position])
        if value is None:
            empty.append(name)
            continue
        nulls = int(frame.iloc[:, position].isna().sum())
        valued.append(f"{name} = {_short(value)}" + (f" ({nulls:,} empty)" if nulls else ""))
    rows = f"all {len(frame):,} rows" + (" read" if rows_note else "")
    said = [f"Constant columns (one value in {rows}): {_bounded(valued, CONSTANTS_CHARS)}"] if valued else []
    if empty:
        said.append(f"{'e' if valued else 'E'}mpty in {rows}: {_bounded(empty, CONSTANTS_CHARS // 2)}")
    return "; ".join(said) + "."


def _wide_detailed(frame: pd.DataFrame, skip: set[int] = frozenset()) -> list:
    """The WIDE_DETAILED columns a wide table details: those holding a few values (2 to
    ALL_VALUES_UP_TO, what filters are made of) first, in table order, then the first others."""
    def few(position: int) -> bool:
        try:
            return position not in skip and 2 <= frame.iloc[:, position].nunique() <= ALL_VALUES_UP_TO
        except TypeError:  # Unhashable cells.
            return False
    positions = range(len(frame.columns))
    filters = list(itertools.islice((p for p in positions if few(p)), WIDE_DETAILED))
    chosen = set(filters) | set(skip)  # Counting stops at WIDE_DETAILED: a 10,000-column table is not scanned whole.
    return (filters + [p for p in positions if p not in chosen])[:WIDE_DETAILED]


def frame_parts(frame: pd.DataFrame, sample_rows: int, rows_note: str = "") -> list[Part]:
    """The description as ranked parts (budget.py): the columns' names are structure, their
    statistics detail, the first rows a sample. A wide table lists every name, then details
    WIDE_DETAILED columns, each a part of its own (as many as fit)."""
    width = len(frame.columns)
    plural = "" if width == 1 else "s"
    constants = constant_columns(frame) if width > 1 else []
    said = [Part(_constants_line(frame, constants, rows_note))] if constants else []  # Structure: always kept.
    if width <= DETAILED_COLUMNS:
        details = [f"- {_name(name)}: {describe_column(frame.iloc[:, i])}" for i, name in enumerate(frame.columns)]
        parts = [Part(f"{width} column{plural}{rows_note}:"), *said,
                 Part("\n".join(details), DETAIL, short=f"  names: {_all_names(frame)}")]
    else:
        chosen = _wide_detailed(frame, {p for p, _ in constants})
        parts = [Part(f"{width} columns{rows_note}: {_all_names(frame)}"), *said]
        parts += [Part(("In detail, the columns with few values first:\n" if i == 0 else "")
                       + f"- {_name(frame.columns[p])}: {describe_column(frame.iloc[:, p])}", DETAIL)
                  for i, p in enumerate(chosen)]
    if sample_rows and len(frame):
        with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 40):
            shown = min(sample_rows, len(frame))
            parts.append(Part((f"First {shown} rows:" if shown > 1 else "First row:") + "\n"
                              + frame.head(sample_rows).to_string(index=False), SAMPLE))
    return parts


def describe_frame(frame: pd.DataFrame, sample_rows: int, rows_note: str = "") -> str:
    """Column-by-column summary plus a few example rows. `rows_note` says if rows were sampled."""
    return "\n".join(part.text for part in frame_parts(frame, sample_rows, rows_note))
