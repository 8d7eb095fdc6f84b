"""Describe a pandas DataFrame compactly: shape, each column's type, range or values, examples."""

from __future__ import annotations

import pandas as pd

ALL_VALUES_UP_TO = 12     # A column with this few distinct values lists them all.
MAX_VALUE_CHARS = 60
DETAILED_COLUMNS = 30     # Tables up to this wide get every column in detail;
WIDE_DETAILED = 12        # wider ones only their first columns, the rest as names and types.
OTHER_COLUMNS_CHARS = 1200


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
    try:
        distinct = non_null.unique()
    except TypeError:  # Unhashable cells (lists, dicts from JSON).
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


def _other_columns(frame: pd.DataFrame, detailed: int) -> str:
    """Wide tables: the remaining columns by name and type only, within a character budget."""
    rest = frame.columns[detailed:]
    shown, used = [], 0
    for name in rest:
        item = f"{name!s} ({frame[name].dtype})"
        if used + len(item) > OTHER_COLUMNS_CHARS:
            break
        shown.append(item)
        used += len(item) + 2
    more = f", ... and {len(rest) - len(shown):,} more" if len(shown) < len(rest) else ""
    return f"Other columns ({len(rest):,}): {', '.join(shown)}{more}"


def describe_frame(frame: pd.DataFrame, sample_rows: int, rows_note: str = "") -> str:
    """Column-by-column summary plus a few example rows. `rows_note` says if rows were sampled."""
    width = len(frame.columns)
    lines = [f"{width} column{'' if width == 1 else 's'}{rows_note}:"]
    detailed = DETAILED_COLUMNS if len(frame.columns) <= DETAILED_COLUMNS else WIDE_DETAILED
    for name in frame.columns[:detailed]:
        lines.append(f"- {name!s}: {describe_column(frame[name])}")
    if len(frame.columns) > detailed:
        lines.append(_other_columns(frame, detailed))
    if sample_rows and len(frame):
        with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_colwidth", 40):
            shown = min(sample_rows, len(frame))
            lines.append(f"First {shown} rows:" if shown > 1 else "First row:")
            lines.append(frame.head(sample_rows).to_string(index=False))
    return "\n".join(lines)
